package store_test

import (
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
