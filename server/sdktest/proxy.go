// Package sdktest drives the Agent Server API with the official JS SDK
// (@langchain/langgraph-sdk, pinned in js/package.json): its test builds
// cmd/studio, starts it on Postgres and on the in-memory backends, each
// behind a recording Proxy that checks the API's wire rules on every
// exchange, and runs the scenarios in js/*.test.mjs with node's test
// runner against the proxy.
package sdktest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// DropHeader asks the proxy to cut the client's TCP connection in the
// middle of a server-sent-event stream: its value is "<token>:<n>", and the
// first streaming response of a request carrying a token the proxy has not
// seen is cut after n events (heartbeat comments do not count). Later
// requests with the same token pass untouched, so an SDK that resends its
// headers when it reconnects is cut once, not on every attempt. The header
// is not forwarded to the server.
const DropHeader = "X-Sdktest-Drop"

// DropsPath is the proxy's own route (never forwarded) that answers the
// tokens whose streams it has cut, as {"cut": ["token", ...]}, so a
// scenario can tell a reconnect really happened.
const DropsPath = "/__sdktest/drops"

// Violation is an exchange that broke a wire rule.
type Violation struct {
	Rule     string
	Exchange Exchange
}

func (v Violation) String() string {
	return fmt.Sprintf("%s\n%s", v.Rule, v.Exchange)
}

// Exchange is one request and its response as the proxy saw them, with
// bodies cut to a few KiB.
type Exchange struct {
	Method, URL    string
	RequestHeader  http.Header
	RequestBody    string
	Status         int
	ResponseHeader http.Header
	ResponseBody   string
}

func (e Exchange) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  > %s %s\n", e.Method, e.URL)
	for _, k := range []string{"Content-Type", "Last-Event-Id", "Accept"} {
		if v := e.RequestHeader.Get(k); v != "" {
			fmt.Fprintf(&b, "  > %s: %s\n", k, v)
		}
	}
	if e.RequestBody != "" {
		fmt.Fprintf(&b, "  > %s\n", e.RequestBody)
	}
	fmt.Fprintf(&b, "  < %d\n", e.Status)
	for _, k := range []string{"Content-Type", "Content-Location", "Location"} {
		if v := e.ResponseHeader.Get(k); v != "" {
			fmt.Fprintf(&b, "  < %s: %s\n", k, v)
		}
	}
	if e.ResponseBody != "" {
		fmt.Fprintf(&b, "  < %s\n", e.ResponseBody)
	}
	return b.String()
}

// Proxy is a recording reverse proxy in front of the API. It checks every
// exchange against the wire rules the SDK depends on (see check) and can
// cut a stream's connection on request (DropHeader).
type Proxy struct {
	rp *httputil.ReverseProxy

	mu         sync.Mutex
	exchanges  int
	violations []Violation
	dropped    map[string]bool
	cut        []string
}

// NewProxy proxies to target (http://host:port).
func NewProxy(target *url.URL) *Proxy {
	p := &Proxy{dropped: map[string]bool{}}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
			r.Out.Header.Del(DropHeader)
		},
		// Server-sent events must reach the SDK as they are written.
		FlushInterval: -1,
		ModifyResponse: func(res *http.Response) error {
			res.Body = p.watch(res)
			return nil
		},
		// A cut stream is reported through Drops, not the log.
		ErrorLog: log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			// The server did not answer: the scenario fails on the 502,
			// and the test reports the server's log.
			http.Error(w, "sdktest proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	return p
}

type exchangeKey struct{}

func contextWith(ctx context.Context, w *watched) context.Context {
	return context.WithValue(ctx, exchangeKey{}, w)
}

func exchangeFrom(ctx context.Context) *watched {
	w, _ := ctx.Value(exchangeKey{}).(*watched)
	return w
}

// ServeHTTP records the request and forwards it.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == DropsPath {
		p.mu.Lock()
		cut := append([]string{}, p.cut...)
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string][]string{"cut": cut})
		return
	}
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "sdktest proxy: read the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	ex := &watched{p: p, ex: Exchange{Method: r.Method, URL: r.URL.RequestURI(), RequestHeader: r.Header.Clone(), RequestBody: cut(body)}}
	if v := r.Header.Get(DropHeader); v != "" {
		token, n, ok := strings.Cut(v, ":")
		after, err := strconv.Atoi(n)
		if !ok || err != nil || after < 0 {
			http.Error(w, "sdktest proxy: "+DropHeader+" wants <token>:<events>, got "+v, http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		if !p.dropped[token] {
			p.dropped[token] = true
			ex.dropAfter, ex.token = after, token
		}
		p.mu.Unlock()
	}
	p.mu.Lock()
	p.exchanges++
	p.mu.Unlock()
	r = r.WithContext(contextWith(r.Context(), ex))
	p.rp.ServeHTTP(w, r)
}

// Violations returns the broken rules seen so far.
func (p *Proxy) Violations() []Violation {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Violation(nil), p.violations...)
}

// Exchanges counts the requests the proxy forwarded.
func (p *Proxy) Exchanges() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exchanges
}

// Drops counts the connections the proxy cut on request.
func (p *Proxy) Drops() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.cut)
}

func (p *Proxy) violate(rule string, ex Exchange) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.violations = append(p.violations, Violation{rule, ex})
}

// runCreate matches the routes that create a run (background, stream,
// wait; on a thread or stateless): their responses carry the run's
// Content-Location.
var runCreate = regexp.MustCompile(`^(/threads/[^/]+)?/runs(/stream|/wait)?$`)

// runsRoute matches every POST route under runs (create, batch, cancel):
// none may answer 5xx, since the SDK retries a 5xx and would create the
// run again.
var runsRoute = regexp.MustCompile(`^(/threads/[^/]+)?/runs(/.*)?$`)

var contentLocation = regexp.MustCompile(`^(/threads/[0-9a-fA-F-]{36})?/runs/[0-9a-fA-F-]{36}$`)

// watched follows one exchange's response body as the reverse proxy copies
// it to the client, checks it when it ends, and cuts it when asked.
type watched struct {
	p         *Proxy
	ex        Exchange
	dropAfter int    // events before the cut; 0: never cut
	token     string // the drop header's token
	res       *http.Response
	body      io.ReadCloser
	buf       bytes.Buffer // the body's first maxChecked bytes
	sse, json bool         // the response's content type
	sseState  sseScanner
	cutErr    error
	dropArmed bool
	// firstChecked and ended make each check run once.
	firstChecked, ended bool
}

var errDropped = errors.New("sdktest proxy: connection dropped on request")

func (p *Proxy) watch(res *http.Response) io.ReadCloser {
	w := exchangeFrom(res.Request.Context())
	if w == nil {
		return res.Body
	}
	w.res = res
	w.body = res.Body
	w.ex.Status = res.StatusCode
	w.ex.ResponseHeader = res.Header.Clone()
	mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	w.sse = mt == "text/event-stream"
	w.json = mt == "application/json"
	w.dropArmed = w.sse && w.ex.RequestHeader.Get(DropHeader) != "" && w.dropAfter > 0
	w.checkHead()
	return w
}

func (w *watched) Read(b []byte) (int, error) {
	if w.cutErr != nil {
		return 0, w.cutErr
	}
	n, err := w.body.Read(b)
	if n > 0 {
		keep := n
		if w.sse {
			keep = w.sseState.feed(b[:n], w.dropAfterOrZero())
		}
		if w.buf.Len() < maxChecked {
			w.buf.Write(b[:min(keep, maxChecked-w.buf.Len())])
		}
		if w.sse && w.sseState.first != "" {
			w.checkFirstEvent()
		}
		// The n-th event may end exactly at the end of this read (the
		// server flushed it last): the cut comes then too.
		if keep < n || w.dropArmed && w.sseState.events >= w.dropAfter {
			// The n-th event ended inside this read: hand over its
			// bytes, then fail the copy, which makes the server under
			// the reverse proxy abort the client's connection without
			// ending the chunked body, as a dropped TCP connection looks
			// to the SDK.
			w.cutErr = errDropped
			w.p.mu.Lock()
			w.p.cut = append(w.p.cut, w.token)
			w.p.mu.Unlock()
			return keep, nil
		}
	}
	if errors.Is(err, io.EOF) {
		w.checkEnd()
	}
	return n, err
}

func (w *watched) dropAfterOrZero() int {
	if w.dropArmed {
		return w.dropAfter
	}
	return 0
}

func (w *watched) Close() error {
	if w.cutErr == nil {
		w.checkEnd()
	}
	return w.body.Close()
}

// maxRecorded caps a body in a report; maxChecked, the part of a response
// body kept to check it is JSON.
const (
	maxRecorded = 4 << 10
	maxChecked  = 4 << 20
)

func cut(b []byte) string {
	if len(b) > maxRecorded {
		return string(b[:maxRecorded]) + "…"
	}
	return string(b)
}

// checkHead checks what the status and headers alone decide.
func (w *watched) checkHead() {
	path := w.res.Request.URL.Path
	code := w.res.StatusCode
	post := w.ex.Method == http.MethodPost
	switch {
	case code >= 500 && post && runsRoute.MatchString(path):
		w.fail(fmt.Sprintf("a POST under /runs answered %d: the SDK retries it and would duplicate the run", code))
	case code >= 500:
		w.fail(fmt.Sprintf("answered %d: the API never answers 5xx for a client's request", code))
	}
	if post && runCreate.MatchString(path) && code >= 200 && code < 300 {
		loc := w.res.Header.Get("Content-Location")
		thread, _, _ := strings.Cut(strings.TrimPrefix(path, "/threads/"), "/")
		switch {
		case !contentLocation.MatchString(loc):
			w.fail(fmt.Sprintf("run create/stream/wait lacks Content-Location: /threads/{thread_id}/runs/{run_id} (or /runs/{run_id}); got %q", loc))
		case strings.HasPrefix(path, "/threads/") && !strings.HasPrefix(loc, "/threads/"+thread+"/runs/"):
			w.fail(fmt.Sprintf("Content-Location %q is not under the thread the run was created on", loc))
		}
	}
	if code == http.StatusOK {
		if !w.json && !w.sse {
			w.fail(fmt.Sprintf("a 200 answered %q: the SDK parses every 200 as JSON (or a stream as text/event-stream)", w.res.Header.Get("Content-Type")))
		}
	}
}

// checkFirstEvent checks a stream opens with metadata, once. A reconnect
// (Last-Event-ID other than -1) replays after the given event, so it opens
// with whatever came next.
func (w *watched) checkFirstEvent() {
	if w.firstChecked || w.ex.Status != http.StatusOK {
		return
	}
	w.firstChecked = true
	if id := w.ex.RequestHeader.Get("Last-Event-ID"); id != "" && id != "-1" {
		return
	}
	if w.sseState.first != "metadata" {
		w.failBody(fmt.Sprintf("the stream's first event is %q, want metadata", w.sseState.first))
	}
}

// checkEnd checks the whole body, once, when it ends.
func (w *watched) checkEnd() {
	if w.ended {
		return
	}
	w.ended = true
	if w.ex.Status != http.StatusOK || !w.json && !w.sse {
		return // checkHead reported a 200 that is neither
	}
	if w.sse {
		w.checkFirstEvent()
		return
	}
	if w.buf.Len() >= maxChecked {
		return // too long to hold: its start was kept, not all of it
	}
	// runs.wait and join may write keep-alive newlines before the JSON;
	// leading whitespace is valid JSON.
	if !json.Valid(w.buf.Bytes()) {
		w.failBody("a 200 without a JSON body: the SDK calls response.json() on it")
	}
}

func (w *watched) fail(rule string) {
	ex := w.ex
	w.p.violate(rule, ex)
}

func (w *watched) failBody(rule string) {
	ex := w.ex
	ex.ResponseBody = cut(w.buf.Bytes())
	w.p.violate(rule, ex)
}

// sseScanner follows the event stream's lines: it remembers the first
// event's name and counts complete events (a block with an event or data
// field, ended by a blank line; comment-only blocks such as heartbeats do
// not count).
type sseScanner struct {
	line   []byte
	name   string
	fields bool
	events int
	first  string
}

// feed scans b and returns how many of its bytes to pass on: all of them,
// or, when cutAfter > 0, those up to the end of event number cutAfter.
func (s *sseScanner) feed(b []byte, cutAfter int) int {
	for i, c := range b {
		if c != '\n' {
			s.line = append(s.line, c)
			continue
		}
		line := strings.TrimSuffix(string(s.line), "\r")
		s.line = s.line[:0]
		switch {
		case line == "":
			if s.fields {
				s.events++
				if s.first == "" {
					s.first = s.name
					if s.first == "" {
						s.first = "message"
					}
				}
				if cutAfter > 0 && s.events == cutAfter {
					return i + 1
				}
			}
			s.name, s.fields = "", false
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			s.name, s.fields = strings.TrimSpace(strings.TrimPrefix(line, "event:")), true
		case strings.HasPrefix(line, "data:"), strings.HasPrefix(line, "id:"):
			s.fields = true
		}
	}
	return len(b)
}
