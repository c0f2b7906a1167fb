package engine_test

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/engine/enginetest"
)

// twin is a saver that stores everything twice: frames as frames in one
// memory saver, and converted to maps (Frame.Checkpoint) in another. The
// engine reads from the first. Once a frame is stored, twin writes over
// what of it is lent (checkpoints.Frame), and over the writes' slices:
// anything that read them after the put, the engine or the memory saver,
// would read that.
type twin struct {
	frames, maps *checkpoints.Memory
}

var (
	_ checkpoints.FrameSaver = twin{}
	_ checkpoints.StepSaver  = twin{}
)

func (w twin) Get(ctx context.Context, cfg checkpoints.Config) (*checkpoints.Tuple, error) {
	return w.frames.Get(ctx, cfg)
}

func (w twin) List(ctx context.Context, q checkpoints.ListQuery, opts checkpoints.ListOptions) ([]*checkpoints.Tuple, error) {
	return w.frames.List(ctx, q, opts)
}

func (w twin) Put(ctx context.Context, cfg checkpoints.Config, cp *checkpoints.Checkpoint, md checkpoints.Metadata, nv map[string]int64) (checkpoints.Config, error) {
	if _, err := w.maps.Put(ctx, cfg, cp, md, nv); err != nil {
		return checkpoints.Config{}, err
	}
	return w.frames.Put(ctx, cfg, cp, md, nv)
}

func (w twin) PutStep(ctx context.Context, cfg checkpoints.Config, writes []checkpoints.TaskWrites, cp *checkpoints.Checkpoint, md checkpoints.Metadata, nv map[string]int64) (checkpoints.Config, error) {
	if _, err := w.maps.PutStep(ctx, cfg, writes, cp, md, nv); err != nil {
		return checkpoints.Config{}, err
	}
	return w.frames.PutStep(ctx, cfg, writes, cp, md, nv)
}

func (w twin) PutFrame(ctx context.Context, cfg checkpoints.Config, writes []checkpoints.TaskWrites, f *checkpoints.Frame, md checkpoints.Metadata) (checkpoints.Config, error) {
	cp, nv, err := f.Checkpoint()
	if err != nil {
		return checkpoints.Config{}, err
	}
	if _, err := w.maps.PutStep(ctx, cfg, writes, cp, md, nv); err != nil {
		return checkpoints.Config{}, err
	}
	got, err := w.frames.PutFrame(ctx, cfg, writes, f, md)
	if err == nil {
		poison(f)
		for _, tw := range writes { // their slices are lent too
			for i := range tw.Writes {
				tw.Writes[i] = checkpoints.Write{Channel: "poisoned"}
			}
		}
	}
	return got, err
}

// poison writes over the lent parts of a frame that a caller may also
// have given (a frame in the background, see checkpoints.Frame): its
// versions, its new channels and its Seen entries, but not the entries'
// Versions, which the engine's given frames share.
func poison(f *checkpoints.Frame) {
	for i := range f.Versions {
		f.Versions[i] = -1
	}
	for i := range f.New {
		f.New[i] = checkpoints.FrameValue{Index: -1}
	}
	for i := range f.Seen {
		f.Seen[i] = checkpoints.SeenVersions{Node: "poisoned"}
	}
}

func (w twin) PutWrites(ctx context.Context, cfg checkpoints.Config, writes []checkpoints.Write, taskID, taskPath string) error {
	if err := w.maps.PutWrites(ctx, cfg, writes, taskID, taskPath); err != nil {
		return err
	}
	return w.frames.PutWrites(ctx, cfg, writes, taskID, taskPath)
}

func (w twin) DeleteThread(ctx context.Context, id string) error {
	if err := w.maps.DeleteThread(ctx, id); err != nil {
		return err
	}
	return w.frames.DeleteThread(ctx, id)
}

func (w twin) CopyThread(ctx context.Context, src, dst string) error {
	if err := w.maps.CopyThread(ctx, src, dst); err != nil {
		return err
	}
	return w.frames.CopyThread(ctx, src, dst)
}

func (w twin) Prune(ctx context.Context, ids []string, s checkpoints.PruneStrategy) error {
	if err := w.maps.Prune(ctx, ids, s); err != nil {
		return err
	}
	return w.frames.Prune(ctx, ids, s)
}

func (w twin) DeleteForRuns(ctx context.Context, runIDs []string) error {
	if err := w.maps.DeleteForRuns(ctx, runIDs); err != nil {
		return err
	}
	return w.frames.DeleteForRuns(ctx, runIDs)
}

// Every conformance scenario leaves the same checkpoints whether the
// engine's frames are stored as frames or as the maps they convert to:
// values, versions, versions seen, updated channels, metadata and pending
// writes, in every thread and namespace.
func TestFramesSaveWhatMapsSave(t *testing.T) {
	t.Parallel()
	enginetest.Exercise(t, func(t *testing.T) checkpoints.Saver {
		w := twin{frames: checkpoints.NewMemory(), maps: checkpoints.NewMemory()}
		t.Cleanup(func() {
			all := checkpoints.ListQuery{AllNamespaces: true}
			got, err := w.frames.List(context.Background(), all, checkpoints.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want, err := w.maps.List(context.Background(), all, checkpoints.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 {
				return // the scenario saved nothing
			}
			if len(got) != len(want) {
				t.Fatalf("%d checkpoints stored as frames, %d as maps", len(got), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Errorf("checkpoint %+v as a frame reads\n%+v\n%+v\nas maps\n%+v\n%+v", want[i].Config, *got[i].Checkpoint, got[i].PendingWrites, *want[i].Checkpoint, want[i].PendingWrites)
				}
			}
		})
		return w
	})
}

// gatedSaver is a memory saver whose first PutFrame waits until release
// is closed, so that the saves a run makes meanwhile queue up behind it.
type gatedSaver struct {
	*checkpoints.Memory
	release chan struct{}
	once    sync.Once
}

func (h *gatedSaver) PutFrame(ctx context.Context, cfg checkpoints.Config, writes []checkpoints.TaskWrites, f *checkpoints.Frame, md checkpoints.Metadata) (checkpoints.Config, error) {
	h.once.Do(func() { <-h.release })
	return h.Memory.PutFrame(ctx, cfg, writes, f, md)
}

// A run in async durability lends each save in the background a frame
// and writes built in the buffers of a save that has returned: with many
// saves queued, and their buffers used again and again once the queue
// drains, every checkpoint still holds what the same run saves in sync
// durability (values, versions, versions seen, next tasks, metadata and
// pending writes).
func TestAsyncSavesHoldWhatSyncSavesHold(t *testing.T) {
	t.Parallel()
	const steps, queued = 300, 40
	run := func(saver checkpoints.Saver, durability engine.Durability, reached func(int)) []*checkpoints.Tuple {
		g := engine.NewStateGraph[counter]()
		g.AddNodeWrites("inc", func(_ context.Context, s counter, w *engine.Writes) error {
			w.Set("n", s.N+1)
			reached(s.N + 1)
			return nil
		})
		g.AddEdge(engine.Start, "inc")
		g.AddConditionalEdges("inc", func(_ context.Context, s counter) (engine.Route, error) {
			if s.N >= steps {
				return engine.To(engine.End), nil
			}
			return engine.To("inc"), nil
		}, nil)
		cg, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for _, thread := range []string{"first", "second"} { // the second run takes the first's buffers
			out, err := cg.Invoke(ctx, engine.Update{"n": 0}, &engine.RunOptions{ThreadID: thread, Durability: durability})
			if err != nil || out.N != steps {
				t.Fatalf("%s run (durability %v): %+v, %v", thread, durability, out, err)
			}
		}
		var all []*checkpoints.Tuple
		for _, thread := range []string{"first", "second"} {
			tuples, err := saver.List(ctx, checkpoints.ListQuery{ThreadID: thread}, checkpoints.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, tuples...)
		}
		return all
	}
	want := run(checkpoints.NewMemory(), engine.DurabilitySync, func(int) {})
	held := &gatedSaver{Memory: checkpoints.NewMemory(), release: make(chan struct{})}
	var opened sync.Once
	got := run(held, engine.DurabilityAsync, func(n int) {
		if n == queued {
			opened.Do(func() { close(held.release) })
		}
	})
	if len(got) != len(want) {
		t.Fatalf("async durability saved %d checkpoints, sync %d", len(got), len(want))
	}
	// Ids, times and the task ids derived from them differ between the
	// runs; everything else is the same.
	type pending struct{ Channel, Value string }
	same := func(tup *checkpoints.Tuple) any {
		cp := *tup.Checkpoint
		cp.ID, cp.TS = "", time.Time{}
		var writes []pending
		for _, w := range tup.PendingWrites {
			writes = append(writes, pending{w.Channel, string(w.Value)})
		}
		return []any{cp, tup.Metadata, writes}
	}
	for i := range want {
		if g, w := same(got[i]), same(want[i]); !reflect.DeepEqual(g, w) {
			t.Fatalf("checkpoint %d of the async runs holds\n%+v\nwhere sync durability saved\n%+v", i, g, w)
		}
	}
}
