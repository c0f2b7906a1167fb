package studio_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/server"
	"github.com/superstep-dev/superstep/studio"
)

// TestNoRouteShadowsAnother walks every route of the Studio's pages and of
// the Agent Server API, served together at the root, and checks that each
// is reached by its audience: a browser's page request (an HTML
// navigation, a form post, a websocket upgrade) reaches the page, an SDK
// call (Accept */*, a JSON body) reaches the API, even where both have a
// route for the same method and path.
func TestNoRouteShadowsAnother(t *testing.T) {
	t.Parallel()
	s, err := studio.Open(context.Background(), studio.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	pageRoutes, apiRoutes := s.Routers()
	var got string
	pages := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got = "pages" })
	api := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got = "api" })
	h := server.Negotiate(pages, api, pageRoutes, apiRoutes)
	param := regexp.MustCompile(`\{[^}]*\}`)
	concrete := func(route string) string {
		p := param.ReplaceAllString(route, "x")
		p = strings.ReplaceAll(p, "/*", "/x")
		return p
	}
	overlaps := 0
	walk := func(name string, routes chi.Routes, req func(method, path string) *http.Request) {
		n := 0
		err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
			n++
			path := concrete(route)
			got = ""
			h.ServeHTTP(httptest.NewRecorder(), req(method, path))
			if got != name {
				t.Errorf("%s %s (%s route %s) reached %q, want %s", method, path, name, route, got, name)
			}
			if name == "api" && pageRoutes.Match(chi.NewRouteContext(), method, path) {
				overlaps++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatalf("the %s router has no routes", name)
		}
	}
	walk("pages", pageRoutes, func(method, path string) *http.Request {
		r := httptest.NewRequest(method, path, strings.NewReader("a=b"))
		if strings.HasSuffix(path, "/ws") {
			r.Header.Set("Upgrade", "websocket")
		}
		if method == http.MethodGet || method == http.MethodHead {
			r.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
		} else {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		return r
	})
	walk("api", apiRoutes, func(method, path string) *http.Request {
		r := httptest.NewRequest(method, path, strings.NewReader("{}"))
		r.Header.Set("Accept", "*/*")
		r.Header.Set("Content-Type", "application/json")
		return r
	})
	t.Logf("%d API routes share a method and path with a page", overlaps)
}

// pageRequest is a GET of url as a browser sends it: accepting HTML, so
// the Studio's page answers where the API has a route too (a thread, the
// store's items). url is absolute for a client, a path for a handler.
func pageRequest(t *testing.T, url string) *http.Request {
	t.Helper()
	var r *http.Request
	if strings.HasPrefix(url, "/") {
		r = httptest.NewRequest(http.MethodGet, url, nil)
	} else {
		var err error
		if r, err = http.NewRequest(http.MethodGet, url, nil); err != nil {
			t.Fatal(err)
		}
	}
	r.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
	return r
}
