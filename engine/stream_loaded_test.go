package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// Issue 13, item 2: a run that continues from a saved checkpoint (here a
// Command resume after an interrupt) first reports the loaded checkpoint
// again, as upstream's first tick does: a "checkpoints" part and a debug
// "checkpoint" event with its next tasks, before anything runs.
func TestResumeReportsTheLoadedCheckpointFirst(t *testing.T) {
	t.Parallel()
	g := engine.NewStateGraph[noteState]()
	g.AddNode("ask", func(ctx context.Context, s noteState) (engine.Output, error) {
		a, err := engine.Interrupt(ctx, "ok?")
		if err != nil {
			return nil, err
		}
		return engine.Update{"answer": a}, nil
	})
	g.AddEdge(engine.Start, "ask")
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	opts := &engine.RunOptions{ThreadID: "t"}
	if _, err := cg.Invoke(ctx, engine.Update{"note": "x"}, opts); err == nil {
		t.Fatal("want the interrupt")
	}
	paused, err := cg.GetState(ctx, checkpoints.Config{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	var firstCkpt, firstDebug map[string]any
	var kinds []string
	for part, err := range cg.Stream(ctx, engine.Command{Resume: "yes"}, opts, engine.StreamCheckpoints, engine.StreamDebug, engine.StreamTasks) {
		if err != nil {
			t.Fatal(err)
		}
		m, _ := part.Data.(map[string]any)
		switch {
		case part.Mode == engine.StreamCheckpoints && firstCkpt == nil:
			firstCkpt = m
		case part.Mode == engine.StreamDebug && m["type"] == "checkpoint" && firstDebug == nil:
			firstDebug = m["payload"].(map[string]any)
		}
		kinds = append(kinds, string(part.Mode))
	}
	if len(kinds) == 0 || kinds[0] != string(engine.StreamCheckpoints) {
		t.Fatalf("parts %v: the loaded checkpoint must come before anything runs", kinds)
	}
	id := func(m map[string]any) string {
		return fmt.Sprint(m["config"].(map[string]any)["configurable"].(map[string]any)["checkpoint_id"])
	}
	for name, m := range map[string]map[string]any{"checkpoints part": firstCkpt, "debug checkpoint": firstDebug} {
		if m == nil || id(m) != paused.Config.CheckpointID || fmt.Sprint(m["next"]) != "[ask]" {
			t.Fatalf("first %s: %v; want the paused checkpoint %s with next [ask]", name, m, paused.Config.CheckpointID)
		}
	}
}
