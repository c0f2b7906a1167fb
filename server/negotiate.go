package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/handlers"
)

// Router is what Negotiate needs of a router: a handler that can say
// whether it has a route for a method and path (*chi.Mux is one).
type Router interface {
	http.Handler
	Match(rctx *chi.Context, method, path string) bool
}

// Negotiate serves the Studio's pages and the API at the same root: a
// request goes to the one router that has a route for it, and when both
// do, to the pages for a page request (handlers.WantsPage) and to the API
// otherwise. A request neither knows goes to its audience, whose 404
// says so in its own form. pages and api are the whole handlers (with
// their middleware); pageRoutes and apiRoutes their routers, consulted
// for matching only.
func Negotiate(pages, api http.Handler, pageRoutes, apiRoutes Router) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.RawPath
		if path == "" {
			path = r.URL.Path
		}
		page := handlers.WantsPage(r)
		inPages := pageRoutes.Match(chi.NewRouteContext(), r.Method, path)
		inAPI := r.Method == http.MethodOptions || apiRoutes.Match(chi.NewRouteContext(), r.Method, path)
		switch {
		case inPages && inAPI:
			if page {
				pages.ServeHTTP(w, r)
			} else {
				api.ServeHTTP(w, r)
			}
		case inPages:
			pages.ServeHTTP(w, r)
		case inAPI:
			api.ServeHTTP(w, r)
		case page:
			pages.ServeHTTP(w, r)
		default:
			api.ServeHTTP(w, r)
		}
	})
}
