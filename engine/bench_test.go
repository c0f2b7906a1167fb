package engine_test

import (
	"context"
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"

	"github.com/superstep-dev/superstep/engine"
)

// loopForm is how loop1000's node returns its update.
type loopForm int

const (
	loopWrites loopForm = iota // w.Set through engine.Writes
	loopSet                    // returns engine.Set
	loopMap                    // returns engine.Update
)

// loop1000 is the graph of BenchmarkLoop1000: one node increments a
// counter and routes back to itself until 1000; form says how the node
// writes the counter.
func loop1000(b *testing.B, form loopForm, saver checkpoints.Saver) *engine.Graph[counter] {
	g := engine.NewStateGraph[counter]()
	if form == loopWrites {
		g.AddNodeWrites("inc", func(_ context.Context, s counter, w *engine.Writes) error {
			w.Set("n", s.N+1)
			return nil
		})
	} else {
		g.AddNode("inc", incNode(form))
	}
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

// loopSupersteps is how many supersteps a run of loop1000 takes, each
// saving a checkpoint when the graph has a saver: the input (step -1),
// the step that starts inc, and inc's 1000 steps. Per-superstep figures
// divide a run by it; BenchmarkLoop1000Checkpointed checks it against the
// checkpoints its first run saved.
const loopSupersteps = 1002

// incNode is loop1000's node in the forms that return their update.
func incNode(form loopForm) func(context.Context, counter) (engine.Output, error) {
	return func(_ context.Context, s counter) (engine.Output, error) {
		if form == loopMap {
			return engine.Update{"n": s.N + 1}, nil
		}
		return engine.Set("n", s.N+1), nil
	}
}

// nodeAllocs is how many allocations loop1000's node makes in one run
// (its 1000 calls) by itself: the update it returns (engine.Set boxes a KV
// into Output, and the int into any above 255; the map form builds a
// map). The Writes form's own cost is the int's boxing, which passing it
// to a func(string, any) that keeps it measures (a Writes cannot be used
// outside its node's call).
func nodeAllocs(form loopForm) float64 {
	if form == loopWrites {
		return testing.AllocsPerRun(5, func() {
			for n := range 1000 {
				keepKV("n", n+1)
			}
		})
	}
	inc := incNode(form)
	return testing.AllocsPerRun(5, func() {
		for n := range 1000 {
			out, _ := inc(context.Background(), counter{N: n})
			outputSink = out
		}
	})
}

var (
	outputSink engine.Output
	kvSink     engine.KV
)

//go:noinline
func keepKV(key string, v any) { kvSink = engine.KV{Key: key, Value: v} }

// BenchmarkLoop1000: one node increments a counter (w.Set through
// engine.Writes) and routes back to itself until 1000; the metric is per
// superstep.
func BenchmarkLoop1000(b *testing.B) {
	benchLoop1000(b, loopWrites)
}

// BenchmarkLoop1000Set is BenchmarkLoop1000 with the node returning
// engine.Set("n", ...): the difference is the cost of boxing the update
// into an Output.
func BenchmarkLoop1000Set(b *testing.B) {
	benchLoop1000(b, loopSet)
}

// BenchmarkLoop1000UpdateMap is BenchmarkLoop1000 with the node returning
// engine.Update{"n": ...}: the difference is the cost of the map.
func BenchmarkLoop1000UpdateMap(b *testing.B) {
	benchLoop1000(b, loopMap)
}

func benchLoop1000(b *testing.B, form loopForm) {
	g := loop1000(b, form, nil)
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
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/loopSupersteps, "ns/superstep")
	// The engine's share of allocs/op: what the node's own update costs
	// is measured apart and taken out.
	node := nodeAllocs(form)
	b.ReportMetric(node/loopSupersteps, "node-allocs/superstep")
	b.ReportMetric((float64(after.Mallocs-before.Mallocs)/float64(b.N)-node)/loopSupersteps, "engine-allocs/superstep")
}

// BenchmarkLoop1000Checkpointed is BenchmarkLoop1000 (its Writes node)
// with the in-memory saver keeping full history, durability sync.
//
// The saver keeps every checkpoint, so a run of the benchmark grows the
// heap by about 560 B a superstep, and its time depends on how often the
// garbage collector runs meanwhile and on how much of that memory is new
// to the process: gc-cycles, gc-cpu-ns/superstep and faults/superstep (the
// kernel's first touches of a page, on unix) report them. Every run grows
// its heap from nothing (the collection before it frees the last run's
// saver), so each collects as often; the first in a process also touches
// every page first, where later ones reuse what the runtime has not yet
// given back, so the runs' spread is mostly the first run's page faults.
func BenchmarkLoop1000Checkpointed(b *testing.B) {
	benchCheckpointed(b, engine.DurabilitySync)
}

// BenchmarkLoop1000CheckpointedAsync is BenchmarkLoop1000Checkpointed in
// async durability, the default: the saves run in the background, in
// order, each lent a frame built in the buffers of a save that has
// returned (see asyncSave), so a superstep allocates what a synchronous
// one does.
func BenchmarkLoop1000CheckpointedAsync(b *testing.B) {
	benchCheckpointed(b, engine.DurabilityAsync)
}

func benchCheckpointed(b *testing.B, durability engine.Durability) {
	saver := checkpoints.NewMemory()
	cg := loop1000(b, loopWrites, saver)
	ctx := context.Background()
	in := engine.Update{"n": 0}
	b.ReportAllocs()
	gc := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(gc)
	cycles, gcCPU := gc[0].Value.Uint64(), gc[1].Value.Float64()
	faults := minorFaults()
	i := 0
	for b.Loop() {
		i++
		out, err := cg.Invoke(ctx, in, &engine.RunOptions{ThreadID: strconv.Itoa(i), Durability: durability})
		if err != nil || out.N != 1000 {
			b.Fatal(out, err)
		}
		if i == 1 {
			b.StopTimer()
			saved, err := saver.List(ctx, checkpoints.ListQuery{ThreadID: "1"}, checkpoints.ListOptions{Headers: true})
			if err != nil || len(saved) != loopSupersteps {
				b.Fatalf("a run saved %d checkpoints (%v), want %d", len(saved), err, loopSupersteps)
			}
			b.StartTimer()
		}
	}
	metrics.Read(gc)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/loopSupersteps, "ns/superstep")
	b.ReportMetric(float64(gc[0].Value.Uint64()-cycles), "gc-cycles")
	b.ReportMetric((gc[1].Value.Float64()-gcCPU)*1e9/float64(b.N)/loopSupersteps, "gc-cpu-ns/superstep")
	if faults >= 0 {
		b.ReportMetric(float64(minorFaults()-faults)/float64(b.N)/loopSupersteps, "faults/superstep")
	}
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
