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

// Sent tasks whose node has a conditional edge route in parallel, each on
// the state as its own writes left it.
func TestSentTasksRouteInParallel(t *testing.T) {
	t.Parallel()
	g := engine.NewStateGraph[sendState]()
	g.AddNode("plan", func(context.Context, sendState) (engine.Output, error) { return nil, nil })
	engine.AddNodeFunc(g, "work", func(_ context.Context, x int) (engine.Output, error) {
		return engine.Update{"results": x}, nil
	})
	g.AddNode("odd", func(context.Context, sendState) (engine.Output, error) { return engine.Update{"n": 1}, nil })
	g.AddEdge(engine.Start, "plan")
	g.AddConditionalEdges("plan", func(_ context.Context, s sendState) (engine.Route, error) {
		sends := make([]engine.Send, 20)
		for i := range sends {
			sends[i] = engine.Send{Node: "work", Arg: i}
		}
		return engine.SendTo(sends...), nil
	}, nil)
	g.AddConditionalEdges("work", func(_ context.Context, s sendState) (engine.Route, error) {
		// Each router sees the results before the step plus its own one.
		if len(s.Results) != 1 {
			return engine.Route{}, errors.New("router saw other tasks' writes")
		}
		if s.Results[0]%2 == 1 {
			return engine.To("odd"), nil
		}
		return engine.To(engine.End), nil
	}, nil)
	cg, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cg.Invoke(context.Background(), engine.Update{"n": 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != 20 || out.N != 1 {
		t.Fatalf("got %+v", out)
	}
}
