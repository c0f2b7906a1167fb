package embed_test

import (
	"net/http"
	"testing"

	"github.com/superstep-dev/superstep/store/embed"
)

// The request goes to /api/embed (a trailing slash on BaseURL is not
// doubled) and carries exactly model and input, with no credentials.
func TestOllamaRequestShape(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, func(w http.ResponseWriter, _ *http.Request, input []string) {
		writeJSON(w, map[string]any{"model": "nomic-embed-text", "embeddings": [][]float32{{0.5, 0.5}, {1, 0}}})
	})
	e, err := embed.NewOllama(embed.OllamaConfig{BaseURL: srv.URL + "/", Model: "nomic-embed-text", Dim: 2})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Embed(t.Context(), []string{"first", "second"})
	if err != nil {
		t.Fatal(err)
	}
	if got[0][0] != 0.5 || got[1][0] != 1 {
		t.Errorf("vectors %v are not in the server's order", got)
	}
	r := srv.seen()[0]
	if r.Path != "/api/embed" || len(r.Body) != 2 || r.Body["model"] != "nomic-embed-text" || r.Authorization != "" {
		t.Errorf("request path %q body %v auth %q; want /api/embed with only model and input, no auth", r.Path, r.Body, r.Authorization)
	}
}
