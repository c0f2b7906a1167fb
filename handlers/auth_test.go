package handlers_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/runs"
)

const testToken = "s3cret-token"

// setupAuth is setup with the bearer-token guard on, as studio.Open
// wires it when AuthToken is set.
func setupAuth(t *testing.T) *fixture {
	t.Helper()
	g := newGate()
	close(g.release)
	m, err := runs.NewManager(map[string]engine.Compiled{"flow": flowGraph(t, g)})
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	handlers.Routes{Runs: m}.Mount(r)
	srv := httptest.NewServer(handlers.Secure(handlers.RequireToken(testToken, r)))
	t.Cleanup(func() {
		srv.Close()
		m.Close()
	})
	return &fixture{srv: srv, runs: m, gate: g}
}

func TestTokenGuardsEveryRoute(t *testing.T) {
	t.Parallel()
	f := setupAuth(t)
	if _, err := f.runs.Start(context.Background(), "flow", "th", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	before := f.wait(t, "th")
	same := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Sec-Fetch-Site": "same-origin", "Origin": f.srv.URL}
	for _, tc := range []struct {
		name    string
		method  string
		path    string
		headers map[string]string
	}{
		{"graphs page", "GET", "/graphs", nil},
		{"thread page", "GET", "/threads/th", nil},
		{"checkpoint tree", "GET", "/threads/th/checkpoints", nil},
		{"websocket", "GET", "/threads/th/ws", nil},
		{"start a run", "POST", "/graphs/flow/runs", same},
		{"re-run", "POST", "/threads/th/continue", same},
		{"token in the query string", "GET", "/graphs?token=" + testToken, nil},
		{"wrong token", "GET", "/graphs", map[string]string{"Authorization": "Bearer nope"}},
		{"wrong scheme", "GET", "/graphs", map[string]string{"Authorization": "Basic " + testToken}},
		{"forged cookie", "GET", "/graphs", map[string]string{"Cookie": handlers.SessionCookie + "=" + testToken}},
	} {
		res := f.do(t, tc.method, tc.path, strings.NewReader(""), tc.headers)
		if res.code != http.StatusUnauthorized || !strings.Contains(res.body, `id="login-form"`) {
			t.Errorf("%s: %d, want 401 with the login form", tc.name, res.code)
		}
	}
	if th, _ := f.runs.Thread(context.Background(), "th"); th.RunID != before.RunID {
		t.Fatalf("a refused re-run ran: run %s, was %s", th.RunID, before.RunID)
	}
	if ts := f.list(t, runs.ThreadFilter{}); len(ts) != 1 {
		t.Fatalf("a refused start made a thread: %d threads", len(ts))
	}
	if res := f.get(t, "/static/studio.css"); res.code != http.StatusOK {
		t.Errorf("the login page's stylesheet = %d", res.code)
	}
}

func TestBearerTokenAndLoginCookieLetYouIn(t *testing.T) {
	t.Parallel()
	f := setupAuth(t)
	bearer := map[string]string{"Authorization": "Bearer " + testToken}
	if res := f.do(t, "GET", "/graphs", nil, bearer); res.code != http.StatusOK {
		t.Fatalf("with the bearer token: %d", res.code)
	}
	// A wrong token at the form is refused and sets nothing.
	res := f.post(t, "/login", url.Values{"token": {"nope"}, "next": {"/graphs"}})
	if res.code != http.StatusUnauthorized || !strings.Contains(res.body, `id="login-error"`) {
		t.Fatalf("wrong token at the form = %d", res.code)
	}
	// The right one sets the cookie and goes where the person was going.
	req, _ := http.NewRequest("POST", f.srv.URL+"/login", strings.NewReader(url.Values{"token": {testToken}, "next": {"/graphs/flow"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/graphs/flow" {
		t.Fatalf("login = %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == handlers.SessionCookie {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || strings.Contains(cookie.Value, testToken) {
		t.Fatalf("session cookie = %+v; want HttpOnly, SameSite=Strict, not the token itself", cookie)
	}
	withCookie := map[string]string{"Cookie": cookie.Name + "=" + cookie.Value}
	if res := f.do(t, "GET", "/graphs", nil, withCookie); res.code != http.StatusOK {
		t.Fatalf("with the session cookie: %d", res.code)
	}
	// The websocket takes the cookie too.
	if _, err := f.runs.Start(context.Background(), "flow", "ws", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "ws")
	h := http.Header{"Cookie": {cookie.Name + "=" + cookie.Value}}
	c, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(f.srv.URL, "http")+"/threads/ws/ws", &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatalf("websocket with the cookie: %v", err)
	}
	c.CloseNow()
	if _, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(f.srv.URL, "http")+"/threads/ws/ws", nil); err == nil {
		t.Fatal("websocket without the cookie connected")
	}
}

func TestLoginNeverRedirectsOffSite(t *testing.T) {
	t.Parallel()
	f := setupAuth(t)
	for _, next := range []string{"https://evil.example/", "//evil.example/", `/\evil.example`, "javascript:alert(1)", "",
		// Browsers drop tabs and newlines and read '\\' as '/': each of
		// these is "//evil.example" to them.
		"/\t/evil.example", "/\n/evil.example", "/\r/evil.example", "/\t\\evil.example", "/a\\..\\..\\\\evil.example",
		" //evil.example", "/\x00/evil.example", "/login", "/login?next=//evil.example"} {
		res := f.post(t, "/login", url.Values{"token": {testToken}, "next": {next}})
		if res.code != http.StatusSeeOther || res.location != "/" {
			t.Errorf("next %q: %d to %q, want / ", next, res.code, res.location)
		}
	}
	// The GET form carries next through a query string, where %09 is a tab.
	res := f.get(t, "/login?next=/%09/evil.example")
	if strings.Contains(res.body, "evil.example") {
		t.Errorf("the login form carries an off-site next: %.1000s", res.body)
	}
	// Paths on this site still come back.
	for _, next := range []string{"/threads/th", "/threads/th/checkpoints?expand=research#tree", "/store?q=caf%C3%A9"} {
		res := f.post(t, "/login", url.Values{"token": {testToken}, "next": {next}})
		if res.code != http.StatusSeeOther || res.location != next {
			t.Errorf("next %q: %d to %q, want it kept", next, res.code, res.location)
		}
	}
}

func TestNoTokenMeansNoGuard(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	rec := httptest.NewRecorder()
	handlers.RequireToken("", ok).ServeHTTP(rec, httptest.NewRequest("GET", "/graphs", nil))
	if rec.Code != http.StatusTeapot {
		t.Fatalf("with no token the request got %d", rec.Code)
	}
}
