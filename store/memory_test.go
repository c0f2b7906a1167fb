package store_test

import (
	"context"
	"testing"

	"github.com/superstep-dev/superstep/store"
	"github.com/superstep-dev/superstep/store/storetest"
)

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, func(t *testing.T, opts store.Options) store.Store {
		s, err := store.NewMemory(opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// countingEmbedder records every text it is asked to embed.
type countingEmbedder struct{ texts []string }

func (e *countingEmbedder) Name() string { return "counting" }
func (e *countingEmbedder) Dim() int     { return 2 }
func (e *countingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.texts = append(e.texts, texts...)
	out := make([][]float32, len(texts))
	for i := range texts {
		out[i] = []float32{1, float32(len(texts[i]))}
	}
	return out, nil
}

// A text repeated across puts, fields and a search is embedded once.
func TestPrepareEmbedsEachTextOnce(t *testing.T) {
	t.Parallel()
	emb := &countingEmbedder{}
	ops := []store.Op{
		store.PutOp{Namespace: []string{"a"}, Key: "1", Value: map[string]any{"x": "same", "y": "same"}, Index: []string{"x", "y"}},
		store.PutOp{Namespace: []string{"a"}, Key: "2", Value: map[string]any{"x": "same", "y": "other"}, Index: []string{"x", "y"}},
		store.SearchOp{NamespacePrefix: []string{"a"}, Query: "same"},
	}
	p, err := store.Prepare(context.Background(), ops, store.Options{Index: &store.IndexConfig{Embedder: emb}})
	if err != nil {
		t.Fatal(err)
	}
	if len(emb.texts) != 2 {
		t.Fatalf("embedded %q, want each distinct text once", emb.texts)
	}
	if len(p.Puts) != 2 || len(p.Puts[0].Vectors) != 2 || len(p.Puts[1].Vectors) != 2 {
		t.Fatalf("every field still gets its vector: %+v", p.Puts)
	}
}
