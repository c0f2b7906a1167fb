package engine_test

import (
	"context"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// Issue 13, item 1: a graph compiled without a checkpointer streams no
// "checkpoints" parts and no "checkpoint" debug events (upstream emits
// none); with one, both come.
func TestStreamNoCheckpointPartsWithoutACheckpointer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		saver checkpoints.Saver
		want  bool
	}{{"without a checkpointer", nil, false}, {"with one", checkpoints.NewMemory(), true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := engine.NewStateGraph[callState]()
			g.AddNode("a", func(context.Context, callState) (engine.Output, error) { return engine.Update{"n": 1}, nil })
			g.AddEdge(engine.Start, "a")
			cg, err := g.Compile(engine.CompileOptions{Checkpointer: tc.saver})
			if err != nil {
				t.Fatal(err)
			}
			checkpointParts, debugCheckpoints, debugTasks := 0, 0, 0
			for part, err := range cg.Stream(context.Background(), engine.Update{}, &engine.RunOptions{ThreadID: "t"}, engine.StreamCheckpoints, engine.StreamDebug) {
				if err != nil {
					t.Fatal(err)
				}
				switch part.Mode {
				case engine.StreamCheckpoints:
					checkpointParts++
				case engine.StreamDebug:
					switch part.Data.(map[string]any)["type"] {
					case "checkpoint":
						debugCheckpoints++
					case "task":
						debugTasks++
					}
				}
			}
			if got := checkpointParts > 0 && debugCheckpoints > 0; got != tc.want || (!tc.want && checkpointParts+debugCheckpoints != 0) {
				t.Fatalf("checkpoints parts %d, debug checkpoint events %d; want them: %v", checkpointParts, debugCheckpoints, tc.want)
			}
			if debugTasks == 0 {
				t.Fatal("no debug task events: the run streamed nothing")
			}
		})
	}
}
