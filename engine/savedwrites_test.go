package engine_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

type roundState struct {
	N   int      `json:"n"`
	Log []string `json:"log" reduce:"append"`
}

// plainSaver hides the memory saver's StepSaver and FrameSaver forms: the
// engine then saves each task's writes with PutWrites as it finishes.
type plainSaver struct{ checkpoints.Saver }

// Every task's writes are saved once, with the values it wrote, in every
// synchronous form a saver takes, however many supersteps the run takes
// (the loop reuses its buffers from step to step). Thread after thread
// runs on the same compiled graph, whose runs share their buffers.
func TestSyncSavedWritesAreEachStepsOwn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		saver checkpoints.Saver
	}{
		{"frames", checkpoints.NewMemory()},
		{"puts", plainSaver{checkpoints.NewMemory()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := engine.NewStateGraph[roundState]()
			g.AddNode("tick", func(_ context.Context, s roundState) (engine.Output, error) {
				return engine.Set("n", s.N+1), nil
			})
			for _, name := range []string{"a", "b"} {
				g.AddNode(name, func(_ context.Context, s roundState) (engine.Output, error) {
					return engine.Set("log", fmt.Sprintf("%s%d", name, s.N)), nil
				})
			}
			g.AddEdge(engine.Start, "tick")
			g.AddConditionalEdges("tick", func(_ context.Context, s roundState) (engine.Route, error) {
				if s.N > 4 {
					return engine.To(engine.End), nil
				}
				return engine.To("a", "b"), nil
			}, nil)
			g.AddJoin([]string{"a", "b"}, "tick")
			cg, err := g.Compile(engine.CompileOptions{Checkpointer: tc.saver})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for _, thread := range []string{"t1", "t2"} {
				out, err := cg.Invoke(ctx, engine.Update{"n": 0}, &engine.RunOptions{ThreadID: thread, Durability: engine.DurabilitySync})
				if err != nil {
					t.Fatal(err)
				}
				if len(out.Log) != 8 {
					t.Fatalf("log = %v, want 8 entries", out.Log)
				}
				history, err := tc.saver.List(ctx, checkpoints.ListQuery{ThreadID: thread}, checkpoints.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				var saved []string
				for _, tup := range history {
					for _, w := range tup.PendingWrites {
						if w.Channel == "log" {
							saved = append(saved, string(w.Value))
						}
					}
				}
				slices.Sort(saved)
				want := []string{`"a1"`, `"a2"`, `"a3"`, `"a4"`, `"b1"`, `"b2"`, `"b3"`, `"b4"`}
				if !slices.Equal(saved, want) {
					t.Fatalf("thread %s: saved log writes = %v, want %v", thread, saved, want)
				}
			}
		})
	}
}
