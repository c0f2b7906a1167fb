package pgstore_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/store"
	"github.com/superstep-dev/superstep/store/embed"
	"github.com/superstep-dev/superstep/store/pgstore"
)

// TestRankingMatchesMemory: near-twins (the same words in another order,
// averaged by the offline embedder into vectors equal but for float32
// rounding) come back from both search paths in the memory store's order
// with its scores, to the last bit, and an item with two vectors scores
// its better one. pgvector's own float32 distances order such twins by
// their rounding, differently from store's.
func TestRankingMatchesMemory(t *testing.T) {
	t.Parallel()
	idx := &store.IndexConfig{Embedder: embed.Offline(), Fields: []string{"text", "alt"}}
	pool := pgtest.Schema(t, nil)
	exact, err := pgstore.New(ctx, pool, pgstore.Options{Options: store.Options{Index: idx}})
	if err != nil {
		t.Fatal(err)
	}
	approx, err := pgstore.New(ctx, pool, pgstore.Options{ExactSearchMax: 1, Options: store.Options{Index: idx}})
	if err != nil {
		t.Fatal(err)
	}
	mem, err := store.NewMemory(store.Options{Index: idx})
	if err != nil {
		t.Fatal(err)
	}
	// Four words from five: about two hundred items share twenty-odd
	// word sets.
	words := []string{"river", "mountain", "forest", "lake", "valley"}
	r := rand.New(rand.NewPCG(7, 8))
	sentence := func() string {
		var s []string
		for range 4 {
			s = append(s, words[r.IntN(len(words))])
		}
		return strings.Join(s, " ")
	}
	var ops []store.Op
	for i := range 200 {
		v := map[string]any{"text": sentence(), "kind": []string{"a", "b"}[i%2]}
		if i%4 == 0 {
			v["alt"] = sentence() // a second vector: the item scores its better one
		}
		ops = append(ops, store.PutOp{Namespace: []string{"t", fmt.Sprint(i % 3)}, Key: fmt.Sprintf("k%03d", i), Value: v})
	}
	for _, s := range []store.Store{exact, mem} {
		if _, err := s.Batch(ctx, ops); err != nil {
			t.Fatal(err)
		}
	}
	type hit struct {
		id    string
		score float64
	}
	search := func(s store.Store, op store.SearchOp) []hit {
		t.Helper()
		items, err := store.Search(ctx, s, op)
		if err != nil {
			t.Fatal(err)
		}
		var out []hit
		for _, it := range items {
			out = append(out, hit{store.JoinNamespace(it.Namespace) + "/" + it.Key, *it.Score})
		}
		return out
	}
	for range 10 {
		q := sentence()
		for _, op := range []store.SearchOp{
			{Query: q, Limit: 10},
			{Query: q, Limit: 10, Offset: 15},
			{Query: q, Limit: 20, Offset: 120},
			{Query: q, Limit: 7, Offset: 190},
			{Query: q, Limit: 5, Filter: map[string]any{"kind": "a"}},
			{Query: q, Limit: 5, NamespacePrefix: []string{"t", "1"}},
		} {
			want := search(mem, op)
			for name, s := range map[string]store.Store{"exact": exact, "index": approx} {
				if got := search(s, op); !reflect.DeepEqual(got, want) {
					t.Errorf("%s path, query %q limit %d offset %d filter %v prefix %v:\n got %v\nwant %v", name, q, op.Limit, op.Offset, op.Filter, op.NamespacePrefix, got, want)
				}
			}
		}
	}
}
