package engine_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"

	"github.com/superstep-dev/superstep/engine"
)

// loop1000 is the graph of BenchmarkLoop1000: one node increments a
// counter and routes back to itself until 1000. mapUpdate writes the
// counter with an Update map instead of Set.
func loop1000(b *testing.B, mapUpdate bool, saver checkpoints.Saver) *engine.Graph[counter] {
	g := engine.NewStateGraph[counter]()
	g.AddNode("inc", incNode(mapUpdate))
	g.AddEdge(engine.Start, "inc")
	g.AddConditionalEdges("inc", func(_ context.Context, s counter) (engine.Route, error) {
		if s.N >= 1000 {
			return engine.To(engine.End), nil
		}
		return engine.To("inc"), nil
	}, nil)
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		b.Fatal(err)
	}
	return cg
}

// incNode is loop1000's node.
func incNode(mapUpdate bool) func(context.Context, counter) (engine.Output, error) {
	return func(_ context.Context, s counter) (engine.Output, error) {
		if mapUpdate {
			return engine.Update{"n": s.N + 1}, nil
		}
		return engine.Set("n", s.N+1), nil
	}
}

// nodeAllocs is how many allocations loop1000's node makes in one run
// (its 1000 calls) by itself: the update it returns (engine.Set boxes a KV
// into Output, and the int into any above 255).
func nodeAllocs(mapUpdate bool) float64 {
	inc := incNode(mapUpdate)
	return testing.AllocsPerRun(5, func() {
		for n := range 1000 {
			out, _ := inc(context.Background(), counter{N: n})
			outputSink = out
		}
	})
}

var outputSink engine.Output

// BenchmarkLoop1000: one node increments a counter (engine.Set) and
// routes back to itself until 1000; the metric is per superstep.
func BenchmarkLoop1000(b *testing.B) {
	benchLoop1000(b, false)
}

// BenchmarkLoop1000UpdateMap is BenchmarkLoop1000 with the node returning
// engine.Update{"n": ...}: the difference is the cost of the map.
func BenchmarkLoop1000UpdateMap(b *testing.B) {
	benchLoop1000(b, true)
}

func benchLoop1000(b *testing.B, mapUpdate bool) {
	g := loop1000(b, mapUpdate, nil)
	ctx := context.Background()
	in := engine.Update{"n": 0}
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		out, err := g.Invoke(ctx, in, nil)
		if err != nil || out.N != 1000 {
			b.Fatal(out, err)
		}
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1001, "ns/superstep")
	// The engine's share of allocs/op: what the node's own update costs
	// is measured apart and taken out.
	node := nodeAllocs(mapUpdate)
	b.ReportMetric(node/1001, "node-allocs/superstep")
	b.ReportMetric((float64(after.Mallocs-before.Mallocs)/float64(b.N)-node)/1001, "engine-allocs/superstep")
}

// BenchmarkLoop1000Checkpointed is BenchmarkLoop1000 with the in-memory
// saver keeping full history, durability sync.
func BenchmarkLoop1000Checkpointed(b *testing.B) {
	cg := loop1000(b, false, checkpoints.NewMemory())
	ctx := context.Background()
	in := engine.Update{"n": 0}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		out, err := cg.Invoke(ctx, in, &engine.RunOptions{ThreadID: strconv.Itoa(i), Durability: engine.DurabilitySync})
		if err != nil || out.N != 1000 {
			b.Fatal(out, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1001, "ns/superstep")
}

type fanState struct {
	Sum   int   `json:"sum"`
	Parts []int `json:"parts" reduce:"append"`
}

// BenchmarkFanOut100: START → 100 parallel trivial nodes → one join node
// summing them.
func BenchmarkFanOut100(b *testing.B) {
	g := engine.NewStateGraph[fanState]()
	var names []string
	for i := range 100 {
		name := "n" + strconv.Itoa(i)
		names = append(names, name)
		g.AddNode(name, func(context.Context, fanState) (engine.Output, error) { return engine.Set("parts", i), nil })
		g.AddEdge(engine.Start, name)
	}
	g.AddNode("total", func(_ context.Context, s fanState) (engine.Output, error) {
		t := 0
		for _, p := range s.Parts {
			t += p
		}
		return engine.Set("sum", t), nil
	})
	g.AddJoin(names, "total")
	cg, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := cg.Invoke(ctx, engine.Update{"sum": 0}, nil)
		if err != nil || out.Sum != 4950 {
			b.Fatal(out, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/run")
}

type sendState struct {
	N       int   `json:"n"`
	Results []int `json:"results" reduce:"append"`
}

// BenchmarkSend100: a node Sends 100 tasks whose results are reduced.
func BenchmarkSend100(b *testing.B) {
	g := engine.NewStateGraph[sendState]()
	g.AddNode("plan", func(context.Context, sendState) (engine.Output, error) { return nil, nil })
	engine.AddNodeFunc(g, "work", func(_ context.Context, x int) (engine.Output, error) {
		return engine.Set("results", x*2), nil
	})
	g.AddEdge(engine.Start, "plan")
	g.AddConditionalEdges("plan", func(_ context.Context, s sendState) (engine.Route, error) {
		sends := make([]engine.Send, s.N)
		for i := range sends {
			sends[i] = engine.Send{Node: "work", Arg: i}
		}
		return engine.SendTo(sends...), nil
	}, nil)
	cg, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := cg.Invoke(ctx, engine.Update{"n": 100}, nil)
		if err != nil || len(out.Results) != 100 {
			b.Fatal(out, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/run")
}

// BenchmarkChain10: a 10-node chain appending to a list reducer.
func BenchmarkChain10(b *testing.B) {
	g := engine.NewStateGraph[logState]()
	prev := engine.Start
	for i := range 10 {
		name := "n" + strconv.Itoa(i)
		g.AddNode(name, func(context.Context, logState) (engine.Output, error) { return engine.Set("log", name), nil })
		g.AddEdge(prev, name)
		prev = name
	}
	cg, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := cg.Invoke(ctx, engine.Update{"log": []string{}}, nil)
		if err != nil || len(out.Log) != 10 {
			b.Fatal(out, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/run")
}
