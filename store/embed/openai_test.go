package embed_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/store/embed"
)

func TestOpenAIRequestShape(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		basePath string
		key      string
		dims     bool
		wantAuth string
	}{
		{name: "root base URL, no key", basePath: ""},
		{name: "SDK-style /v1 base URL", basePath: "/v1/"},
		{name: "proxy prefix and key", basePath: "/proxy", key: "sk-test", wantAuth: "Bearer sk-test"},
		{name: "request dimensions", basePath: "", dims: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, func(w http.ResponseWriter, _ *http.Request, input []string) {
				writeJSON(w, map[string]any{"data": []map[string]any{{"index": 0, "embedding": []float32{1, 0}}}})
			})
			e, err := embed.NewOpenAI(embed.OpenAIConfig{BaseURL: srv.URL + tc.basePath, Model: "m", Dim: 2, APIKey: tc.key, RequestDimensions: tc.dims})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Embed(t.Context(), []string{"hi"}); err != nil {
				t.Fatal(err)
			}
			r := srv.seen()[0]
			wantPath := strings.TrimSuffix(strings.TrimSuffix(tc.basePath, "/"), "/v1") + "/v1/embeddings"
			if r.Path != wantPath {
				t.Errorf("path %q, want %q", r.Path, wantPath)
			}
			if r.Authorization != tc.wantAuth {
				t.Errorf("Authorization %q, want %q", r.Authorization, tc.wantAuth)
			}
			dims, sent := r.Body["dimensions"]
			if sent != tc.dims || (sent && dims != float64(2)) {
				t.Errorf("dimensions field = %v (sent %v), want sent=%v with 2", dims, sent, tc.dims)
			}
		})
	}
}

// The OpenAI API does not promise data in input order; each item's
// "index" says where it belongs.
func TestOpenAIIndexOrdering(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		data    []map[string]any
		want    [][]float32
		wantErr string
	}{
		{
			name: "reversed with indexes",
			data: []map[string]any{{"index": 2, "embedding": []float32{3, 3}}, {"index": 1, "embedding": []float32{2, 2}}, {"index": 0, "embedding": []float32{1, 1}}},
			want: [][]float32{{1, 1}, {2, 2}, {3, 3}},
		},
		{
			name: "no indexes: input order",
			data: []map[string]any{{"embedding": []float32{1, 1}}, {"embedding": []float32{2, 2}}, {"embedding": []float32{3, 3}}},
			want: [][]float32{{1, 1}, {2, 2}, {3, 3}},
		},
		{
			name:    "duplicate index",
			data:    []map[string]any{{"index": 0, "embedding": []float32{1, 1}}, {"index": 0, "embedding": []float32{2, 2}}, {"index": 2, "embedding": []float32{3, 3}}},
			wantErr: "two embeddings have index 0",
		},
		{
			name:    "index out of range",
			data:    []map[string]any{{"index": 0, "embedding": []float32{1, 1}}, {"index": 1, "embedding": []float32{2, 2}}, {"index": 3, "embedding": []float32{3, 3}}},
			wantErr: "index 3 is outside 0..2",
		},
		{
			name:    "some indexes missing",
			data:    []map[string]any{{"index": 0, "embedding": []float32{1, 1}}, {"embedding": []float32{2, 2}}, {"index": 2, "embedding": []float32{3, 3}}},
			wantErr: "2 of 3 embeddings have an index",
		},
		{
			name:    "embedding missing",
			data:    []map[string]any{{"index": 0, "embedding": []float32{1, 1}}, {"index": 1}, {"index": 2, "embedding": []float32{3, 3}}},
			wantErr: "embedding 1 has no \"embedding\" array",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, func(w http.ResponseWriter, _ *http.Request, _ []string) {
				writeJSON(w, map[string]any{"data": tc.data})
			})
			e, err := embed.NewOpenAI(embed.OpenAIConfig{BaseURL: srv.URL, Model: "m", Dim: 2})
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.Embed(t.Context(), []string{"a", "b", "c"})
			if tc.wantErr != "" {
				if !errors.Is(err, embed.ErrMalformedResponse) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Embed = %v, %v; want ErrMalformedResponse saying %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.want {
				if got[i][0] != tc.want[i][0] {
					t.Errorf("vector %d = %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}
