package runs_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
)

// A thread's metadata and creation time, set through the registry (as the
// Agent Server API sets them), survive the Manager's runs and edits on the
// thread, and the Manager stamps when the thread's state was last written.
func TestManagerKeepsMetadataAndCreatedAndStampsStateUpdates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := runs.NewMemoryThreads()
	created := time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)
	meta := map[string]any{"user": "ann", "tags": []any{"x"}}
	for _, r := range []runs.ThreadRecord{
		{ID: "th", Graph: "linear", Status: runs.StatusIdle, Updated: created, Created: created, Metadata: meta},
		{ID: "bare", Status: runs.StatusIdle, Updated: created, Created: created, Metadata: map[string]any{"user": "bob"}},
	} {
		if err := store.SaveThread(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	m, err := runs.NewManager(map[string]engine.Compiled{"linear": linear(t, nil)}, runs.WithThreadStore(store))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// The Manager reads a thread made without a run like any other.
	if th, err := m.Thread(ctx, "bare"); err != nil || th.Graph != "" || th.Metadata["user"] != "bob" || !th.Created.Equal(created) || !th.StateUpdated.IsZero() {
		t.Fatalf("Thread before any run = %+v, %v", th, err)
	}
	mustRun := func(thread string) runs.Thread {
		t.Helper()
		if _, err := m.Start(ctx, "linear", thread, map[string]any{"n": 1}, runs.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		return wait(t, m, thread)
	}
	// A new thread made by a run gets a creation time from the Manager.
	beforeOther := time.Now().Add(-time.Millisecond)
	other := mustRun("other")
	if other.Created.Before(beforeOther) || other.Metadata != nil {
		t.Fatalf("a thread made by a run: %+v", other)
	}
	// A run on a thread made through the registry keeps its metadata
	// and creation time.
	th := mustRun("th")
	if !reflect.DeepEqual(th.Metadata, meta) || !th.Created.Equal(created) || th.Status != runs.StatusIdle {
		t.Fatalf("after a run the thread is %+v, want its metadata %v and created %v kept", th, meta, created)
	}
	// The run's end stamps the state update.
	if other.StateUpdated.IsZero() || other.StateUpdated.Before(beforeOther) {
		t.Fatalf("state updated %v after a run, want the run's end", other.StateUpdated)
	}
	// So does an edit.
	g, _ := m.Graph("linear")
	head, err := g.Pregel().GetState(ctx, checkpoints.Config{ThreadID: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.UpdateState(ctx, "other", head.Config.CheckpointID, map[string]any{"n": 2.0}, "a"); err != nil {
		t.Fatal(err)
	}
	edited, err := m.Thread(ctx, "other")
	if err != nil || edited.StateUpdated.Before(other.StateUpdated) || !edited.StateUpdated.Equal(edited.Updated) {
		t.Fatalf("after an edit: %+v, %v; want state updated at the edit", edited, err)
	}
	// The Manager's list applies the new filters to the threads it holds
	// too, and their order.
	if got := ids(list(t, m, runs.ThreadFilter{Metadata: map[string]any{"user": "ann"}})); !slices.Equal(got, []string{"th"}) {
		t.Fatalf("threads of ann: %v, want [th]", got)
	}
	if got := ids(list(t, m, runs.ThreadFilter{IDs: []string{"other"}})); !slices.Equal(got, []string{"other"}) {
		t.Fatalf("threads by id: %v, want [other]", got)
	}
	if got := ids(list(t, m, runs.ThreadFilter{SortBy: "created_at", SortOrder: "asc"})); !slices.Equal(got, []string{"bare", "th", "other"}) {
		t.Fatalf("by creation: %v, want [bare th other]", got)
	}
	// Pages are cut after the held threads join the registry's list.
	for _, tc := range []struct {
		limit, offset int
		want          []string
	}{{1, 0, []string{"bare"}}, {1, 1, []string{"other"}}, {2, 1, []string{"other", "th"}}, {0, 2, []string{"th"}}, {1, 3, nil}} {
		f := runs.ThreadFilter{SortBy: "thread_id", SortOrder: "asc", Limit: tc.limit, Offset: tc.offset}
		if got := ids(list(t, m, f)); !slices.Equal(got, tc.want) {
			t.Errorf("limit %d offset %d: %v, want %v", tc.limit, tc.offset, got, tc.want)
		}
	}
	// Written to the registry as the Manager holds them.
	m.Close()
	for _, want := range []runs.Thread{th, edited} {
		rec, err := store.GetThread(ctx, want.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(rec.Metadata, want.Metadata) || !rec.Created.Equal(want.Created) || !rec.StateUpdated.Equal(want.StateUpdated) {
			t.Errorf("registry record %+v, want the Manager's %+v", rec, want)
		}
	}
}

func ids(ts []runs.Thread) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}
