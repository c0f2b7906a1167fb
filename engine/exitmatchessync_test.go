package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// durabilityOutcome is what a scenario did: each run's result and the
// calls per node.
type durabilityOutcome struct {
	results []string
	calls   map[string]int
}

// nodeCalls counts each node's calls.
type nodeCalls struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *nodeCalls) add(n string) { c.mu.Lock(); c.m[n]++; c.mu.Unlock() }

// describeRun says how a run ended, alike whatever the durability: its
// interrupts' values, its error, or its log (sorted: parallel tasks
// append in any order).
func describeRun(out logState, err error) string {
	var in *engine.Interrupted
	if errors.As(err, &in) {
		vals := []string{}
		for _, i := range in.Interrupts {
			vals = append(vals, fmt.Sprint(i.Value))
		}
		slices.Sort(vals)
		return fmt.Sprintf("interrupted %v before %v after %v", vals, in.Before, in.After)
	}
	if err != nil {
		return "error " + err.Error()
	}
	l := slices.Clone(out.Log)
	slices.Sort(l)
	return fmt.Sprint(l)
}

// compareExitWithSync runs the graph build makes through the runs inputs
// gives, under sync and then exit durability, each on a fresh memory
// saver, and fails unless both end alike and call each node as often.
func compareExitWithSync(t *testing.T, build func(c *nodeCalls) *engine.StateGraph[logState], inputs func(*engine.Graph[logState], *engine.RunOptions) []func() (logState, error)) {
	t.Helper()
	res := map[engine.Durability]durabilityOutcome{}
	for _, d := range []engine.Durability{engine.DurabilitySync, engine.DurabilityExit} {
		c := &nodeCalls{m: map[string]int{}}
		cg := mustCompile(t, build(c), engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
		opts := &engine.RunOptions{ThreadID: "t", Durability: d}
		var o durabilityOutcome
		for _, step := range inputs(cg, opts) {
			out, err := step()
			o.results = append(o.results, describeRun(out, err))
		}
		o.calls = c.m
		res[d] = o
	}
	s, e := res[engine.DurabilitySync], res[engine.DurabilityExit]
	if !slices.Equal(s.results, e.results) || fmt.Sprint(s.calls) != fmt.Sprint(e.calls) {
		t.Errorf("sync: %v %v\nexit: %v %v", s.results, s.calls, e.results, e.calls)
	}
}

// countedNode appends its name to the log, counted in c.
func countedNode(c *nodeCalls, name string) func(context.Context, logState) (engine.Output, error) {
	return func(context.Context, logState) (engine.Output, error) {
		c.add(name)
		return engine.Update{"log": name}, nil
	}
}

// countedAsker asks "name?" and logs "name:answer", counted in c.
func countedAsker(c *nodeCalls, name string) func(context.Context, logState) (engine.Output, error) {
	return func(ctx context.Context, _ logState) (engine.Output, error) {
		c.add(name)
		v, err := engine.Interrupt(ctx, name+"?")
		if err != nil {
			return nil, err
		}
		return engine.Update{"log": name + ":" + fmt.Sprint(v)}, nil
	}
}

// resumeAll answers every pending interrupt of thread t with answer and
// the question.
func resumeAll(cg *engine.Graph[logState], opts *engine.RunOptions, answer string) (logState, error) {
	st, err := cg.GetState(context.Background(), checkpoints.Config{ThreadID: "t"})
	if err != nil {
		return logState{}, err
	}
	m := map[string]any{}
	for _, i := range st.Interrupts {
		m[i.ID] = answer + fmt.Sprint(i.Value)
	}
	return cg.Invoke(context.Background(), engine.Command{Resume: m}, opts)
}

// Exit durability saves only when a run stops, yet a thread must do the
// same under it as under sync durability: interrupts beside finished
// tasks, in a subgraph, beside a failure, a Command goto and a Send.
func TestExitDurabilityMatchesSync(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("subgraph interrupt beside a finished task", func(t *testing.T) {
		t.Parallel()
		compareExitWithSync(t, func(c *nodeCalls) *engine.StateGraph[logState] {
			inner := engine.NewStateGraph[logState]()
			inner.AddNode("x", countedAsker(c, "x")).AddNode("y", countedNode(c, "y"))
			inner.AddEdge(engine.Start, "x").AddEdge(engine.Start, "y")
			sub, err := inner.Compile(engine.CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			g := engine.NewStateGraph[logState]()
			g.AddSubgraph("sub", sub).AddNode("b", countedNode(c, "b")).AddNode("after", countedNode(c, "after"))
			g.AddEdge(engine.Start, "sub").AddEdge(engine.Start, "b").AddEdge("b", "after")
			return g
		}, func(cg *engine.Graph[logState], opts *engine.RunOptions) []func() (logState, error) {
			return []func() (logState, error){
				func() (logState, error) { return cg.Invoke(ctx, engine.Update{"log": "in"}, opts) },
				func() (logState, error) { return cg.Invoke(ctx, engine.Command{Resume: "yes"}, opts) },
			}
		})
	})
	t.Run("two interrupts beside a finished task", func(t *testing.T) {
		t.Parallel()
		compareExitWithSync(t, func(c *nodeCalls) *engine.StateGraph[logState] {
			g := engine.NewStateGraph[logState]()
			g.AddNode("a", countedAsker(c, "a")).AddNode("c", countedAsker(c, "c")).AddNode("b", countedNode(c, "b")).AddNode("after", countedNode(c, "after"))
			g.AddEdge(engine.Start, "a").AddEdge(engine.Start, "b").AddEdge(engine.Start, "c").AddEdge("b", "after")
			return g
		}, func(cg *engine.Graph[logState], opts *engine.RunOptions) []func() (logState, error) {
			return []func() (logState, error){
				func() (logState, error) { return cg.Invoke(ctx, engine.Update{"log": "in"}, opts) },
				func() (logState, error) { return resumeAll(cg, opts, "ok-") },
			}
		})
	})
	t.Run("interrupt beside a task routing by Command goto, at a later step", func(t *testing.T) {
		t.Parallel()
		compareExitWithSync(t, func(c *nodeCalls) *engine.StateGraph[logState] {
			g := engine.NewStateGraph[logState]()
			g.AddNode("p", countedNode(c, "p")).AddNode("a", countedAsker(c, "a")).AddNode("d", countedNode(c, "d"))
			g.AddNode("b", func(context.Context, logState) (engine.Output, error) {
				c.add("b")
				return engine.Command{Update: engine.Update{"log": "b"}, Goto: []any{"d"}}, nil
			})
			g.AddEdge(engine.Start, "p").AddEdge("p", "a").AddEdge("p", "b")
			return g
		}, func(cg *engine.Graph[logState], opts *engine.RunOptions) []func() (logState, error) {
			return []func() (logState, error){
				func() (logState, error) { return cg.Invoke(ctx, engine.Update{"log": "in"}, opts) },
				func() (logState, error) { return cg.Invoke(ctx, engine.Command{Resume: "yes"}, opts) },
			}
		})
	})
	t.Run("interrupt, a finished task and a failed one", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		compareExitWithSync(t, func(c *nodeCalls) *engine.StateGraph[logState] {
			fails := 1
			g := engine.NewStateGraph[logState]()
			g.AddNode("a", countedAsker(c, "a")).AddNode("b", countedNode(c, "b"))
			g.AddNode("f", func(context.Context, logState) (engine.Output, error) {
				c.add("f")
				mu.Lock()
				defer mu.Unlock()
				if fails > 0 {
					fails--
					return nil, errors.New("boom")
				}
				return engine.Update{"log": "f"}, nil
			})
			g.AddEdge(engine.Start, "a").AddEdge(engine.Start, "b").AddEdge(engine.Start, "f")
			return g
		}, func(cg *engine.Graph[logState], opts *engine.RunOptions) []func() (logState, error) {
			return []func() (logState, error){
				func() (logState, error) { return cg.Invoke(ctx, engine.Update{"log": "in"}, opts) },
				func() (logState, error) { return cg.Invoke(ctx, nil, opts) },
				func() (logState, error) { return cg.Invoke(ctx, engine.Command{Resume: "yes"}, opts) },
			}
		})
	})
	t.Run("Send beside an interrupt", func(t *testing.T) {
		t.Parallel()
		compareExitWithSync(t, func(c *nodeCalls) *engine.StateGraph[logState] {
			g := engine.NewStateGraph[logState]()
			g.AddNode("a", countedAsker(c, "a")).AddNode("b", countedNode(c, "b")).AddNode("w", countedNode(c, "w"))
			g.AddEdge(engine.Start, "a").AddEdge(engine.Start, "b")
			g.AddConditionalEdges("b", func(context.Context, logState) (engine.Route, error) {
				return engine.SendTo(engine.Send{Node: "w", Arg: logState{}}), nil
			}, nil)
			return g
		}, func(cg *engine.Graph[logState], opts *engine.RunOptions) []func() (logState, error) {
			return []func() (logState, error){
				func() (logState, error) { return cg.Invoke(ctx, engine.Update{"log": "in"}, opts) },
				func() (logState, error) { return cg.Invoke(ctx, engine.Command{Resume: "yes"}, opts) },
			}
		})
	})
}
