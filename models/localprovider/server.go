package localprovider

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// API names the wire format a request spoke.
type API string

// The two wire formats the double serves.
const (
	Anthropic API = "anthropic" // POST /v1/messages, /v1/messages/count_tokens
	OpenAI    API = "openai"    // POST /v1/chat/completions
)

// Clock is the time the double reads: response timestamps, cache lifetimes
// and the slow-first-byte fault wait on it, so tests control time
// instead of sleeping.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type wallClock struct{}

func (wallClock) Now() time.Time                         { return time.Now() }
func (wallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Config configures a Server. The zero value is ready to use.
type Config struct {
	// Clock is the double's time; nil is the wall clock.
	Clock Clock
	// Tokens estimates the tokens of a piece of request or response text;
	// nil is EstimateTokens (⌈bytes/4⌉). It must be deterministic: usage
	// numbers and cache minimums are computed from it.
	Tokens func(b []byte) int
	// DisablePromptCache turns the prompt-cache emulation off: nothing is
	// cached and every prompt token is reported as uncached input (as
	// before the emulation existed). Markers are still validated.
	DisablePromptCache bool
	// CacheMinTokens overrides and extends DefaultCacheMinTokens: the
	// minimum cacheable prefix by model id prefix ("" for every model no
	// other entry matches).
	CacheMinTokens map[string]int
	// OmitCachedTokens leaves prompt_tokens_details out of OpenAI usage,
	// as vLLM (without --enable-prompt-tokens-details) and Ollama do, so
	// clients see no cached_tokens at all rather than 0. The cache still
	// works; it is only not reported.
	OmitCachedTokens bool
	// OnRequest, when set, is called with each request once it is decoded
	// and recorded, before the double answers. Tests use it to act at a
	// known point (cancel a client's context during a slow first byte)
	// without sleeping. It must not block for long: the answer waits.
	OnRequest func(Request)
	// Respond, when set, answers the requests nothing scripted answers,
	// before the offline model does: it gets the decoded request
	// (Request.Anthropic or Request.OpenAI, the conversation and the tools
	// offered) and returns the turn to answer with and true, or false to
	// leave the request to the offline model. It lets a graph that needs
	// more than the offline model's one-tool, one-report answers (a
	// multi-step tool loop) run on the double with no script, for any
	// number of runs. It must be deterministic and safe for concurrent
	// use; it is not called for /v1/messages/count_tokens.
	Respond func(Request) (Turn, bool)
}

// EstimateTokens is the default token estimate: ⌈len(b)/4⌉.
func EstimateTokens(b []byte) int { return (len(b) + 3) / 4 }

// Server is the provider double: an http.Handler speaking Anthropic Messages
// and OpenAI Chat Completions. Its methods are safe for concurrent use.
type Server struct {
	clock     Clock
	tokens    func([]byte) int
	onRequest func(Request)
	respond   func(Request) (Turn, bool)
	// cache is nil when the prompt cache is off.
	cache      *promptCache
	minTable   map[string]int
	omitCached bool

	mu       sync.Mutex
	scripts  map[string][]Turn // by key fingerprint; "" is the server-wide queue
	requests []Request
	seq      int
}

// New returns a Server configured by cfg.
func New(cfg Config) *Server {
	s := &Server{
		clock: cfg.Clock, tokens: cfg.Tokens, onRequest: cfg.OnRequest, respond: cfg.Respond,
		minTable: DefaultCacheMinTokens(), omitCached: cfg.OmitCachedTokens, scripts: map[string][]Turn{},
	}
	maps.Copy(s.minTable, cfg.CacheMinTokens)
	if !cfg.DisablePromptCache {
		s.cache = newPromptCache()
	}
	if s.clock == nil {
		s.clock = wallClock{}
	}
	if s.tokens == nil {
		s.tokens = EstimateTokens
	}
	return s
}

// NewTestServer starts a Server on a local httptest server. Point an
// Anthropic client at ts.URL and an OpenAI client at ts.URL+"/v1/"; close ts
// when done (t.Cleanup(ts.Close)).
func NewTestServer(cfg Config) (*Server, *httptest.Server) {
	s := New(cfg)
	return s, httptest.NewServer(s)
}

// Request is one request the double received, as a test inspects it.
type Request struct {
	// Seq numbers requests from 1 in the order they arrived.
	Seq  int
	API  API
	Path string
	// Header is the request's header with its credentials (x-api-key,
	// authorization) replaced by "[redacted]".
	Header http.Header
	// Key is a fingerprint of the API key ("key-" and 12 hex digits of its
	// SHA-256), never the key itself; Fingerprint(key) computes it.
	Key string
	// Body is the request body as sent.
	Body []byte
	// Time is the double's clock when the request arrived.
	Time time.Time
	// Exactly one of these is set once the body decoded.
	Anthropic *AnthropicRequest
	OpenAI    *OpenAIRequest
	// Count is set for /v1/messages/count_tokens.
	Count bool
}

// RetryCount is the client's X-Stainless-Retry-Count header: "0" on a first
// attempt, "1" on the first retry; empty when the client sent none.
func (r Request) RetryCount() string { return r.Header.Get("X-Stainless-Retry-Count") }

// Fingerprint is the form in which the double records and matches API keys.
func Fingerprint(key string) string {
	if key == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(key))
	return "key-" + hex.EncodeToString(sum[:6])
}

// Script appends turns to the server-wide queue: each request whose key has
// no turns of its own takes the next one. Once both queues are empty the
// offline model answers.
func (s *Server) Script(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts[""] = append(s.scripts[""], turns...)
}

// ScriptKey appends turns to the queue of one API key, so tests sharing a
// server (or parallel sibling calls) get their own answers.
func (s *Server) ScriptKey(key string, turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fp := Fingerprint(key)
	s.scripts[fp] = append(s.scripts[fp], turns...)
}

// Pending is the number of scripted turns not yet served, over all queues.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, q := range s.scripts {
		n += len(q)
	}
	return n
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// next takes the next scripted turn for a key: its own queue first, then the
// server-wide one. ok is false when both are empty.
func (s *Server) next(fp string) (Turn, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range []string{fp, ""} {
		if q := s.scripts[k]; len(q) > 0 {
			s.scripts[k] = q[1:]
			return q[0], true
		}
	}
	return Turn{}, false
}

// record stores a request and gives it its sequence number.
func (s *Server) record(r *Request) {
	s.mu.Lock()
	s.seq++
	r.Seq = s.seq
	r.Time = s.clock.Now()
	s.requests = append(s.requests, *r)
	s.mu.Unlock()
	if s.onRequest != nil {
		s.onRequest(*r)
	}
}

// ServeHTTP routes the providers' endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		s.serveAnthropic(w, r, false)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		s.serveAnthropic(w, r, true)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		s.serveOpenAI(w, r)
	case strings.HasPrefix(r.URL.Path, "/v1/chat/"):
		writeOpenAIError(w, s.requestID(), http.StatusNotFound, "invalid_request_error", fmt.Sprintf("Unknown request URL: %s %s.", r.Method, r.URL.Path))
	default:
		writeAnthropicError(w, s.requestID(), http.StatusNotFound, "not_found_error", fmt.Sprintf("Not found: %s %s", r.Method, r.URL.Path))
	}
}

// newRequest reads the body and records the request with redacted credentials.
func (s *Server) newRequest(r *http.Request, api API, key string) (Request, error) {
	body, err := io.ReadAll(r.Body)
	h := r.Header.Clone()
	for _, name := range []string{"X-Api-Key", "Authorization"} {
		if h.Get(name) != "" {
			h.Set(name, "[redacted]")
		}
	}
	req := Request{API: api, Path: r.URL.Path, Header: h, Key: Fingerprint(key), Body: body}
	return req, err
}

// requestID is a fresh, deterministic request id.
func (s *Server) requestID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("req_local_%06d", s.seq)
}

// bearer returns the token of an "Authorization: Bearer" header.
func bearer(r *http.Request) string {
	a := r.Header.Get("Authorization")
	if t, ok := strings.CutPrefix(a, "Bearer "); ok {
		return strings.TrimSpace(t)
	}
	return ""
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
