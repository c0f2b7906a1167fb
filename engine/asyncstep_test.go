package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"

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
	return c.Memory.PutWrites(ctx, cfg, writes, taskID, taskPath)
}

func (c *callCounter) counts() (frames, putWrites int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frames, c.putWrite
}

// In async durability (the default) a superstep is saved as it is in
// sync: its writes and the checkpoint after them in one call, so one
// transaction on Postgres, not a PutWrites per task and then a Put. The
// writes of a task whose sibling failed still reach the checkpoint they
// belong to, after it, as pending writes a resume skips the task with.
func TestAsyncSavesAStepInOneCall(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	g := engine.NewStateGraph[roundState]()
	g.AddNode("tick", func(_ context.Context, s roundState) (engine.Output, error) {
		return engine.Set("n", s.N+1), nil
	})
	g.AddNode("good", func(_ context.Context, s roundState) (engine.Output, error) {
		return engine.Set("log", "good"), nil
	})
	g.AddNode("bad", func(_ context.Context, s roundState) (engine.Output, error) {
		if s.N >= 3 {
			return nil, boom
		}
		return engine.Set("log", "bad"), nil
	})
	g.AddEdge(engine.Start, "tick")
	g.AddEdge("tick", "good")
	g.AddEdge("tick", "bad")
	g.AddJoin([]string{"good", "bad"}, "tick")
	saver := &callCounter{Memory: checkpoints.NewMemory()}
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = cg.Invoke(ctx, engine.Update{"n": 0}, &engine.RunOptions{ThreadID: "t", Durability: engine.DurabilityAsync})
	if !errors.Is(err, boom) {
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
	// Only the failed step's writes are saved on their own: the good
	// task's, and the bad task's error.
	if putWrites != 2 {
		t.Errorf("%d PutWrites calls, want 2 (the failed step's good write and its error)", putWrites)
	}
	tup, err := saver.Get(ctx, checkpoints.Config{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	var good, failed bool
	for _, w := range tup.PendingWrites {
		switch {
		case w.Channel == "log" && string(w.Value) == `"good"`:
			good = true
		case w.Channel == checkpoints.ErrorChannel:
			failed = true
		}
	}
	if !good || !failed {
		t.Errorf("the failed step's checkpoint has pending writes %+v: want the good task's write and the error", tup.PendingWrites)
	}
}
