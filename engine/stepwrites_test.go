package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// callCounter is a memory saver that counts the calls the engine makes
// to save: a step's writes and checkpoint in one call (PutFrame), or the
// writes on their own (PutWrites).
type callCounter struct {
	*checkpoints.Memory
	mu               sync.Mutex
	frames, putWrite int
	// wrote, when set, is told (without waiting) after each PutWrites.
	wrote chan struct{}
}

func (c *callCounter) PutFrame(ctx context.Context, cfg checkpoints.Config, writes []checkpoints.TaskWrites, f *checkpoints.Frame, md checkpoints.Metadata) (checkpoints.Config, error) {
	c.mu.Lock()
	c.frames++
	c.mu.Unlock()
	return c.Memory.PutFrame(ctx, cfg, writes, f, md)
}

func (c *callCounter) PutWrites(ctx context.Context, cfg checkpoints.Config, writes []checkpoints.Write, taskID, taskPath string) error {
	c.mu.Lock()
	c.putWrite++
	c.mu.Unlock()
	err := c.Memory.PutWrites(ctx, cfg, writes, taskID, taskPath)
	if c.wrote != nil {
		select {
		case c.wrote <- struct{}{}:
		default:
		}
	}
	return err
}

func (c *callCounter) counts() (frames, putWrites int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frames, c.putWrite
}

// A step of one task is saved in one call, its writes with the
// checkpoint after them (one transaction on Postgres), in sync and async
// durability alike. In a step of several tasks, each task's writes but
// the last are saved as it finishes, as upstream does: a crash while a
// sibling still works loses none of them. The writes of a task whose
// sibling failed reach the checkpoint they belong to, as pending writes
// a resume skips the task with.
func TestStepWritesAreSavedAsTasksFinish(t *testing.T) {
	t.Parallel()
	for _, d := range []struct {
		name string
		mode engine.Durability
	}{{"sync", engine.DurabilitySync}, {"async", engine.DurabilityAsync}} {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			boom := errors.New("boom")
			release := make(chan struct{})
			g := engine.NewStateGraph[roundState]()
			g.AddNode("tick", func(_ context.Context, s roundState) (engine.Output, error) {
				return engine.Set("n", s.N+1), nil
			})
			g.AddNode("fast", func(_ context.Context, s roundState) (engine.Output, error) {
				return engine.Set("log", "fast"), nil
			})
			g.AddNode("slow", func(ctx context.Context, s roundState) (engine.Output, error) {
				if s.N == 2 {
					select {
					case <-release:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				if s.N >= 3 {
					return nil, boom
				}
				return engine.Set("log", "slow"), nil
			})
			g.AddEdge(engine.Start, "tick")
			g.AddConditionalEdges("tick", func(_ context.Context, s roundState) (engine.Route, error) {
				if s.N == 1 {
					return engine.To("tick"), nil // a step of one task
				}
				return engine.To("fast", "slow"), nil
			}, nil)
			g.AddJoin([]string{"fast", "slow"}, "tick")
			saver := &callCounter{Memory: checkpoints.NewMemory(), wrote: make(chan struct{}, 1)}
			cg, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			done := make(chan error, 1)
			go func() {
				_, err := cg.Invoke(ctx, engine.Update{"n": 0}, &engine.RunOptions{ThreadID: "t", Durability: d.mode})
				done <- err
			}()
			// While slow works in the step of n == 2, fast's write is
			// already saved, pending on the step's checkpoint.
			select {
			case <-saver.wrote:
			case <-time.After(10 * time.Second):
				t.Fatal("fast's write was not saved while its sibling worked")
			}
			if !hasPending(t, saver, "log", `"fast"`) {
				t.Error("fast's write is not pending on the step's checkpoint")
			}
			_, putWrites := saver.counts()
			if putWrites != 1 {
				t.Errorf("%d PutWrites calls before slow finished, want 1 (fast's; the one-task steps' writes go with their checkpoints)", putWrites)
			}
			close(release)
			if err := <-done; !errors.Is(err, boom) {
				t.Fatalf("run error %v, want boom", err)
			}
			hist, err := cg.Pregel().GetStateHistory(ctx, checkpoints.Config{ThreadID: "t"}, engine.HistoryOptions{})
			if err != nil {
				t.Fatal(err)
			}
			frames, putWrites := saver.counts()
			if frames != len(hist) {
				t.Errorf("%d checkpoints saved in %d PutFrame calls, want one each", len(hist), frames)
			}
			// fast's writes in the step slow finished last (slow's went
			// with the checkpoint), and in the failed step fast's and the
			// error.
			if putWrites != 3 {
				t.Errorf("%d PutWrites calls, want 3", putWrites)
			}
			if !hasPending(t, saver, "log", `"fast"`) || !hasPending(t, saver, checkpoints.ErrorChannel, "") {
				t.Error("the failed step's checkpoint lacks fast's write or the error")
			}
		})
	}
}

// hasPending reports whether the thread's latest checkpoint has a
// pending write to channel (with that value, unless value is empty).
func hasPending(t *testing.T, saver checkpoints.Saver, channel, value string) bool {
	t.Helper()
	tup, err := saver.Get(context.Background(), checkpoints.Config{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if tup == nil {
		return false
	}
	for _, w := range tup.PendingWrites {
		if w.Channel == channel && (value == "" || string(w.Value) == value) {
			return true
		}
	}
	return false
}

// ctxSaver is a memory saver whose PutFrame fails once its context has
// ended, as a database saver's does.
type ctxSaver struct{ *checkpoints.Memory }

func (c ctxSaver) PutFrame(ctx context.Context, cfg checkpoints.Config, writes []checkpoints.TaskWrites, f *checkpoints.Frame, md checkpoints.Metadata) (checkpoints.Config, error) {
	if err := ctx.Err(); err != nil {
		return checkpoints.Config{}, err
	}
	return c.Memory.PutFrame(ctx, cfg, writes, f, md)
}

// A task that succeeded is not lost when its step's checkpoint cannot be
// saved (the run's context ended just as it returned): its writes are
// saved on the checkpoint before, and a resume does not run it again.
func TestLastTaskWritesOutliveAFailedCheckpoint(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := engine.NewStateGraph[roundState]()
	g.AddNode("work", func(_ context.Context, s roundState) (engine.Output, error) {
		cancel() // the caller gives up as the node returns
		return engine.Set("log", "done"), nil
	})
	g.AddEdge(engine.Start, "work")
	g.AddEdge("work", engine.End)
	saver := ctxSaver{checkpoints.NewMemory()}
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cg.Invoke(ctx, engine.Update{"n": 0}, &engine.RunOptions{ThreadID: "t", Durability: engine.DurabilitySync}); err == nil {
		t.Fatal("the run succeeded, want the cancelled save's error")
	}
	if !hasPending(t, saver, "log", `"done"`) {
		t.Error("work's write was lost with its step's checkpoint")
	}
}
