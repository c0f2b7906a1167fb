package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
	want := healthResponse{Status: "ok", Backends: Backends{Checkpoints: "postgres", Store: "postgres", Cache: "memory"}}
	if got != want {
		t.Fatalf("body = %+v, want %+v", got, want)
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
