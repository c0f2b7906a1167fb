package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
