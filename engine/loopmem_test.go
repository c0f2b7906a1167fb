package engine_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

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
