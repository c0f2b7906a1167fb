package embed_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/store/embed"
)

// embedder is store.Embedder, restated so this package's tests do not
// import package store; Go interfaces are structural, so satisfying this
// satisfies that.
type embedder interface {
	Name() string
	Dim() int
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

var (
	_ embedder = (*embed.Lexical)(nil)
	_ embedder = (*embed.GloVe)(nil)
	_ embedder = (*embed.OpenAI)(nil)
	_ embedder = (*embed.Ollama)(nil)
)

// recorded is one request the fake server saw.
type recorded struct {
	Path          string
	Authorization string
	ContentType   string
	Body          map[string]any
	Input         []string
}

// fakeServer is an httptest server standing in for an embedding API. It
// records every request and answers with respond.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recorded
}

func newFakeServer(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, input []string)) *fakeServer {
	t.Helper()
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		rec := recorded{Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type")}
		var input struct {
			Input []string `json:"input"`
		}
		if err := json.Unmarshal(raw, &rec.Body); err != nil || json.Unmarshal(raw, &input) != nil {
			http.Error(w, "fake server: request is not the expected JSON: "+string(raw), http.StatusBadRequest)
			return
		}
		rec.Input = input.Input
		f.mu.Lock()
		f.requests = append(f.requests, rec)
		f.mu.Unlock()
		respond(w, r, input.Input)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) seen() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.requests...)
}

// vectorFor derives a distinct, recognisable vector from a text, so tests
// can check each result landed at its text's position.
func vectorFor(text string, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(len(text)*100 + i)
	}
	if len(text) > 0 {
		v[0] = float32(text[len(text)-1])
	}
	return v
}

// protocol abstracts what differs between the two HTTP embedders, so the
// behaviour they share is tested once, for both.
type protocol struct {
	name string
	path string
	// build makes the embedder for a server URL.
	build func(baseURL string, dim, batch int, timeout time.Duration) (embedder, error)
	// body encodes vectors as the server would answer them.
	body func(vecs [][]float32) any
}

var protocols = []protocol{
	{
		name: "openai",
		path: "/v1/embeddings",
		build: func(baseURL string, dim, batch int, timeout time.Duration) (embedder, error) {
			return embed.NewOpenAI(embed.OpenAIConfig{BaseURL: baseURL, Model: "m", Dim: dim, BatchSize: batch, Timeout: timeout})
		},
		body: func(vecs [][]float32) any {
			data := make([]map[string]any, len(vecs))
			for i, v := range vecs {
				data[i] = map[string]any{"object": "embedding", "index": i, "embedding": v}
			}
			return map[string]any{"object": "list", "model": "m", "data": data}
		},
	},
	{
		name: "ollama",
		path: "/api/embed",
		build: func(baseURL string, dim, batch int, timeout time.Duration) (embedder, error) {
			return embed.NewOllama(embed.OllamaConfig{BaseURL: baseURL, Model: "m", Dim: dim, BatchSize: batch, Timeout: timeout})
		},
		body: func(vecs [][]float32) any {
			return map[string]any{"model": "m", "embeddings": vecs}
		},
	},
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func TestHTTPEmbeddersSuccessAndBatching(t *testing.T) {
	t.Parallel()
	texts := []string{"alpha", "bravo", "charlie", "delta", "echo"}
	cases := []struct {
		batch     int
		wantSizes []int
	}{
		{batch: 0, wantSizes: []int{5}}, // default batch size
		{batch: 5, wantSizes: []int{5}},
		{batch: 2, wantSizes: []int{2, 2, 1}},
		{batch: 1, wantSizes: []int{1, 1, 1, 1, 1}},
	}
	for _, p := range protocols {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/batch=%d", p.name, tc.batch), func(t *testing.T) {
				t.Parallel()
				const dim = 4
				srv := newFakeServer(t, func(w http.ResponseWriter, _ *http.Request, input []string) {
					vecs := make([][]float32, len(input))
					for i, s := range input {
						vecs[i] = vectorFor(s, dim)
					}
					writeJSON(w, p.body(vecs))
				})
				e, err := p.build(srv.URL, dim, tc.batch, 0)
				if err != nil {
					t.Fatal(err)
				}
				got, err := e.Embed(t.Context(), texts)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(texts) {
					t.Fatalf("got %d vectors for %d texts", len(got), len(texts))
				}
				for i, s := range texts {
					if fmt.Sprint(got[i]) != fmt.Sprint(vectorFor(s, dim)) {
						t.Errorf("vector %d = %v, want the one for %q: %v", i, got[i], s, vectorFor(s, dim))
					}
				}
				reqs := srv.seen()
				var sizes []int
				var sent []string
				for _, r := range reqs {
					sizes = append(sizes, len(r.Input))
					sent = append(sent, r.Input...)
					if r.Path != p.path || r.ContentType != "application/json" || r.Body["model"] != "m" {
						t.Errorf("request path %q, content type %q, model %v; want %q, application/json, m", r.Path, r.ContentType, r.Body["model"], p.path)
					}
				}
				if fmt.Sprint(sizes) != fmt.Sprint(tc.wantSizes) || fmt.Sprint(sent) != fmt.Sprint(texts) {
					t.Errorf("requests carried %v (sizes %v), want %v in batches of %v", sent, sizes, texts, tc.wantSizes)
				}
			})
		}
	}
}

func TestHTTPEmbeddersEmptyInputSendsNothing(t *testing.T) {
	t.Parallel()
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, func(w http.ResponseWriter, _ *http.Request, _ []string) {
				writeJSON(w, p.body(nil))
			})
			e, err := p.build(srv.URL, 3, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.Embed(t.Context(), nil)
			if err != nil || len(got) != 0 {
				t.Fatalf("Embed(nil) = %v, %v; want no vectors, no error", got, err)
			}
			if n := len(srv.seen()); n != 0 {
				t.Errorf("sent %d requests for no texts", n)
			}
		})
	}
}

func TestHTTPEmbeddersFailures(t *testing.T) {
	t.Parallel()
	longBody := strings.Repeat("quota exceeded; ", 200)
	cases := []struct {
		name    string
		respond func(p protocol) func(w http.ResponseWriter, r *http.Request, input []string)
		wantIs  error
		wantMsg string
	}{
		{
			name: "error status with long body",
			respond: func(protocol) func(http.ResponseWriter, *http.Request, []string) {
				return func(w http.ResponseWriter, _ *http.Request, _ []string) {
					http.Error(w, longBody, http.StatusTooManyRequests)
				}
			},
			wantIs:  embed.ErrHTTPStatus,
			wantMsg: "429 Too Many Requests: quota exceeded",
		},
		{
			name: "malformed JSON",
			respond: func(protocol) func(http.ResponseWriter, *http.Request, []string) {
				return func(w http.ResponseWriter, _ *http.Request, _ []string) {
					io.WriteString(w, `{"data": [{"embedding": [1, 2,`)
				}
			},
			wantIs:  embed.ErrMalformedResponse,
			wantMsg: "malformed",
		},
		{
			name: "HTML instead of JSON",
			respond: func(protocol) func(http.ResponseWriter, *http.Request, []string) {
				return func(w http.ResponseWriter, _ *http.Request, _ []string) {
					io.WriteString(w, `<html>proxy login</html>`)
				}
			},
			wantIs:  embed.ErrMalformedResponse,
			wantMsg: "<html>proxy login",
		},
		{
			name: "too few vectors",
			respond: func(p protocol) func(http.ResponseWriter, *http.Request, []string) {
				return func(w http.ResponseWriter, _ *http.Request, input []string) {
					writeJSON(w, p.body([][]float32{{1, 2, 3}}))
				}
			},
			wantIs:  embed.ErrMalformedResponse,
			wantMsg: "sent 2 texts, got 1 embeddings",
		},
		{
			name: "wrong dimension",
			respond: func(p protocol) func(http.ResponseWriter, *http.Request, []string) {
				return func(w http.ResponseWriter, _ *http.Request, input []string) {
					writeJSON(w, p.body([][]float32{{1, 2, 3}, {1, 2, 3, 4}}))
				}
			},
			wantIs:  embed.ErrDimensionMismatch,
			wantMsg: "returned 4 values for text 1, but Dim is configured as 3",
		},
	}
	for _, p := range protocols {
		for _, tc := range cases {
			t.Run(p.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				srv := newFakeServer(t, tc.respond(p))
				e, err := p.build(srv.URL, 3, 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				got, err := e.Embed(t.Context(), []string{"one", "two"})
				if !errors.Is(err, tc.wantIs) {
					t.Fatalf("Embed = %v, %v; want an error wrapping %v", got, err, tc.wantIs)
				}
				if !strings.Contains(err.Error(), tc.wantMsg) {
					t.Errorf("error %q does not say %q", err, tc.wantMsg)
				}
				if len(err.Error()) > 1000 {
					t.Errorf("error is %d bytes long; the body excerpt must be bounded", len(err.Error()))
				}
			})
		}
	}
}

func TestStatusErrorDetails(t *testing.T) {
	t.Parallel()
	cases := []struct {
		code      int
		body      string
		retryable bool
	}{
		{http.StatusUnauthorized, `{"error":{"message":"Incorrect API key provided"}}`, false},
		{http.StatusBadRequest, `{"error":"input too long"}`, false},
		{http.StatusTooManyRequests, "slow down", true},
		{http.StatusBadGateway, "upstream down", true},
		{http.StatusInternalServerError, strings.Repeat("é", 1000), true},
	}
	for _, p := range protocols {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/%d", p.name, tc.code), func(t *testing.T) {
				t.Parallel()
				srv := newFakeServer(t, func(w http.ResponseWriter, _ *http.Request, _ []string) {
					w.WriteHeader(tc.code)
					io.WriteString(w, tc.body)
				})
				e, err := p.build(srv.URL, 3, 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				_, err = e.Embed(t.Context(), []string{"x"})
				var se *embed.StatusError
				if !errors.As(err, &se) {
					t.Fatalf("error %v is not a *StatusError", err)
				}
				if se.StatusCode != tc.code || se.Retryable() != tc.retryable {
					t.Errorf("StatusCode %d, Retryable %v; want %d, %v", se.StatusCode, se.Retryable(), tc.code, tc.retryable)
				}
				if se.URL != srv.URL+p.path {
					t.Errorf("URL %q, want %q", se.URL, srv.URL+p.path)
				}
				want := tc.body
				if len(want) > 512 {
					if len(se.Body) > 512+len("…") || !strings.HasSuffix(se.Body, "…") || !strings.HasPrefix(want, strings.TrimSuffix(se.Body, "…")) {
						t.Errorf("Body %q is not a bounded, marked prefix of the real body", se.Body)
					}
				} else if se.Body != want {
					t.Errorf("Body %q, want %q", se.Body, want)
				}
			})
		}
	}
}

// blockingServer answers nothing until the client gives up.
func blockingServer(t *testing.T) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: unblocks handlers before Close waits for them
	return srv
}

func TestHTTPEmbeddersTimeout(t *testing.T) {
	t.Parallel()
	for _, p := range protocols {
		t.Run(p.name+"/config timeout", func(t *testing.T) {
			t.Parallel()
			srv := blockingServer(t)
			e, err := p.build(srv.URL, 3, 0, 50*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Embed(t.Context(), []string{"x"})
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no complete answer within 50ms") {
				t.Fatalf("Embed error = %v; want the configured timeout named and context.DeadlineExceeded", err)
			}
		})
		t.Run(p.name+"/caller context", func(t *testing.T) {
			t.Parallel()
			srv := blockingServer(t)
			e, err := p.build(srv.URL, 3, 0, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			_, err = e.Embed(ctx, []string{"x"})
			if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "within") {
				t.Fatalf("Embed error = %v; want the caller's deadline, not the embedder's timeout", err)
			}
		})
	}
}

func TestHTTPEmbedderConfigErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		baseURL string
		dim     int
		batch   int
		timeout time.Duration
		wantMsg string
	}{
		{"zero dim", "http://localhost:1", 0, 0, 0, "Dim must be"},
		{"negative dim", "http://localhost:1", -5, 0, 0, "Dim must be"},
		{"negative batch", "http://localhost:1", 3, -1, 0, "BatchSize must be"},
		{"negative timeout", "http://localhost:1", 3, 0, -time.Second, "Timeout must be"},
		{"no scheme", "localhost:11434", 3, 0, 0, "is not an http(s) URL"},
		{"wrong scheme", "ftp://example.com", 3, 0, 0, "is not an http(s) URL"},
		{"no host", "http://", 3, 0, 0, "is not an http(s) URL"},
		{"query", "http://example.com/?x=1", 3, 0, 0, "must not have a query"},
	}
	for _, p := range protocols {
		for _, tc := range cases {
			t.Run(p.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				e, err := p.build(tc.baseURL, tc.dim, tc.batch, tc.timeout)
				if !errors.Is(err, embed.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("build = %v, %v; want ErrInvalidConfig saying %q", e, err, tc.wantMsg)
				}
			})
		}
	}
	if _, err := embed.NewOpenAI(embed.OpenAIConfig{Dim: 3}); !errors.Is(err, embed.ErrInvalidConfig) || !strings.Contains(err.Error(), "Model is required") {
		t.Errorf("NewOpenAI without a model = %v, want ErrInvalidConfig saying Model is required", err)
	}
	if _, err := embed.NewOllama(embed.OllamaConfig{Dim: 3}); !errors.Is(err, embed.ErrInvalidConfig) || !strings.Contains(err.Error(), "Model is required") {
		t.Errorf("NewOllama without a model = %v, want ErrInvalidConfig saying Model is required", err)
	}
}

func TestHTTPEmbedderNames(t *testing.T) {
	t.Parallel()
	o, err := embed.NewOpenAI(embed.OpenAIConfig{Model: "text-embedding-3-small", Dim: 1536})
	if err != nil {
		t.Fatal(err)
	}
	l, err := embed.NewOllama(embed.OllamaConfig{Model: "nomic-embed-text", Dim: 768})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		e    embedder
		name string
		dim  int
	}{{o, "openai:text-embedding-3-small", 1536}, {l, "ollama:nomic-embed-text", 768}} {
		if c.e.Name() != c.name || c.e.Dim() != c.dim {
			t.Errorf("Name, Dim = %q, %d; want %q, %d", c.e.Name(), c.e.Dim(), c.name, c.dim)
		}
	}
}
