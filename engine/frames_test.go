package engine_test

import (
	"cmp"
	"context"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
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

// asyncState is the state of the graphs TestAsyncSavesHoldWhatSyncSavesHold
// runs: a counter and the parts steps of two tasks append to.
type asyncState struct {
	N     int   `json:"n"`
	Parts []int `json:"parts" reduce:"append"`
}

// A run in async durability lends each save in the background a frame
// and writes built in the buffers of a save that has returned: with many
// saves queued, and their buffers used again and again once the queue
// drains, every checkpoint still holds what the same run saves in sync
// durability (values, versions, versions seen, next tasks, metadata and
// pending writes), in steps of one task (whose writes go with the step's
// checkpoint) and of two (the first one's go on their own).
func TestAsyncSavesHoldWhatSyncSavesHold(t *testing.T) {
	t.Parallel()
	// inc adds one to n until it reaches its limit, then routes to End,
	// and otherwise to next.
	inc := func(g *engine.StateGraph[asyncState], limit int, reached func(int), next ...string) {
		g.AddNodeWrites("inc", func(_ context.Context, s asyncState, w *engine.Writes) error {
			w.Set("n", s.N+1)
			reached(s.N + 1)
			return nil
		})
		g.AddEdge(engine.Start, "inc")
		g.AddConditionalEdges("inc", func(_ context.Context, s asyncState) (engine.Route, error) {
			if s.N >= limit {
				return engine.To(engine.End), nil
			}
			return engine.To(next[0], next[1:]...), nil
		}, nil)
	}
	cases := []struct {
		name string
		// build adds the nodes; gate is the n at which the held save is
		// let go, below what fills the persister's queue.
		build func(g *engine.StateGraph[asyncState], reached func(int))
		gate  int
	}{
		{"one task a step", func(g *engine.StateGraph[asyncState], reached func(int)) {
			inc(g, 300, reached, "inc")
		}, 40},
		{"two tasks every other step", func(g *engine.StateGraph[asyncState], reached func(int)) {
			inc(g, 150, reached, "a", "b")
			for i, name := range []string{"a", "b"} {
				g.AddNodeWrites(name, func(_ context.Context, s asyncState, w *engine.Writes) error {
					w.Set("parts", []int{s.N*10 + i})
					return nil
				})
			}
			g.AddJoin([]string{"a", "b"}, "inc")
		}, 15},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run := func(saver checkpoints.Saver, durability engine.Durability, reached func(int)) []*checkpoints.Tuple {
				g := engine.NewStateGraph[asyncState]()
				tc.build(g, reached)
				cg, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				var all []*checkpoints.Tuple
				for _, thread := range []string{"first", "second"} { // the second run takes the first's buffers
					if _, err := cg.Invoke(ctx, engine.Update{"n": 0}, &engine.RunOptions{ThreadID: thread, Durability: durability}); err != nil {
						t.Fatalf("%s run (durability %v): %v", thread, durability, err)
					}
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
			var timedOut atomic.Bool
			// A run that waits for the held save before reaching the gate
			// fails instead of hanging.
			timer := time.AfterFunc(time.Minute, func() {
				opened.Do(func() { timedOut.Store(true); close(held.release) })
			})
			defer timer.Stop()
			got := run(held, engine.DurabilityAsync, func(n int) {
				if n == tc.gate {
					opened.Do(func() { close(held.release) })
				}
			})
			if timedOut.Load() {
				t.Fatalf("the run waited for its first save before n reached %d", tc.gate)
			}
			if len(got) != len(want) {
				t.Fatalf("async durability saved %d checkpoints, sync %d", len(got), len(want))
			}
			// Ids, times and the task ids derived from them (which order
			// a step's pending writes) differ between the runs;
			// everything else is the same.
			type pending struct{ Channel, Value string }
			same := func(tup *checkpoints.Tuple) any {
				cp := *tup.Checkpoint
				cp.ID, cp.TS = "", time.Time{}
				var writes []pending
				for _, w := range tup.PendingWrites {
					writes = append(writes, pending{w.Channel, string(w.Value)})
				}
				slices.SortFunc(writes, func(a, b pending) int {
					return cmp.Or(cmp.Compare(a.Channel, b.Channel), cmp.Compare(a.Value, b.Value))
				})
				return []any{cp, tup.Metadata, writes}
			}
			for i := range want {
				if g, w := same(got[i]), same(want[i]); !reflect.DeepEqual(g, w) {
					t.Fatalf("checkpoint %d of the async runs holds\n%+v\nwhere sync durability saved\n%+v", i, g, w)
				}
			}
		})
	}
}
