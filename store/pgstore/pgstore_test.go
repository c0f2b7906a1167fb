package pgstore_test

import (
	"context"
	"testing"

	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/store"
	"github.com/superstep-dev/superstep/store/pgstore"
	"github.com/superstep-dev/superstep/store/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// dims, when set, resizes the suite's word embedder: at most
		// 256 dimensions the store searches exactly through its covering
		// index, above it through the primary key and the heap.
		dims int
	}{
		{name: "heap"},
		// 250: small enough for the covering index, large enough that
		// the suite's words do not collide.
		{name: "covering", dims: 250},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.Exercise(t, func(t *testing.T, opts store.Options) store.Store {
				if w, ok := indexEmbedder(opts).(*storetest.WordEmbedder); ok && tc.dims > 0 {
					w.Dims = tc.dims
				}
				// A schema per test: the embedder record and the indexes
				// are per schema, and tests that commit must not see each
				// other.
				pool := pgtest.Schema(t, nil)
				s, err := pgstore.New(context.Background(), pool, pgstore.Options{Options: opts})
				if err != nil {
					t.Fatal(err)
				}
				return s
			})
		})
	}
}

func indexEmbedder(opts store.Options) store.Embedder {
	if opts.Index == nil {
		return nil
	}
	return opts.Index.Embedder
}
