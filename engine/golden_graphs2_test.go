package engine_test

// Go builders of the second batch of golden cases (testdata/golden/js/cases
// flow2.mjs, resume2.mjs, timetravel2.mjs), one per case under the same
// name, building what the JS case builds.

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/engine"
)

func init() {
	for name, b := range map[string]func(*testing.T, *goldenCalls) goldenGraph{
		// flow2.mjs
		"cond_path_map":                  goldenCondPathMap,
		"cond_route_list":                goldenCondRouteList,
		"lastvalue_conflict":             goldenLastValueConflict,
		"parallel_append_order":          goldenParallelAppendOrder,
		"recursion_limit":                goldenLogChain(engine.CompileOptions{}, "a", "b", "c"),
		"send_then_cond_edge":            goldenSendThenCondEdge,
		"send_and_pull_write_order":      goldenSendAndPull,
		"command_send_from_send":         goldenCommandSendFromSend,
		"overwrite_sequential":           goldenOverwriteSequential,
		"overwrite_two_parallel_error":   goldenOverwriteTwoParallel,
		"command_update_list":            goldenCommandUpdateList,
		"no_checkpointer_values_updates": goldenNoCheckpointer,
		"custom_stream":                  goldenCustomStream,
		"nested_subgraph_stream":         goldenNestedSubgraph(false),
		// resume2.mjs
		"retry_transient_then_ok":         goldenRetryTransient,
		"retry_permanent_error_recorded":  goldenRetryPermanent,
		"interrupt_after_breakpoint":      goldenLogChain(engine.CompileOptions{InterruptAfter: []string{"a"}}, "a", "b"),
		"interrupt_before_all":            goldenLogChain(engine.CompileOptions{InterruptBefore: []string{"*"}}, "a", "b"),
		"two_interrupts_one_node":         goldenTwoInterrupts,
		"interrupt_loop":                  goldenInterruptLoop,
		"ambiguous_scalar_resume":         goldenParallelInterrupts,
		"node_before_interrupt_not_rerun": goldenNodeBeforeInterrupt,
		"input_discards_pending":          goldenLogChain(engine.CompileOptions{InterruptBefore: []string{"b"}}, "a", "b"),
		"send_dedupe_on_resume":           goldenSendDedupe,
		"debug_stream_interrupt":          goldenAskDone,
		"nested_subgraph_interrupt_state": goldenNestedSubgraph(true),
		// timetravel2.mjs
		"update_state_as_end":           goldenLogChain(engine.CompileOptions{InterruptBefore: []string{"b"}}, "a", "b"),
		"update_state_as_input":         goldenLogChain(engine.CompileOptions{}, "a", "b"),
		"update_state_command_as_node":  goldenUpdateCommandAsNode,
		"update_state_twice":            goldenLogChain(engine.CompileOptions{InterruptBefore: []string{"b"}}, "a", "b"),
		"fork_update_then_run":          goldenLogChain(engine.CompileOptions{}, "a", "b", "c"),
		"fork_skips_old_pending_writes": goldenForkPendingWrites,
		"copy_then_run_by_id":           goldenLogChain(engine.CompileOptions{}, "a", "b", "c"),
		"history_loop_replay":           goldenAddOneLoop,
		"subgraph_copy_fork":            goldenSubgraphCopyFork,
	} {
		if _, dup := goldenBuilders[name]; dup {
			panic("two golden builders named " + name)
		}
		goldenBuilders[name] = b
	}
}

// goldenLogChain is START→names[0]→…→names[n-1] on logState, each node
// logging its name, as the JS cases' chain.
func goldenLogChain(opts engine.CompileOptions, names ...string) func(*testing.T, *goldenCalls) goldenGraph {
	return func(t *testing.T, calls *goldenCalls) goldenGraph {
		return goldenCompile(t, goldenChainGraph(calls, names...), opts)
	}
}

func goldenChainGraph(calls *goldenCalls, names ...string) *engine.StateGraph[logState] {
	g := engine.NewStateGraph[logState]()
	for _, n := range names {
		g.AddNode(n, goldenLog(calls, n))
	}
	g.AddEdge(engine.Start, names[0])
	for i := 1; i < len(names); i++ {
		g.AddEdge(names[i-1], names[i])
	}
	return g
}

func goldenCondPathMap(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("a", goldenLog(calls, "a")).AddNode("b", goldenLog(calls, "b")).AddNode("c", goldenLog(calls, "c"))
	g.AddEdge(engine.Start, "a")
	g.AddConditionalEdges("a", func(_ context.Context, s logState) (engine.Route, error) {
		if len(s.Log) >= 2 {
			return engine.To("yes"), nil
		}
		return engine.To("no"), nil
	}, map[string]string{"yes": "b", "no": "c"})
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenCondRouteList(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("a", goldenLog(calls, "a")).AddNode("b", goldenLog(calls, "b")).AddNode("c", goldenLog(calls, "c"))
	g.AddEdge(engine.Start, "a")
	g.AddConditionalEdges("a", func(context.Context, logState) (engine.Route, error) {
		return engine.Route{To: []string{"b", "c"}}, nil
	}, map[string]string{"b": "b", "c": "c"})
	return goldenCompile(t, g, engine.CompileOptions{})
}

type goldenHelloState struct {
	Hello string `json:"hello"`
}

func goldenLastValueConflict(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[goldenHelloState]()
	for _, n := range []string{"one", "two"} {
		g.AddNode(n, func(context.Context, goldenHelloState) (engine.Output, error) {
			calls.add(n)
			return engine.Update{"hello": n}, nil
		})
		g.AddEdge(engine.Start, n)
	}
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenParallelAppendOrder(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("zeta", goldenLog(calls, "zeta")).AddNode("alpha", goldenLog(calls, "alpha"))
	g.AddEdge(engine.Start, "zeta").AddEdge(engine.Start, "alpha")
	return goldenCompile(t, g, engine.CompileOptions{})
}

type goldenN struct {
	N int `json:"n"`
}

func goldenSendThenCondEdge(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("one", goldenLog(calls, "one"), engine.SendTargets("two"))
	engine.AddNodeFunc(g, "two", func(_ context.Context, arg goldenN) (engine.Output, error) {
		calls.add("two")
		return engine.Update{"log": []string{fmt.Sprintf("two|%d", arg.N)}}, nil
	})
	g.AddNode("three", goldenLog(calls, "three"))
	g.AddEdge(engine.Start, "one")
	g.AddConditionalEdges("one", func(context.Context, logState) (engine.Route, error) {
		return engine.SendTo(engine.Send{Node: "two", Arg: goldenN{N: 1}}, engine.Send{Node: "two", Arg: goldenN{N: 2}}), nil
	}, nil)
	g.AddConditionalEdges("two", func(context.Context, logState) (engine.Route, error) {
		return engine.To("three"), nil
	}, map[string]string{"three": "three"})
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenSendAndPull(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("one", goldenLog(calls, "one"), engine.SendTargets("apush"))
	g.AddNode("zpull", goldenLog(calls, "zpull"))
	engine.AddNodeFunc(g, "apush", func(_ context.Context, arg string) (engine.Output, error) {
		calls.add("apush")
		return engine.Update{"log": []string{"apush|" + arg}}, nil
	})
	g.AddEdge(engine.Start, "one").AddEdge("one", "zpull")
	g.AddConditionalEdges("one", func(context.Context, logState) (engine.Route, error) {
		return engine.SendTo(engine.Send{Node: "apush", Arg: "x"}, engine.Send{Node: "apush", Arg: "y"}), nil
	}, nil)
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenCommandSendFromSend(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("plan", goldenLog(calls, "plan"), engine.SendTargets("work"))
	engine.AddNodeFunc(g, "work", func(_ context.Context, n int) (engine.Output, error) {
		calls.add("work")
		upd := engine.Update{"log": []string{fmt.Sprintf("work|%d", n)}}
		if n < 3 {
			return engine.Command{Update: upd, Goto: []any{engine.Send{Node: "work", Arg: n + 1}}}, nil
		}
		return upd, nil
	}, engine.SendTargets("work"))
	g.AddEdge(engine.Start, "plan")
	g.AddConditionalEdges("plan", func(context.Context, logState) (engine.Route, error) {
		return engine.SendTo(engine.Send{Node: "work", Arg: 1}), nil
	}, nil)
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenOverwriteSequential(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("a", goldenLog(calls, "a"))
	g.AddNode("b", func(context.Context, logState) (engine.Output, error) {
		calls.add("b")
		return engine.Update{"log": engine.Overwrite{Value: []string{"b"}}}, nil
	})
	g.AddEdge(engine.Start, "a").AddEdge("a", "b")
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenOverwriteTwoParallel(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	for _, n := range []string{"b", "c"} {
		g.AddNode(n, func(context.Context, logState) (engine.Output, error) {
			calls.add(n)
			return engine.Update{"log": engine.Overwrite{Value: []string{n}}}, nil
		})
		g.AddEdge(engine.Start, n)
	}
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenCommandUpdateList(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("one", func(context.Context, logState) (engine.Output, error) {
		calls.add("one")
		return engine.Command{Update: engine.Updates{engine.Set("log", []string{"one.0"}), engine.Set("log", []string{"one.1"})}}, nil
	})
	g.AddNode("two", func(_ context.Context, s logState) (engine.Output, error) {
		calls.add("two")
		return engine.Update{"log": []string{fmt.Sprintf("two:%d", len(s.Log))}}, nil
	})
	g.AddEdge(engine.Start, "one").AddEdge("one", "two")
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenCustomStream(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("a", func(ctx context.Context, _ logState) (engine.Output, error) {
		calls.add("a")
		engine.Emit(ctx, map[string]any{"progress": 1})
		engine.Emit(ctx, map[string]any{"progress": 2})
		return engine.Update{"log": []string{"a"}}, nil
	})
	g.AddEdge(engine.Start, "a")
	return goldenCompile(t, g, engine.CompileOptions{})
}

// goldenNestedSubgraph is prep→mid→done, mid being m1→inner and inner
// i1→i2 (ask, interrupting, in place of i2 when ask is set).
func goldenNestedSubgraph(ask bool) func(*testing.T, *goldenCalls) goldenGraph {
	return func(t *testing.T, calls *goldenCalls) goldenGraph {
		inner := engine.NewStateGraph[logState]()
		inner.AddNode("i1", goldenLog(calls, "i1"))
		last := "i2"
		if ask {
			last = "ask"
			inner.AddNode("ask", goldenAsk(calls, "ask"))
		} else {
			inner.AddNode("i2", goldenLog(calls, "i2"))
		}
		inner.AddEdge(engine.Start, "i1").AddEdge("i1", last)
		mid := engine.NewStateGraph[logState]()
		mid.AddNode("m1", goldenLog(calls, "m1")).AddSubgraph("inner", mustCompile(t, inner, engine.CompileOptions{}))
		mid.AddEdge(engine.Start, "m1").AddEdge("m1", "inner")
		g := engine.NewStateGraph[logState]()
		g.AddNode("prep", goldenLog(calls, "prep")).AddSubgraph("mid", mustCompile(t, mid, engine.CompileOptions{})).AddNode("done", goldenLog(calls, "done"))
		g.AddEdge(engine.Start, "prep").AddEdge("prep", "mid").AddEdge("mid", "done")
		return goldenCompile(t, g, engine.CompileOptions{})
	}
}

// goldenHTTPError is an error carrying an HTTP status, as the JS cases'
// httpError.
type goldenHTTPError struct {
	msg    string
	status int
}

func (e goldenHTTPError) Error() string   { return e.msg }
func (e goldenHTTPError) HTTPStatus() int { return e.status }

func goldenRetryTransient(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("flaky", func(context.Context, logState) (engine.Output, error) {
		if calls.add("flaky") == 1 {
			return nil, goldenHTTPError{"service unavailable", 503}
		}
		return engine.Update{"log": []string{"flaky"}}, nil
	}, engine.WithRetry(engine.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond}))
	g.AddEdge(engine.Start, "flaky")
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenRetryPermanent(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("ok", goldenLog(calls, "ok"))
	g.AddNode("bad", func(context.Context, logState) (engine.Output, error) {
		calls.add("bad")
		return nil, goldenHTTPError{"bad request", 400}
	}, engine.WithRetry(engine.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond}))
	g.AddEdge(engine.Start, "ok").AddEdge(engine.Start, "bad")
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenTwoInterrupts(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("ask", func(ctx context.Context, _ logState) (engine.Output, error) {
		calls.add("ask")
		one, err := engine.Interrupt(ctx, map[string]any{"value": 1})
		if err != nil {
			return nil, err
		}
		two, err := engine.Interrupt(ctx, map[string]any{"value": 2})
		if err != nil {
			return nil, err
		}
		return engine.Update{"log": []string{answerText(one) + "+" + answerText(two)}}, nil
	})
	g.AddEdge(engine.Start, "ask")
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenInterruptLoop(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("ask", func(ctx context.Context, _ logState) (engine.Output, error) {
		calls.add("ask")
		prompt := "age?"
		for {
			age, err := engine.Interrupt(ctx, prompt)
			if err != nil {
				return nil, err
			}
			if n, _ := strconv.Atoi(answerText(age)); n >= 18 {
				return engine.Update{"log": []string{"age:" + answerText(age)}}, nil
			}
			prompt = "invalid response"
		}
	})
	g.AddEdge(engine.Start, "ask")
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenNodeBeforeInterrupt(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("setup", goldenLog(calls, "setup"))
	g.AddNode("ask", func(ctx context.Context, _ logState) (engine.Output, error) {
		calls.add("ask")
		var answers []string
		for _, topic := range []string{"t1", "t2"} {
			a, err := engine.Interrupt(ctx, map[string]any{"topic": topic})
			if err != nil {
				return nil, err
			}
			answers = append(answers, answerText(a))
		}
		return engine.Update{"log": answers}, nil
	})
	g.AddEdge(engine.Start, "setup").AddEdge("setup", "ask")
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenSendDedupe(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("plan", goldenLog(calls, "plan"), engine.SendTargets("work", "flaky"))
	engine.AddNodeFunc(g, "work", func(_ context.Context, n int) (engine.Output, error) {
		calls.add("work")
		return engine.Update{"log": []string{fmt.Sprintf("work|%d", n)}}, nil
	})
	engine.AddNodeFunc(g, "flaky", func(ctx context.Context, n int) (engine.Output, error) {
		calls.add("flaky")
		answer, err := engine.Interrupt(ctx, map[string]any{"question": fmt.Sprintf("flaky %d", n)})
		if err != nil {
			return nil, err
		}
		return engine.Update{"log": []string{fmt.Sprintf("flaky|%d|%s", n, answerText(answer))}}, nil
	})
	g.AddEdge(engine.Start, "plan")
	g.AddConditionalEdges("plan", func(context.Context, logState) (engine.Route, error) {
		return engine.SendTo(engine.Send{Node: "work", Arg: 1}, engine.Send{Node: "work", Arg: 2}, engine.Send{Node: "flaky", Arg: 3}), nil
	}, nil)
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenUpdateCommandAsNode(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("a", func(context.Context, logState) (engine.Output, error) {
		calls.add("a")
		return engine.Command{Update: engine.Update{"log": []string{"a"}}, Goto: []any{"b"}}, nil
	}, engine.Destinations("b"))
	g.AddNode("b", goldenLog(calls, "b"))
	g.AddEdge(engine.Start, "a")
	return goldenCompile(t, g, engine.CompileOptions{InterruptBefore: []string{"b"}})
}

func goldenForkPendingWrites(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[goldenValueState]()
	for n, v := range map[string]int{"a": 10, "b": 100} {
		g.AddNode(n, func(context.Context, goldenValueState) (engine.Output, error) {
			calls.add(n)
			return engine.Update{"value": v}, nil
		})
	}
	g.AddEdge(engine.Start, "a").AddEdge("a", "b")
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenAddOneLoop(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[goldenValueState]()
	g.AddNode("add_one", func(context.Context, goldenValueState) (engine.Output, error) {
		calls.add("add_one")
		return engine.Update{"value": 1}, nil
	})
	g.AddEdge(engine.Start, "add_one")
	g.AddConditionalEdges("add_one", func(_ context.Context, s goldenValueState) (engine.Route, error) {
		if s.Value < 6 {
			return engine.To("add_one"), nil
		}
		return engine.To(engine.End), nil
	}, map[string]string{"add_one": "add_one", engine.End: engine.End})
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenSubgraphCopyFork(t *testing.T, calls *goldenCalls) goldenGraph {
	child := engine.NewStateGraph[logState]()
	child.AddNode("s1", goldenLog(calls, "s1")).AddNode("ask", goldenAsk(calls, "ask")).AddNode("s2", goldenLog(calls, "s2"))
	child.AddEdge(engine.Start, "s1").AddEdge("s1", "ask").AddEdge("ask", "s2")
	g := engine.NewStateGraph[logState]()
	g.AddNode("prep", goldenLog(calls, "prep")).AddSubgraph("child", mustCompile(t, child, engine.CompileOptions{})).AddNode("finish", goldenLog(calls, "finish"))
	g.AddEdge(engine.Start, "prep").AddEdge("prep", "child").AddEdge("child", "finish")
	return goldenCompile(t, g, engine.CompileOptions{})
}
