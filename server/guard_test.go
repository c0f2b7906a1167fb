package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/server"
)

func guarded(t *testing.T, cfg server.Config) *httptest.Server {
	t.Helper()
	m, err := runs.NewManager(testGraphs(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Runs = m
	api, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() { srv.Close(); api.Close(); m.Close() })
	return srv
}

func send(t *testing.T, method, url string, header map[string]string, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

// TestTokenGuardsEveryRouteButOk: the SDK's x-api-key (or a bearer
// token) is required everywhere but the load balancer's /ok.
func TestTokenGuardsEveryRouteButOk(t *testing.T) {
	t.Parallel()
	srv := guarded(t, server.Config{Token: "s3cret"})
	if res := send(t, "GET", srv.URL+"/ok", nil, ""); res.StatusCode != 200 {
		t.Fatalf("/ok without a key = %d", res.StatusCode)
	}
	for _, h := range []map[string]string{nil, {"x-api-key": "wrong"}, {"Authorization": "Bearer wrong"}} {
		for _, path := range []string{"/info", "/assistants/search", "/threads/search"} {
			method := "POST"
			if path == "/info" {
				method = "GET"
			}
			res := send(t, method, srv.URL+path, h, "{}")
			if res.StatusCode != 401 || res.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s %s with %v = %d %s, want a JSON 401", method, path, h, res.StatusCode, res.Header.Get("Content-Type"))
			}
		}
	}
	for _, h := range []map[string]string{{"x-api-key": "s3cret"}, {"Authorization": "Bearer s3cret"}} {
		if res := send(t, "POST", srv.URL+"/threads/search", h, "{}"); res.StatusCode != 200 {
			t.Errorf("search with %v = %d, want 200", h, res.StatusCode)
		}
	}
}

// TestCrossSitePagesCannotDriveTheAPI: a page on another site posting
// text/plain JSON (no preflight) is refused unless its origin is allowed;
// an allowed origin gets the CORS headers, preflights included.
func TestCrossSitePagesCannotDriveTheAPI(t *testing.T) {
	t.Parallel()
	srv := guarded(t, server.Config{CORSOrigins: []string{"https://smith.langchain.com"}})
	evil := map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}
	if res := send(t, "POST", srv.URL+"/threads", evil, `{}`); res.StatusCode != 403 {
		t.Fatalf("a cross-site text/plain POST = %d, want 403", res.StatusCode)
	}
	studio := map[string]string{"Origin": "https://smith.langchain.com", "Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}
	res := send(t, "POST", srv.URL+"/threads", studio, `{}`)
	if res.StatusCode != 200 || res.Header.Get("Access-Control-Allow-Origin") != "https://smith.langchain.com" {
		t.Fatalf("LangGraph Studio's POST = %d, allow-origin %q", res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
	}
	if !strings.Contains(res.Header.Get("Access-Control-Expose-Headers"), "Content-Location") {
		t.Fatalf("exposed headers %q: the SDK reads Content-Location", res.Header.Get("Access-Control-Expose-Headers"))
	}
	pre := send(t, "OPTIONS", srv.URL+"/threads/search", map[string]string{"Origin": "https://smith.langchain.com",
		"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type,x-api-key"}, "")
	if pre.StatusCode >= 300 || pre.Header.Get("Access-Control-Allow-Origin") != "https://smith.langchain.com" ||
		!strings.Contains(strings.ToLower(pre.Header.Get("Access-Control-Allow-Headers")), "x-api-key") {
		t.Fatalf("preflight = %d %v", pre.StatusCode, pre.Header)
	}
	if pre := send(t, "OPTIONS", srv.URL+"/threads/search", map[string]string{"Origin": "https://evil.example",
		"Access-Control-Request-Method": "POST"}, ""); pre.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("a preflight from another site was allowed: %v", pre.Header)
	}
	// A program (no Origin, no Sec-Fetch-Site) is not a browser page.
	if res := send(t, "POST", srv.URL+"/threads", map[string]string{"Content-Type": "application/json"}, `{}`); res.StatusCode != 200 {
		t.Fatalf("the SDK's POST = %d", res.StatusCode)
	}
}

// TestCrossSiteJoinCannotCancel: a page on another site that opens a
// run's stream with cancel_on_disconnect and drops it does not cancel
// the run; the same join from a program does.
func TestCrossSiteJoinCannotCancel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		headers map[string]string
		status  string
	}{
		{"cross-site page", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, "running"},
		{"program", nil, "interrupted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGate()
			c := newServer(t, g)
			thread := uuid.NewString()
			run := c.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "if_not_exists": "create"}, 200)
			<-g.entered
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/threads/%s/runs/%s/stream?cancel_on_disconnect=1", c.base, thread, run["run_id"]), nil)
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			cancel()
			res.Body.Close()
			deadline := time.Now().Add(2 * time.Second)
			for {
				got := c.json("GET", fmt.Sprintf("/threads/%s/runs/%s", thread, run["run_id"]), nil, 200)
				if got["status"] == tc.status && (tc.status == "running" && time.Now().After(deadline) || tc.status != "running") {
					break
				}
				if time.Now().After(deadline.Add(8 * time.Second)) {
					t.Fatalf("after the dropped join the run is %v, want %s", got["status"], tc.status)
				}
				time.Sleep(20 * time.Millisecond)
			}
			close(g.release)
		})
	}
}
