package pgthreads_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
)

// Changes to one assistant from several connections at once each get a
// version of their own: the statement numbers from the row it locks.
func TestConcurrentAssistantPatchesGetDistinctVersions(t *testing.T) {
	t.Parallel()
	s := pgthreads.NewAssistants(pgtest.Schema(t, nil))
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const id = "00000000-0000-4000-8000-000000000001"
	if _, err := s.CreateAssistant(ctx, runs.Assistant{ID: id, Graph: "g", Name: "n", Created: at, Updated: at}, runs.IfExistsRaise); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	got := make([]int, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			a, err := s.PatchAssistant(ctx, id, runs.AssistantPatch{Metadata: map[string]any{"writer": i}}, at.Add(time.Duration(i+1)*time.Second))
			got[i], errs[i] = a.Version, err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("patch %d: %v", i, err)
		}
	}
	slices.Sort(got)
	if want := []int{2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(got, want) {
		t.Errorf("versions %v, want %v", got, want)
	}
	vs, err := s.AssistantVersions(ctx, id, runs.VersionQuery{})
	if err != nil || len(vs) != n+1 {
		t.Errorf("%d versions stored (%v), want %d", len(vs), err, n+1)
	}
}
