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
	storetest.Exercise(t, func(t *testing.T, opts store.Options) store.Store {
		// A schema per test: the embedder record and the HNSW index are
		// per schema, and tests that commit must not see each other.
		pool := pgtest.Schema(t, nil)
		s, err := pgstore.New(context.Background(), pool, pgstore.Options{Options: opts})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
