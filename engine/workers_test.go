package engine_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/engine"
)

// The tasks of one superstep all run at the same time, however many there
// are: here each of 64 nodes blocks until every one of them has started,
// which only finishes if none waits for a sibling to end first (as
// blocking I/O-bound nodes would).
func TestStepTasksAllRunAtOnce(t *testing.T) {
	t.Parallel()
	const n = 64
	var started atomic.Int32
	all := make(chan struct{})
	g := engine.NewStateGraph[fanState]()
	for i := range n {
		name := "n" + strconv.Itoa(i)
		g.AddNode(name, func(ctx context.Context, _ fanState) (engine.Output, error) {
			if started.Add(1) == n {
				close(all)
			}
			select {
			case <-all:
				return engine.Update{"parts": i}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
		g.AddEdge(engine.Start, name)
	}
	cg, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 3 { // again, on reused workers
		started.Store(0)
		all = make(chan struct{})
		out, err := cg.Invoke(ctx, engine.Update{"sum": 0}, nil)
		if err != nil {
			t.Fatalf("only %d of %d tasks started together: %v", started.Load(), n, err)
		}
		if len(out.Parts) != n {
			t.Fatalf("got %d parts, want %d", len(out.Parts), n)
		}
	}
}

// The first failure of a step cancels its siblings: blocked nodes see
// their context end, and the run reports the failure, not the
// cancellation.
func TestStepFailureCancelsSiblings(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	g := engine.NewStateGraph[fanState]()
	for i := range 8 {
		name := "wait" + strconv.Itoa(i)
		g.AddNode(name, func(ctx context.Context, _ fanState) (engine.Output, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
		g.AddEdge(engine.Start, name)
	}
	g.AddNode("fail", func(context.Context, fanState) (engine.Output, error) { return nil, boom })
	g.AddEdge(engine.Start, "fail")
	cg, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = cg.Invoke(ctx, engine.Update{"sum": 0}, nil)
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want the failing node's error", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the run only ended at the test's deadline")
	}
}
