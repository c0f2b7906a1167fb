package checkpoints_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/checkpoints/checkpointstest"
)

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	checkpointstest.Exercise(t, func(*testing.T) checkpoints.Saver { return checkpoints.NewMemory() })
}

// The memory saver finds checkpoints by id without an index while ids
// ascend, as the engine's do. Ids that arrive out of order, writes saved
// before their checkpoint, and a copied thread's writes must all still be
// found where they belong.
func TestMemoryIDsOutOfOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := checkpoints.NewMemory()
	cfg := func(id string) checkpoints.Config { return checkpoints.Config{ThreadID: "t", CheckpointID: id} }
	write := func(s checkpoints.Saver, id, task, value string) {
		t.Helper()
		if err := s.PutWrites(ctx, checkpoints.Config{ThreadID: "t", CheckpointID: id}, []checkpoints.Write{{Channel: "c", Value: json.RawMessage(value)}}, task, ""); err != nil {
			t.Fatal(err)
		}
	}
	write(m, "2", "early", `"before its checkpoint"`)
	parent := ""
	for _, id := range []string{"1", "3", "2", "4"} {
		cp := &checkpoints.Checkpoint{V: checkpoints.FormatVersion, ID: id, TS: time.Now().UTC(),
			ChannelValues: map[string]json.RawMessage{"c": json.RawMessage(`"` + id + `"`)}, ChannelVersions: map[string]int64{"c": 1},
			VersionsSeen: map[string]map[string]int64{}}
		if _, err := m.Put(ctx, cfg(parent), cp, checkpoints.Metadata{Source: checkpoints.SourceLoop}, map[string]int64{"c": 1}); err != nil {
			t.Fatal(err)
		}
		write(m, id, "task-"+id, `"after `+id+`"`)
		parent = id
	}
	// Putting a checkpoint again replaces it and keeps its writes.
	again := &checkpoints.Checkpoint{V: checkpoints.FormatVersion, ID: "3", TS: time.Now().UTC(),
		ChannelValues: map[string]json.RawMessage{"c": json.RawMessage(`"3"`)}, ChannelVersions: map[string]int64{"c": 1},
		VersionsSeen: map[string]map[string]int64{}}
	if _, err := m.Put(ctx, cfg("1"), again, checkpoints.Metadata{Source: checkpoints.SourceLoop}, map[string]int64{"c": 1}); err != nil {
		t.Fatal(err)
	}
	if err := m.CopyThread(ctx, "t", "u"); err != nil {
		t.Fatal(err)
	}
	if err := m.PutWrites(ctx, checkpoints.Config{ThreadID: "u", CheckpointID: "2"}, []checkpoints.Write{{Channel: "c", Value: json.RawMessage(`"copy only"`)}}, "copy", ""); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"1", "2", "3", "4"} {
		tup, err := m.Get(ctx, cfg(id))
		if err != nil || tup == nil {
			t.Fatalf("Get(%s) = %v, %v", id, tup, err)
		}
		if got := string(tup.Checkpoint.ChannelValues["c"]); got != `"`+id+`"` {
			t.Errorf("Get(%s) holds %s", id, got)
		}
		var got []string
		for _, w := range tup.PendingWrites {
			got = append(got, w.TaskID+"="+string(w.Value))
		}
		want := []string{"task-" + id + `="after ` + id + `"`}
		if id == "2" {
			want = append([]string{`early="before its checkpoint"`}, want...)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Get(%s) writes = %v, want %v", id, got, want)
		}
	}
	if tup, err := m.Get(ctx, checkpoints.Config{ThreadID: "u", CheckpointID: "2"}); err != nil || len(tup.PendingWrites) != 3 {
		t.Fatalf("the copy's checkpoint 2 = %+v, %v; want its 2 copied writes and its own", tup, err)
	}
	older, err := m.List(ctx, checkpoints.ListQuery{ThreadID: "t"}, checkpoints.ListOptions{Before: "2"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tup := range older {
		ids = append(ids, tup.Config.CheckpointID)
	}
	if !slices.Equal(ids, []string{"3", "1"}) {
		t.Errorf("List before 2 = %v, want [3 1] (saved before it)", ids)
	}
}
