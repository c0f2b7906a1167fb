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

// routcome of a scenario: each run's result and the calls per node.
type routcome struct {
	results []string
	calls   map[string]int
}

type callCount struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *callCount) add(n string) { c.mu.Lock(); c.m[n]++; c.mu.Unlock() }

func rdescribe(out logState, err error) string {
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

// compare runs build under sync and exit durability and compares.
func rcompare(t *testing.T, build func(c *callCount) *engine.Graph[logState], inputs func(*engine.Graph[logState], checkpoints.Saver, *engine.RunOptions) []func() (logState, error)) {
	t.Helper()
	res := map[engine.Durability]routcome{}
	for _, d := range []engine.Durability{engine.DurabilitySync, engine.DurabilityExit} {
		c := &callCount{m: map[string]int{}}
		cg := build(c)
		saver := cg.Pregel().Checkpointer()
		opts := &engine.RunOptions{ThreadID: "t", Durability: d}
		var o routcome
		for _, step := range inputs(cg, saver, opts) {
			out, err := step()
			o.results = append(o.results, rdescribe(out, err))
		}
		o.calls = c.m
		res[d] = o
	}
	s, e := res[engine.DurabilitySync], res[engine.DurabilityExit]
	if !slices.Equal(s.results, e.results) || fmt.Sprint(s.calls) != fmt.Sprint(e.calls) {
		t.Errorf("sync: %v %v\nexit: %v %v", s.results, s.calls, e.results, e.calls)
	}
}

func rnode(c *callCount, name string) func(context.Context, logState) (engine.Output, error) {
	return func(context.Context, logState) (engine.Output, error) {
		c.add(name)
		return engine.Update{"log": name}, nil
	}
}

func rasker(c *callCount, name string) func(context.Context, logState) (engine.Output, error) {
	return func(ctx context.Context, _ logState) (engine.Output, error) {
		c.add(name)
		v, err := engine.Interrupt(ctx, name+"?")
		if err != nil {
			return nil, err
		}
		return engine.Update{"log": name + ":" + fmt.Sprint(v)}, nil
	}
}

func rresumeAll(cg *engine.Graph[logState], opts *engine.RunOptions, answer string) (logState, error) {
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

func TestExitDurabilityMatchesSync(t *testing.T) {
	ctx := context.Background()
	t.Run("subgraph interrupt beside a finished task", func(t *testing.T) {
		rcompare(t, func(c *callCount) *engine.Graph[logState] {
			saver := checkpoints.NewMemory()
			inner := engine.NewStateGraph[logState]()
			inner.AddNode("x", rasker(c, "x")).AddNode("y", rnode(c, "y"))
			inner.AddEdge(engine.Start, "x").AddEdge(engine.Start, "y")
			sub, err := inner.Compile(engine.CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			g := engine.NewStateGraph[logState]()
			g.AddSubgraph("sub", sub).AddNode("b", rnode(c, "b")).AddNode("after", rnode(c, "after"))
			g.AddEdge(engine.Start, "sub").AddEdge(engine.Start, "b").AddEdge("b", "after")
			cg, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
			if err != nil {
				t.Fatal(err)
			}
			return cg
		}, func(cg *engine.Graph[logState], _ checkpoints.Saver, opts *engine.RunOptions) []func() (logState, error) {
			return []func() (logState, error){
				func() (logState, error) { return cg.Invoke(ctx, engine.Update{"log": "in"}, opts) },
				func() (logState, error) { return cg.Invoke(ctx, engine.Command{Resume: "yes"}, opts) },
			}
		})
	})
	t.Run("two interrupts beside a finished task", func(t *testing.T) {
		rcompare(t, func(c *callCount) *engine.Graph[logState] {
			g := engine.NewStateGraph[logState]()
			g.AddNode("a", rasker(c, "a")).AddNode("c", rasker(c, "c")).AddNode("b", rnode(c, "b")).AddNode("after", rnode(c, "after"))
			g.AddEdge(engine.Start, "a").AddEdge(engine.Start, "b").AddEdge(engine.Start, "c").AddEdge("b", "after")
			cg, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
			if err != nil {
				t.Fatal(err)
			}
			return cg
		}, func(cg *engine.Graph[logState], _ checkpoints.Saver, opts *engine.RunOptions) []func() (logState, error) {
			return []func() (logState, error){
				func() (logState, error) { return cg.Invoke(ctx, engine.Update{"log": "in"}, opts) },
				func() (logState, error) { return rresumeAll(cg, opts, "ok-") },
			}
		})
	})
	t.Run("interrupt beside a task routing by Command goto, at a later step", func(t *testing.T) {
		rcompare(t, func(c *callCount) *engine.Graph[logState] {
			g := engine.NewStateGraph[logState]()
			g.AddNode("p", rnode(c, "p")).AddNode("a", rasker(c, "a")).AddNode("d", rnode(c, "d"))
			g.AddNode("b", func(context.Context, logState) (engine.Output, error) {
				c.add("b")
				return engine.Command{Update: engine.Update{"log": "b"}, Goto: []any{"d"}}, nil
			})
			g.AddEdge(engine.Start, "p").AddEdge("p", "a").AddEdge("p", "b")
			cg, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
			if err != nil {
				t.Fatal(err)
			}
			return cg
		}, func(cg *engine.Graph[logState], _ checkpoints.Saver, opts *engine.RunOptions) []func() (logState, error) {
			return []func() (logState, error){
				func() (logState, error) { return cg.Invoke(ctx, engine.Update{"log": "in"}, opts) },
				func() (logState, error) { return cg.Invoke(ctx, engine.Command{Resume: "yes"}, opts) },
			}
		})
	})
	t.Run("interrupt, a finished task and a failed one", func(t *testing.T) {
		var mu sync.Mutex
		rcompare(t, func(c *callCount) *engine.Graph[logState] {
			fails := 1
			g := engine.NewStateGraph[logState]()
			g.AddNode("a", rasker(c, "a")).AddNode("b", rnode(c, "b"))
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
			cg, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
			if err != nil {
				t.Fatal(err)
			}
			return cg
		}, func(cg *engine.Graph[logState], _ checkpoints.Saver, opts *engine.RunOptions) []func() (logState, error) {
			return []func() (logState, error){
				func() (logState, error) { return cg.Invoke(ctx, engine.Update{"log": "in"}, opts) },
				func() (logState, error) { return cg.Invoke(ctx, nil, opts) },
				func() (logState, error) { return cg.Invoke(ctx, engine.Command{Resume: "yes"}, opts) },
			}
		})
	})
	t.Run("Send beside an interrupt", func(t *testing.T) {
		rcompare(t, func(c *callCount) *engine.Graph[logState] {
			g := engine.NewStateGraph[logState]()
			g.AddNode("a", rasker(c, "a")).AddNode("b", rnode(c, "b")).AddNode("w", rnode(c, "w"))
			g.AddEdge(engine.Start, "a").AddEdge(engine.Start, "b")
			g.AddConditionalEdges("b", func(context.Context, logState) (engine.Route, error) {
				return engine.SendTo(engine.Send{Node: "w", Arg: logState{}}), nil
			}, nil)
			cg, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
			if err != nil {
				t.Fatal(err)
			}
			return cg
		}, func(cg *engine.Graph[logState], _ checkpoints.Saver, opts *engine.RunOptions) []func() (logState, error) {
			return []func() (logState, error){
				func() (logState, error) { return cg.Invoke(ctx, engine.Update{"log": "in"}, opts) },
				func() (logState, error) { return cg.Invoke(ctx, engine.Command{Resume: "yes"}, opts) },
			}
		})
	})
}
