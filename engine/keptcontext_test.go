package engine_test

import (
	"context"
	"testing"

	"github.com/superstep-dev/superstep/engine"
)

type requestKey struct{}

// A node's context stays the context of its own run after the node
// returns, even while the same compiled graph runs again (for another
// request) on recycled tasks: its values and cancellation are its run's,
// and it no longer claims to belong to a node.
func TestKeptNodeContextStaysItsRuns(t *testing.T) {
	t.Parallel()
	kept := make(chan context.Context, 1)
	g := engine.NewStateGraph[counter]()
	g.AddNode("inc", func(ctx context.Context, s counter) (engine.Output, error) {
		select {
		case kept <- ctx: // the first run's node keeps its context
		default:
		}
		return engine.Set("n", s.N+1), nil
	})
	g.AddEdge(engine.Start, "inc").AddEdge("inc", engine.End)
	cg, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx1, cancel1 := context.WithCancel(context.WithValue(context.Background(), requestKey{}, "request-1"))
	if _, err := cg.Invoke(ctx1, engine.Update{"n": 0}, nil); err != nil {
		t.Fatal(err)
	}
	first := <-kept
	for range 3 {
		ctx2 := context.WithValue(context.Background(), requestKey{}, "request-2")
		if _, err := cg.Invoke(ctx2, engine.Update{"n": 0}, nil); err != nil {
			t.Fatal(err)
		}
		if v := first.Value(requestKey{}); v != "request-1" {
			t.Fatalf("the first run's node context reads %v during another run, want request-1", v)
		}
	}
	if first.Err() != nil {
		t.Fatalf("the first run's context is %v before its caller cancels it", first.Err())
	}
	cancel1()
	if first.Err() == nil {
		t.Fatal("cancelling the first run's caller context does not reach the kept node context")
	}
	if a := engine.Attempt(first); a != 0 {
		t.Fatalf("Attempt of a finished node's context = %d, want 0 (no node runs under it)", a)
	}
}
