package engine_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"weak"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// Runs of one compiled graph reuse each other's buffers; concurrent and
// repeated runs must still never see each other's state, and an output
// returned earlier must not change when later runs reuse the memory.
func TestRepeatedRunsAreIndependent(t *testing.T) {
	t.Parallel()
	g := engine.NewStateGraph[fanState]()
	var names []string
	for i := range 5 {
		name := "n" + strconv.Itoa(i)
		names = append(names, name)
		g.AddNode(name, func(_ context.Context, s fanState) (engine.Output, error) {
			return engine.Update{"parts": s.Sum*10 + i}, nil
		})
		g.AddEdge(engine.Start, name)
	}
	g.AddNode("total", func(_ context.Context, s fanState) (engine.Output, error) {
		t := 0
		for _, p := range s.Parts {
			t += p
		}
		return engine.Update{"sum": t}, nil
	})
	g.AddJoin(names, "total")
	cg, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := func(in int) (parts []int, sum int) {
		for i := range 5 {
			parts = append(parts, in*10+i)
			sum += in*10 + i
		}
		return parts, sum
	}
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var kept []fanState
			for r := range 25 {
				in := w*100 + r
				out, err := cg.Invoke(context.Background(), engine.Update{"sum": in}, nil)
				if err != nil {
					errs <- err.Error()
					return
				}
				kept = append(kept, out)
			}
			for r, out := range kept {
				parts, sum := want(w*100 + r)
				if out.Sum != sum || len(out.Parts) != 5 {
					errs <- "run " + strconv.Itoa(w*100+r) + ": got sum " + strconv.Itoa(out.Sum) + ", want " + strconv.Itoa(sum)
					return
				}
				for i := range parts {
					if out.Parts[i] != parts[i] {
						errs <- "run " + strconv.Itoa(w*100+r) + ": parts changed after later runs"
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

type staleState struct {
	X   int      `json:"x"`
	Log []string `json:"log" reduce:"append"`
}

// A run hands its emptied channels to the next run of the graph: a value
// or a join's arrivals left by a run that stopped must not reach the
// next one.
func TestNextRunStartsEmpty(t *testing.T) {
	t.Parallel()
	g := engine.NewStateGraph[staleState]()
	for _, name := range []string{"a", "m", "b"} {
		g.AddNode(name, func(context.Context, staleState) (engine.Output, error) { return engine.Set("log", name), nil })
	}
	g.AddNode("c", func(_ context.Context, s staleState) (engine.Output, error) {
		return engine.Set("log", "c after "+strings.Join(s.Log, ",")), nil
	})
	g.AddEdge(engine.Start, "a").AddEdge(engine.Start, "m").AddEdge("m", "b")
	g.AddJoin([]string{"a", "b"}, "c")
	saver := checkpoints.NewMemory()
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The first run stops before c: x holds 5 and the join has seen a and b.
	_, err = cg.Invoke(ctx, engine.Update{"x": 5}, &engine.RunOptions{ThreadID: "first", InterruptBefore: []string{"c"}})
	if !errors.Is(err, engine.ErrInterrupted) {
		t.Fatalf("first run: %v, want an interrupt before c", err)
	}
	out, err := cg.Invoke(ctx, engine.Update{"log": []string{}}, &engine.RunOptions{ThreadID: "second"})
	if err != nil {
		t.Fatal(err)
	}
	if out.X != 0 {
		t.Errorf("second run's x = %d, want 0 (only the first run wrote it)", out.X)
	}
	if want := []string{"a", "m", "b", "c after a,m,b"}; !slices.Equal(out.Log, want) {
		t.Errorf("second run's log = %q, want %q", out.Log, want)
	}
	// A join left complete would have planned c at the second run's
	// input, where new input discards what was pending, marking c's
	// trigger seen.
	history, err := saver.List(ctx, checkpoints.ListQuery{ThreadID: "second"}, checkpoints.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	input := history[len(history)-1]
	if seen, ok := input.Checkpoint.VersionsSeen["c"]; ok {
		t.Errorf("second run's input checkpoint has versions seen for c: %v (nothing had run c)", seen)
	}
}

// dropped is the state of the graph TestADroppedGraphIsCollectedAtTheNextCollection
// drops: a value channel and a reduced one.
type dropped struct {
	N    int   `json:"n"`
	Seen []int `json:"seen" reduce:"append"`
}

// A program that drops a compiled graph and its saver gets their memory
// back at the next collection: the buffers a graph keeps for its next run
// (its pool, which the runtime holds on to until a collection empties it)
// must not hold the graph, and with it every checkpoint its saver stored.
// Not parallel: it asks whether one collection frees them, and a
// collection another test's runs started in between would free them too.
func TestADroppedGraphIsCollectedAtTheNextCollection(t *testing.T) {
	graph, saver := func() (weak.Pointer[engine.Graph[dropped]], weak.Pointer[checkpoints.Memory]) {
		saver := checkpoints.NewMemory()
		g := engine.NewStateGraph[dropped]()
		g.AddNode("inc", func(_ context.Context, s dropped) (engine.Output, error) {
			return engine.Update{"n": s.N + 1, "seen": []int{s.N}}, nil
		})
		g.AddEdge(engine.Start, "inc")
		g.AddConditionalEdges("inc", func(_ context.Context, s dropped) (engine.Route, error) {
			if s.N >= 10 {
				return engine.To(engine.End), nil
			}
			return engine.To("inc"), nil
		}, nil)
		cg, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 { // the second and third runs take the first's buffers
			out, err := cg.Invoke(context.Background(), engine.Update{"n": 0}, &engine.RunOptions{ThreadID: strconv.Itoa(i)})
			if err != nil || out.N != 10 || len(out.Seen) != 10 {
				t.Fatalf("run %d: %+v, %v", i, out, err)
			}
		}
		return weak.Make(cg), weak.Make(saver)
	}()
	runtime.GC()
	if graph.Value() != nil || saver.Value() != nil {
		t.Fatalf("after a collection, the dropped graph is still alive: %t, and its saver: %t", graph.Value() != nil, saver.Value() != nil)
	}
}
