package engine_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine/enginetest"
)

// twin is a saver that stores everything twice: frames as frames in one
// memory saver, and converted to maps (Frame.Checkpoint) in another. The
// engine reads from the first. Once a frame is stored, twin writes over
// what of it is lent (checkpoints.Frame): anything that read it after the
// put, the engine or the memory saver, would read that.
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
