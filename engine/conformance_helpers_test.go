package engine_test

// Shared fixtures of the conformance suite: ports of the cases in
// reference/langgraph-semantics.md §11 (upstream LangGraph's test_pregel.py,
// test_retry.py, test_large_cases.py). Each test names the case it ports.

import (
	"context"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/engine/channels"
)

// recorder collects a run's events. The engine serialises listener calls,
// but the mutex keeps the recorder safe to read from the test goroutine.
type recorder struct {
	mu     sync.Mutex
	events []engine.Event
}

func (r *recorder) listen(e engine.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = nil
}

// eventsOf returns the recorded events of type E, in order.
func eventsOf[E engine.Event](r *recorder) []E {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []E
	for _, e := range r.events {
		if x, ok := e.(E); ok {
			out = append(out, x)
		}
	}
	return out
}

// finishedBySteps groups the tasks that finished (ran or came from a
// cache) by superstep, names sorted within a step, hidden START left out.
// Upstream's "updates" stream orders a step's tasks by completion time
// (its tests force it with sleeps); the set per step is what the barrier
// guarantees, so that is what these tests compare.
func finishedBySteps(r *recorder) [][]string {
	byStep := map[int][]string{}
	for _, f := range eventsOf[engine.TaskFinished](r) {
		if f.Task.Name == engine.Start {
			continue
		}
		byStep[f.Task.Step] = append(byStep[f.Task.Step], f.Task.Name)
	}
	steps := make([]int, 0, len(byStep))
	for s := range byStep {
		steps = append(steps, s)
	}
	sort.Ints(steps)
	out := make([][]string, 0, len(steps))
	for _, s := range steps {
		names := byStep[s]
		slices.Sort(names)
		out = append(out, names)
	}
	return out
}

// startedOf returns the TaskStarted events of the named node.
func startedOf(r *recorder, name string) []engine.TaskStarted {
	var out []engine.TaskStarted
	for _, s := range eventsOf[engine.TaskStarted](r) {
		if s.Task.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// finishedOf returns the TaskFinished events of the named node.
func finishedOf(r *recorder, name string) []engine.TaskFinished {
	var out []engine.TaskFinished
	for _, f := range eventsOf[engine.TaskFinished](r) {
		if f.Task.Name == name {
			out = append(out, f)
		}
	}
	return out
}

func mustCompile[S any](t *testing.T, g *engine.StateGraph[S], opts engine.CompileOptions) *engine.Graph[S] {
	t.Helper()
	cg, err := g.Compile(opts)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return cg
}

func mustPregel(t *testing.T, cfg engine.PregelConfig) *engine.Pregel {
	t.Helper()
	p, err := engine.NewPregel(cfg)
	if err != nil {
		t.Fatalf("NewPregel: %v", err)
	}
	return p
}

// mustNode builds a low-level node and names it (names are the keys of
// upstream's nodes dict, so the builder does not take one).
func mustNode(t *testing.T, name string, b *engine.NodeBuilder) *engine.Node {
	t.Helper()
	n, err := b.Build()
	if err != nil {
		t.Fatalf("build node %q: %v", name, err)
	}
	n.Name = name
	return n
}

// abGraph is START→node_a→node_b on a log, on a memory saver; bCalls
// counts node_b's runs.
func abGraph(t *testing.T) (*engine.Graph[logState], *atomic.Int32) {
	var bCalls atomic.Int32
	g := engine.NewStateGraph[logState]()
	g.AddNode("node_a", logNode("a"))
	g.AddNode("node_b", func(context.Context, logState) (engine.Output, error) {
		bCalls.Add(1)
		return engine.Update{"log": "b"}, nil
	})
	g.AddEdge(engine.Start, "node_a").AddEdge("node_a", "node_b")
	return mustCompile(t, g, engine.CompileOptions{Checkpointer: checkpoints.NewMemory()}), &bCalls
}

// sortedAdd is upstream's sorted_add reducer of the fan-out cases: append,
// then sort.
var sortedAdd = channels.ReducerFunc(func(cur, next []string) []string {
	out := slices.Concat(cur, next)
	slices.Sort(out)
	return out
})

// docsState is the State of upstream's test_in_one_fan_out_* cases.
type docsState struct {
	Query  string   `json:"query"`
	Answer string   `json:"answer"`
	Docs   []string `json:"docs"`
}

// itemsState stands in for upstream's root state Annotated[list, add]: a
// Go StateGraph state is a struct, so the list is its one field.
type itemsState struct {
	Items []string `json:"items" reduce:"append"`
}
