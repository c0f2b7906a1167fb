package pgstore

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/store"
	"github.com/superstep-dev/superstep/store/storetest"
)

// TestIndexSearchFallsBackToExact: an index search whose page needs more
// candidates than the store reads (a filter 8 items of 600 pass, read 64
// candidates at most) is answered by the exact search: every rare item,
// in the exact path's order, and a deep page past the candidates too.
func TestIndexSearchFallsBackToExact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Schema(t, nil)
	idx := &store.IndexConfig{Embedder: &storetest.WordEmbedder{ID: "f", Dims: 64}, Fields: []string{"t"}}
	exact, err := New(ctx, pool, Options{Options: store.Options{Index: idx}})
	if err != nil {
		t.Fatal(err)
	}
	approx, err := New(ctx, pool, Options{ExactSearchMax: 1, maxCandidates: 64, Options: store.Options{Index: idx}})
	if err != nil {
		t.Fatal(err)
	}
	var ops []store.Op
	for i := range 600 {
		kind := "common"
		if i%75 == 0 {
			kind = "rare"
		}
		ops = append(ops, store.PutOp{Namespace: []string{"n"}, Key: fmt.Sprintf("%03d", i), Value: map[string]any{"t": fmt.Sprintf("apple w%d w%d", i, i%7), "kind": kind}})
	}
	if _, err := exact.Batch(ctx, ops); err != nil {
		t.Fatal(err)
	}
	keys := func(items []store.SearchItem) []string {
		var out []string
		for _, it := range items {
			out = append(out, it.Key)
		}
		return out
	}
	for _, op := range []store.SearchOp{
		{Query: "apple w3", Filter: map[string]any{"kind": "rare"}, Limit: 10},
		{Query: "apple w3", Limit: 10, Offset: 100},
	} {
		want, err := store.Search(ctx, exact, op)
		if err != nil {
			t.Fatal(err)
		}
		got, err := store.Search(ctx, approx, op)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 || !slices.Equal(keys(got), keys(want)) {
			t.Errorf("%+v: index search %v, exact %v", op, keys(got), keys(want))
		}
	}
}
