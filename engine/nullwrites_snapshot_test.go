package engine_test

import (
	"context"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

type noteState struct {
	Note   string `json:"note"`
	Answer string `json:"answer"`
}

// Issue 13, item 4: a Command{Resume, Update} saves its update as a write
// of the null task on the checkpoint it resumes; as upstream, every
// snapshot of that checkpoint (by id, and in the history) shows the
// update applied, not only the run that followed.
func TestSnapshotsApplyTheNullTasksWrites(t *testing.T) {
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
	if _, err := cg.Invoke(ctx, engine.Update{"note": "draft"}, opts); err == nil {
		t.Fatal("want the interrupt")
	}
	paused, err := cg.GetState(ctx, checkpoints.Config{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cg.Invoke(ctx, engine.Command{Resume: "yes", Update: engine.Update{"note": "edited"}}, opts)
	if err != nil || out.Note != "edited" || out.Answer != "yes" {
		t.Fatalf("resumed run: %+v, %v", out, err)
	}
	at, err := cg.GetState(ctx, paused.Config)
	if err != nil || at.Values["note"] != "edited" {
		t.Fatalf("the paused checkpoint by id: %v, %v; want the Command's update applied", at.Values, err)
	}
	hist, err := cg.GetStateHistory(ctx, checkpoints.Config{ThreadID: "t"}, engine.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range hist {
		if s.Config.CheckpointID == paused.Config.CheckpointID && s.Values["note"] != "edited" {
			t.Fatalf("the paused checkpoint in the history: %v; want the Command's update applied", s.Values)
		}
	}
}
