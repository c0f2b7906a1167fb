package handlers

import (
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/superstep-dev/superstep/static"
)

// NotFound answers a path the Studio has no page for with its own styled
// 404 (the layout, what was asked for, and a way back).
func NotFound(log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		renderError(w, r, log, http.StatusNotFound, titleOf(http.StatusNotFound),
			"The Studio has no page at "+r.URL.Path+". Check the address, or follow a link from the navigation above.")
	})
}

func methodNotAllowed(log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		msg := "The page at " + r.URL.Path + " does not accept " + r.Method + " requests."
		if allow := w.Header().Get("Allow"); allow != "" {
			msg += " It accepts " + allow + "."
		}
		renderError(w, r, log, http.StatusMethodNotAllowed, "Not allowed here", msg)
	}
}

// staticFiles serves the embedded assets; a name that is not one of them
// (or a folder) gets the styled 404 instead of a bare one or a listing.
func staticFiles(rt Routes) http.Handler {
	files := http.StripPrefix("/static/", http.FileServerFS(static.FS))
	missing := NotFound(rt.Logger)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/static/")
		if fi, err := fs.Stat(static.FS, name); err != nil || fi.IsDir() {
			missing.ServeHTTP(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})
}

// favicon answers /favicon.ico, which browsers ask for on their own, with
// the SVG icon the layout links.
func favicon() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := fs.ReadFile(static.FS, "favicon.svg")
		if err != nil {
			http.Error(w, "no icon", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("Cache-Control", "public, max-age=86400")
		_, _ = w.Write(b)
	})
}

// backLink is where an error page sends the person: the page they came
// from when the Referer is one of the Studio's own pages, else the page
// the refused request belongs to. A Referer that is the failing address
// itself is no way back: a reload, or a form re-rendered at the address it
// posts to (which answers only POST). Only a path is ever used, so the
// link cannot leave the Studio.
func backLink(r *http.Request) (href, label string) {
	if ref, err := url.Parse(r.Referer()); err == nil && ref.Host == r.Host && (ref.Scheme == "http" || ref.Scheme == "https") {
		p := ref.EscapedPath()
		if localPath(p) && p != r.URL.EscapedPath() {
			if ref.RawQuery != "" {
				p += "?" + ref.RawQuery
			}
			return p, "Back to where you were"
		}
	}
	return sectionOf(r)
}

// localPath reports whether p is a path on this host: it starts with one
// slash (not "//" or "/\\", which browsers read as another host).
func localPath(p string) bool {
	return strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "//") && !strings.HasPrefix(p, "/\\")
}

// sectionOf is the page a request belongs to: for an address under a
// graph or thread (a form post, a checkpoint, a value), that graph's or
// thread's page; otherwise the list page of its section (graphs, threads,
// store, cache), or the home page.
func sectionOf(r *http.Request) (href, label string) {
	parts := strings.Split(strings.Trim(r.URL.EscapedPath(), "/"), "/")
	switch parts[0] {
	case "graphs", "threads":
		if len(parts) >= 3 && parts[1] != "" {
			return "/" + parts[0] + "/" + parts[1], "Back to the " + strings.TrimSuffix(parts[0], "s")
		}
		return "/" + parts[0], "Back to the " + parts[0]
	case "store", "cache":
		return "/" + parts[0], "Back to the " + parts[0]
	}
	return "/", "Back to the Studio's home page"
}
