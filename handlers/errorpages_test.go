package handlers

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// An error page's way back is a path on the Studio: a Referer from
// another host, or one a browser would read as another host, falls back
// to the page the request belongs to.
func TestBackLinkStaysOnTheStudio(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, method, target, referer, want string
	}{
		{"same origin", "POST", "/graphs/flow/runs", "http://studio.test/graphs/flow?expand=a", "/graphs/flow?expand=a"},
		{"no referer, form post", "POST", "/graphs/flow/runs", "", "/graphs/flow"},
		{"no referer, thread post", "POST", "/threads/t1/resume", "", "/threads/t1"},
		{"no referer, page", "GET", "/threads/ghost", "", "/threads"},
		{"no referer, under a thread", "GET", "/threads/t1/checkpoints/c1/values/nope", "", "/threads/t1"},
		{"no referer, a form's address", "GET", "/graphs/flow/runs", "", "/graphs/flow"},
		{"store", "POST", "/store/put", "", "/store"},
		{"unknown section", "GET", "/nope/x", "", "/"},
		{"other host", "POST", "/graphs/flow/runs", "https://evil.example/graphs/flow", "/graphs/flow"},
		{"protocol-relative path", "GET", "/nope", "http://studio.test//evil.example/x", "/"},
		{"backslash stays an escaped path", "GET", "/nope", `http://studio.test/\evil.example`, "/%5Cevil.example"},
		{"script scheme", "GET", "/nope", "javascript:alert(1)", "/"},
		{"the failing page itself", "GET", "/graphs/ghost", "http://studio.test/graphs/ghost", "/graphs"},
		{"form re-rendered at its post URL", "POST", "/graphs/flow/runs", "http://studio.test/graphs/flow/runs", "/graphs/flow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(tc.method, "http://studio.test"+tc.target, nil)
			if tc.referer != "" {
				r.Header.Set("Referer", tc.referer)
			}
			if got, label := backLink(r); got != tc.want || label == "" {
				t.Errorf("backLink = %q (%q), want %q", got, label, tc.want)
			}
		})
	}
}

// Error pages say what was wrong without the server's internals: a
// server-side failure is logged, and the page says only that it happened.
func TestServerFailuresDoNotLeakTheError(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	secret := "pq: password authentication failed for user \"admin\" password=hunter2"
	fail(rec, httptest.NewRequest(http.MethodGet, "/graphs", nil), slog.New(slog.DiscardHandler), errors.New(secret))
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("status %d", rec.Code)
	}
	body := rec.Body.String()
	for _, leak := range []string{"hunter2", "password", "goroutine", ".go:"} {
		if strings.Contains(body, leak) {
			t.Errorf("the 500 page shows %q", leak)
		}
	}
	if !strings.Contains(body, `id="error-back"`) || !strings.Contains(body, "/static/studio.css") {
		t.Error("the 500 page is not the Studio's styled error page")
	}
}
