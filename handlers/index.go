package handlers

import (
	"log/slog"
	"net/http"

	"github.com/superstep-dev/superstep/web"
)

// Index renders the Studio's landing page.
type Index struct {
	Backends Backends
	Logger   *slog.Logger
}

func (h Index) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		NotFound(h.Logger).ServeHTTP(w, r)
		return
	}
	view := web.IndexView{
		Checkpoints: h.Backends.Checkpoints,
		Store:       h.Backends.Store,
		Cache:       h.Backends.Cache,
		InMemory:    h.Backends.Checkpoints == "memory",
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := web.Index(view).Render(r.Context(), w); err != nil {
		logger(h.Logger).Error("index: render", slog.Any("error", err))
	}
}
