package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type pingerFunc func(context.Context) error

func (f pingerFunc) Ping(ctx context.Context) error { return f(ctx) }

func TestHealthNamesBackends(t *testing.T) {
	t.Parallel()
	h := Health{Backends: Backends{Checkpoints: "postgres", Store: "postgres", Cache: "memory"}, DB: pingerFunc(func(context.Context) error { return nil })}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var got healthResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := Backends{Checkpoints: "postgres", Store: "postgres", Cache: "memory"}
	if got.Status != "ok" || got.Backends == nil || *got.Backends != want {
		t.Fatalf("body = %s, want ok with %+v", rec.Body, want)
	}
}

// With a token set, a health check without it (a load balancer's) gets
// up or down and nothing more; with the token, the details.
func TestHealthBehindTheTokenAnswersUpOrDown(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token"
	var down error
	h := RequireToken(token, Health{Backends: Backends{Checkpoints: "postgres", Store: "postgres", Cache: "postgres"},
		DB: pingerFunc(func(context.Context) error { return down })})
	get := func(auth bool) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		if auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := get(false); rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != `{"status":"ok"}` {
		t.Fatalf("anonymous check = %d %s, want 200 with the status alone", rec.Code, rec.Body)
	}
	if rec := get(true); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"backends"`) {
		t.Fatalf("check with the token = %d %s, want the backends", rec.Code, rec.Body)
	}
	down = errors.New("dial tcp 10.0.0.7:5432: connection refused")
	if rec := get(false); rec.Code != http.StatusServiceUnavailable || strings.TrimSpace(rec.Body.String()) != `{"status":"unavailable"}` {
		t.Fatalf("anonymous check, database down = %d %s, want 503 with the status alone", rec.Code, rec.Body)
	}
	if rec := get(true); rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "connection refused") {
		t.Fatalf("check with the token, database down = %d %s, want the reason", rec.Code, rec.Body)
	}
	// Only /healthz is open: its neighbours still want the token.
	for _, path := range []string{"/healthz/x", "/healthzz", "/graphs"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("GET %s without the token = %d, want 401", path, rec.Code)
		}
	}
}

func TestHealthReportsUnreachableDatabase(t *testing.T) {
	t.Parallel()
	h := Health{Backends: Backends{Checkpoints: "postgres"}, DB: pingerFunc(func(context.Context) error { return errors.New("connection refused") })}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status = %d, want 503", rec.Code)
	}
	if !strings.Contains(rec.Body.String(), "connection refused") {
		t.Fatalf("body %q does not say why", rec.Body.String())
	}
}

func TestIndexShowsBackendsAndMemoryBanner(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		backend    string
		wantBanner bool
	}{{"memory", true}, {"postgres", false}} {
		rec := httptest.NewRecorder()
		Index{Backends: Backends{Checkpoints: tc.backend, Store: tc.backend, Cache: tc.backend}}.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		body := rec.Body.String()
		if rec.Code != http.StatusOK || !strings.Contains(body, "<td>"+tc.backend+"</td>") {
			t.Fatalf("%s: status %d, body %q", tc.backend, rec.Code, body)
		}
		if got := strings.Contains(body, `id="memory-banner"`); got != tc.wantBanner {
			t.Errorf("%s: banner shown = %v, want %v", tc.backend, got, tc.wantBanner)
		}
	}
}

func TestIndexUnknownPathIs404(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	Index{}.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/nope", nil))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("status = %d, want 404", rec.Code)
	}
}

// A flood of health checks makes one database round trip per second, not
// one each: /healthz is open without the token.
func TestCachedPingSharesOneRoundTrip(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	release := make(chan struct{})
	p := CachedPing(pingerFunc(func(context.Context) error {
		calls.Add(1)
		<-release
		return errors.New("down")
	}), time.Hour)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 100 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- p.Ping(context.Background()) }()
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err == nil || err.Error() != "down" {
			t.Fatalf("a shared ping answered %v, want the round trip's error", err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("100 concurrent checks made %d round trips, want 1", n)
	}
	fresh := CachedPing(pingerFunc(func(context.Context) error { calls.Add(1); return nil }), 0)
	_ = fresh.Ping(context.Background())
	_ = fresh.Ping(context.Background())
	if n := calls.Load(); n != 3 {
		t.Fatalf("with no ttl every check pings: %d round trips, want 3", n)
	}
}
