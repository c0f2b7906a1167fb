package checkpoints_test

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"
	"weak"

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

// A caller may carve its frames from one array (the engine carves a run's
// from chunks), and the memory saver keeps its checkpoints in chunks too.
// Pruning a thread to its latest checkpoint must free what the others
// held: the kept checkpoint must not keep a chunk shared with them alive.
func TestMemoryPruneFreesDroppedValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := checkpoints.NewMemory()
	const big = 1 << 20
	frames := make([]checkpoints.Frame, 3)
	var dropped []weak.Pointer[byte]
	cfg := checkpoints.Config{ThreadID: "t"}
	for i := range frames {
		value := slices.Repeat([]byte{'1'}, big) // a JSON number, its own allocation
		frames[i] = checkpoints.Frame{
			ID: strconv.Itoa(i), Channels: []string{"a"}, Versions: []int64{int64(i + 1)},
			New: []checkpoints.FrameValue{{Index: 0, Value: value}},
		}
		if i < len(frames)-1 {
			dropped = append(dropped, weak.Make(&value[0]))
		}
		var err error
		if cfg, err = m.PutFrame(ctx, cfg, nil, &frames[i], checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: i}); err != nil {
			t.Fatal(err)
		}
	}
	frames = nil
	if err := m.Prune(ctx, []string{"t"}, checkpoints.KeepLatest); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	for i, w := range dropped {
		if w.Value() != nil {
			t.Errorf("checkpoint %d's value is still in memory after pruning it", i)
		}
	}
	tu, err := m.Get(ctx, checkpoints.Config{ThreadID: "t"})
	if err != nil || tu == nil || tu.Checkpoint.ID != "2" || len(tu.Checkpoint.ChannelValues["a"]) != big {
		t.Fatalf("the kept checkpoint reads as %+v, %v", tu, err)
	}
}
