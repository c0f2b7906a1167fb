package checkpoints_test

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"
	"unsafe"
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

// runFrames puts n checkpoints on thread as a run does, each a child of
// the last and carved, as the engine carves a run's frames, from arrays
// shared by all n (frames, their versions and new values, and the text of
// their ids, task ids and parent ids, as a subgraph's). Each carries a new 1 MB value of channel "a",
// and each but the first a 1 MB write saved against its parent; the last
// has a small pending write too, carved next to those. It returns weak
// pointers to every value and 1 MB write, by checkpoint, and to the ids'
// text, and the last checkpoint's config.
func runFrames(t *testing.T, m *checkpoints.Memory, cfg checkpoints.Config, first, n int) (values, writes []weak.Pointer[byte], ids weak.Pointer[byte], last checkpoints.Config) {
	t.Helper()
	const big = 1 << 20
	frames := make([]checkpoints.Frame, n)
	versions := make([]int64, n)
	news := make([]checkpoints.FrameValue, n)
	text := make([]byte, 0, 64<<10) // big enough to go alone, as an id chunk may
	ids = weak.Make(unsafe.SliceData(text))
	carve := func(s string) string {
		text = append(text, s...)
		return unsafe.String(unsafe.SliceData(text[len(text)-len(s):]), len(s))
	}
	for i := range n {
		value := slices.Repeat([]byte{'1'}, big) // a JSON number, its own allocation
		versions[i], news[i] = int64(first+i+1), checkpoints.FrameValue{Index: 0, Value: value}
		frames[i] = checkpoints.Frame{
			ID: carve(strconv.Itoa(first + i)), Channels: []string{"a"}, Versions: versions[i : i+1 : i+1], New: news[i : i+1 : i+1],
		}
		values = append(values, weak.Make(&value[0]))
		var step []checkpoints.TaskWrites
		if cfg.CheckpointID != "" {
			w := slices.Repeat([]byte{'2'}, big)
			writes = append(writes, weak.Make(&w[0]))
			step = []checkpoints.TaskWrites{{TaskID: carve("task" + strconv.Itoa(i)), Writes: []checkpoints.Write{{Channel: "a", Value: w}}}}
		}
		var err error
		if cfg, err = m.PutFrame(context.Background(), cfg, step, &frames[i], checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: first + i,
			Parents: map[string]string{"outer": carve("outer" + strconv.Itoa(first+i))}}); err != nil { // as a subgraph's
			t.Fatal(err)
		}
	}
	later := []checkpoints.Write{{Channel: "a", Value: json.RawMessage(`3`)}}
	if err := m.PutWrites(context.Background(), cfg, later, carve("later"+strconv.Itoa(first)), ""); err != nil {
		t.Fatal(err)
	}
	return values, writes, ids, cfg
}

// freed fails the test for each pointer in ps that still points at
// something after a collection.
func freed(t *testing.T, what string, ps []weak.Pointer[byte]) {
	t.Helper()
	runtime.GC()
	for i, p := range ps {
		if p.Value() != nil {
			t.Errorf("%s %d is still in memory", what, i)
		}
	}
}

// The engine carves a run's frames from chunks, and the memory saver keeps
// its checkpoints in chunks too. Pruning a thread to its latest checkpoint
// must free what the others held: the kept checkpoint must not keep a
// chunk shared with them alive.
func TestMemoryPruneFreesDroppedValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := checkpoints.NewMemory()
	values, writes, ids, _ := runFrames(t, m, checkpoints.Config{ThreadID: "t"}, 0, 3)
	if err := m.Prune(ctx, []string{"t"}, checkpoints.KeepLatest); err != nil {
		t.Fatal(err)
	}
	freed(t, "a dropped checkpoint's value", values[:2])
	freed(t, "a dropped checkpoint's pending write", writes)
	freed(t, "the run's id text", []weak.Pointer[byte]{ids})
	tu, err := m.Get(ctx, checkpoints.Config{ThreadID: "t"})
	if err != nil || tu == nil || tu.Checkpoint.ID != "2" || len(tu.Checkpoint.ChannelValues["a"]) != 1<<20 ||
		len(tu.PendingWrites) != 1 || string(tu.PendingWrites[0].Value) != "3" {
		t.Fatalf("the kept checkpoint reads as %+v, %v", tu, err)
	}
}

// A copy of a thread must keep nothing of the source once the source is
// deleted, not even what the source saved after the copy was made.
func TestMemoryCopyKeepsNothingOfTheSource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := checkpoints.NewMemory()
	_, _, ids, last := runFrames(t, m, checkpoints.Config{ThreadID: "src"}, 0, 1)
	if err := m.CopyThread(ctx, "src", "dst"); err != nil {
		t.Fatal(err)
	}
	values, _, _, _ := runFrames(t, m, last, 1, 2)
	if err := m.DeleteThread(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	freed(t, "a value the source saved after the copy", values)
	freed(t, "the source run's id text", []weak.Pointer[byte]{ids})
	tu, err := m.Get(ctx, checkpoints.Config{ThreadID: "dst"})
	if err != nil || tu == nil || tu.Checkpoint.ID != "0" || len(tu.Checkpoint.ChannelValues["a"]) != 1<<20 {
		t.Fatalf("the copy reads as %+v, %v", tu, err)
	}
}

// Putting a checkpoint again under its id replaces it: what the earlier
// puts held must go, however many times it is replaced.
func TestMemoryReplacedCheckpointFreesItsValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := checkpoints.NewMemory()
	var replaced []weak.Pointer[byte]
	for i := range 3 {
		value := slices.Repeat([]byte{'1'}, 1<<20)
		f := &checkpoints.Frame{ID: "x", Channels: []string{"a"}, Versions: []int64{int64(i + 1)},
			New: []checkpoints.FrameValue{{Index: 0, Value: value}}}
		if _, err := m.PutFrame(ctx, checkpoints.Config{ThreadID: "t"}, nil, f, checkpoints.Metadata{Source: checkpoints.SourceUpdate, Step: i}); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			replaced = append(replaced, weak.Make(&value[0]))
		}
	}
	freed(t, "a replaced put's value", replaced)
	tu, err := m.Get(ctx, checkpoints.Config{ThreadID: "t"})
	if err != nil || tu == nil || tu.Checkpoint.ChannelVersions["a"] != 3 {
		t.Fatalf("the checkpoint reads as %+v, %v", tu, err)
	}
}
