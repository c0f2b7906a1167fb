package engine_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// StateOf on a tuple read from the saver is what GetState returns for the
// same checkpoint: for the head (a step stopped at an interrupt after a
// sibling finished, whose write shows) and for an older checkpoint.
func TestStateOfMatchesGetState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	saver := checkpoints.NewMemory()
	g := engine.NewStateGraph[logState]()
	g.AddNode("done", logNode("done"))
	g.AddNode("ask", func(ctx context.Context, _ logState) (engine.Output, error) {
		if _, err := engine.Interrupt(ctx, "ok?"); err != nil {
			return nil, err
		}
		return engine.Set("log", "asked"), nil
	})
	g.AddEdge(engine.Start, "done").AddEdge(engine.Start, "ask")
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	cfg := checkpoints.Config{ThreadID: "t"}
	if _, err := cg.Invoke(ctx, engine.Update{"log": []string{"in"}}, &engine.RunOptions{ThreadID: "t"}); !errors.Is(err, engine.ErrInterrupted) {
		t.Fatalf("want an interrupt, got %v", err)
	}
	p := cg.Pregel()
	head, err := saver.Get(ctx, cfg)
	if err != nil || head == nil {
		t.Fatal(head, err)
	}
	older := *head.ParentConfig
	for _, c := range []struct {
		name string
		cfg  checkpoints.Config
		head bool
	}{{"head", cfg, true}, {"older", older, false}, {"head by id", head.Config, false}} {
		want, err := p.GetState(ctx, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		tup, err := saver.Get(ctx, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.StateOf(tup, c.head)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Values, want.Values) || !reflect.DeepEqual(got.Next, want.Next) || got.Config != want.Config {
			t.Errorf("%s: StateOf = %v next %v, GetState = %v next %v", c.name, got.Values, got.Next, want.Values, want.Next)
		}
	}
	if _, err := p.StateOf(nil, false); !errors.Is(err, checkpoints.ErrInvalidConfig) {
		t.Errorf("StateOf(nil): got %v", err)
	}
}
