package engine_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// A checkpoint is saved with its next tasks, but a cached node's Key (the
// user's code) is called only when its task is about to run, not for the
// step a breakpoint stops before.
func TestNextTasksAreNamedWithoutComputingCacheKeys(t *testing.T) {
	t.Parallel()
	var keys atomic.Int32
	g := engine.NewStateGraph[logState]()
	g.AddNode("a", func(context.Context, logState) (engine.Output, error) { return engine.Set("log", "a"), nil })
	g.AddNode("b", func(context.Context, logState) (engine.Output, error) { return engine.Set("log", "b"), nil },
		engine.WithCache(engine.CachePolicy{Key: func(any) ([]byte, error) { keys.Add(1); return []byte("k"), nil }}))
	g.AddEdge(engine.Start, "a").AddEdge("a", "b")
	saver := checkpoints.NewMemory()
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: saver, Cache: cache.NewMemory(nil), InterruptAfter: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	opts := &engine.RunOptions{ThreadID: "t", Durability: engine.DurabilitySync}
	if _, err := cg.Invoke(ctx, engine.Update{"log": "in"}, opts); err == nil {
		t.Fatal("the run did not stop after a")
	}
	head, err := saver.Get(ctx, checkpoints.Config{ThreadID: "t"})
	if err != nil || head == nil || len(head.Checkpoint.Next) != 1 || head.Checkpoint.Next[0] != "b" {
		t.Fatalf("head: %+v, %v; want it to name b next", head, err)
	}
	if n := keys.Load(); n != 0 {
		t.Fatalf("b's cache key was computed %d times by a run that stopped before b", n)
	}
	if _, err := cg.Invoke(ctx, nil, opts); err != nil {
		t.Fatal(err)
	}
	if n := keys.Load(); n != 1 {
		t.Fatalf("b's cache key was computed %d times in all, want once (when b ran)", n)
	}
}
