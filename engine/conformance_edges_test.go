package engine_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/superstep-dev/superstep/engine"
)

const weatherQuery = "what is weather in sf"

// fanOutNodes adds the nodes of upstream's test_in_one_fan_out_* cases;
// qaCalls counts qa's runs.
func fanOutNodes(g *engine.StateGraph[docsState], qaCalls *atomic.Int32, qaOpts ...engine.NodeOption) {
	g.Reducer("docs", sortedAdd)
	g.AddNode("rewrite_query", func(_ context.Context, s docsState) (engine.Output, error) {
		return engine.Update{"query": "query: " + s.Query}, nil
	})
	g.AddNode("analyzer_one", func(_ context.Context, s docsState) (engine.Output, error) {
		return engine.Update{"query": "analyzed: " + s.Query}, nil
	})
	g.AddNode("retriever_one", func(context.Context, docsState) (engine.Output, error) {
		return engine.Update{"docs": []string{"doc1", "doc2"}}, nil
	})
	g.AddNode("retriever_two", func(context.Context, docsState) (engine.Output, error) {
		return engine.Update{"docs": []string{"doc3", "doc4"}}, nil
	})
	g.AddNode("qa", func(_ context.Context, s docsState) (engine.Output, error) {
		qaCalls.Add(1)
		return engine.Update{"answer": strings.Join(s.Docs, ",")}, nil
	}, qaOpts...)
}

var fanOutResult = docsState{
	Query:  "analyzed: query: " + weatherQuery,
	Docs:   []string{"doc1", "doc2", "doc3", "doc4"},
	Answer: "doc1,doc2,doc3,doc4",
}

// Case 4 (tp::test_in_one_fan_out_state_graph_waiting_edge): a waiting
// edge from two branches of different lengths runs qa once, after both.
// This is the run without a checkpointer; engine/enginetest runs it with
// one, on every saver.
func TestConformanceWaitingEdge(t *testing.T) {
	t.Parallel()
	var qaCalls atomic.Int32
	g := engine.NewStateGraph[docsState]()
	fanOutNodes(g, &qaCalls)
	g.AddEdge(engine.Start, "rewrite_query")
	g.AddEdge("rewrite_query", "analyzer_one").AddEdge("analyzer_one", "retriever_one")
	g.AddEdge("rewrite_query", "retriever_two")
	g.AddJoin([]string{"retriever_one", "retriever_two"}, "qa")
	g.AddEdge("qa", engine.End)
	var rec recorder
	got, err := mustCompile(t, g, engine.CompileOptions{}).Invoke(context.Background(), engine.Update{"query": weatherQuery}, &engine.RunOptions{Listener: rec.listen})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, fanOutResult) {
		t.Fatalf("result = %+v, want %+v", got, fanOutResult)
	}
	if n := qaCalls.Load(); n != 1 {
		t.Fatalf("qa ran %d times, want 1", n)
	}
	// Upstream's updates: rewrite_query, analyzer_one, retriever_two,
	// retriever_one, qa.
	want := [][]string{{"rewrite_query"}, {"analyzer_one", "retriever_two"}, {"retriever_one"}, {"qa"}}
	if steps := finishedBySteps(&rec); !reflect.DeepEqual(steps, want) {
		t.Fatalf("tasks by step = %v, want %v", steps, want)
	}
}

// Case 5 (tp::test_in_one_fan_out_state_graph_defer_node, both variants):
// a deferred qa runs once, last, whether reached by a waiting edge or by
// plain edges; debug task events start at step 1 with the reducer key's
// default (an empty docs list) visible in the input.
func TestConformanceDeferredNode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		waitingEdge bool
		qaTriggers  []string
	}{
		{"waiting edge", true, []string{"branch:to:qa", "join:retriever_one+retriever_two:qa"}},
		{"plain edges", false, []string{"branch:to:qa"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var qaCalls atomic.Int32
			g := engine.NewStateGraph[docsState]()
			fanOutNodes(g, &qaCalls, engine.Defer())
			g.AddEdge(engine.Start, "rewrite_query")
			g.AddEdge("rewrite_query", "retriever_one").AddEdge("retriever_one", "analyzer_one")
			g.AddEdge("rewrite_query", "retriever_two")
			if tc.waitingEdge {
				g.AddJoin([]string{"retriever_one", "retriever_two"}, "qa")
			} else {
				g.AddEdge("retriever_one", "qa").AddEdge("retriever_two", "qa")
			}
			g.AddEdge("qa", engine.End)
			var rec recorder
			got, err := mustCompile(t, g, engine.CompileOptions{}).Invoke(context.Background(), engine.Update{"query": weatherQuery}, &engine.RunOptions{Listener: rec.listen})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, fanOutResult) {
				t.Fatalf("result = %+v, want %+v", got, fanOutResult)
			}
			if n := qaCalls.Load(); n != 1 {
				t.Fatalf("qa ran %d times, want 1", n)
			}
			want := [][]string{{"rewrite_query"}, {"retriever_one", "retriever_two"}, {"analyzer_one"}, {"qa"}}
			if steps := finishedBySteps(&rec); !reflect.DeepEqual(steps, want) {
				t.Fatalf("tasks by step = %v, want %v", steps, want)
			}

			first := startedOf(&rec, "rewrite_query")
			if len(first) != 1 {
				t.Fatalf("rewrite_query started %d times, want 1", len(first))
			}
			task := first[0].Task
			if task.Step != 1 || !slices.Equal(task.Triggers, []string{"branch:to:rewrite_query"}) {
				t.Fatalf("rewrite_query task: step %d triggers %v, want step 1 triggers [branch:to:rewrite_query]", task.Step, task.Triggers)
			}
			// As upstream: the node's input keys that hold a value.
			in, ok := task.Input.(map[string]any)
			docs, _ := in["docs"].([]string)
			if !ok || in["query"] != weatherQuery || docs == nil || len(docs) != 0 {
				t.Fatalf("rewrite_query input = %#v, want query %q and docs [] (the reducer's default, not nil)", task.Input, weatherQuery)
			}
			qa := startedOf(&rec, "qa")
			if len(qa) != 1 {
				t.Fatalf("qa started %d times, want 1", len(qa))
			}
			if qa[0].Task.Step != 4 || !slices.Equal(qa[0].Task.Triggers, tc.qaTriggers) {
				t.Fatalf("qa task: step %d triggers %v, want step 4 triggers %v", qa[0].Task.Step, qa[0].Task.Triggers, tc.qaTriggers)
			}
			wantIn := map[string]any{"query": fanOutResult.Query, "docs": fanOutResult.Docs} // answer has no value yet
			if !reflect.DeepEqual(qa[0].Task.Input, wantIn) {
				t.Fatalf("qa input = %#v, want %#v", qa[0].Task.Input, wantIn)
			}
		})
	}
}

// appendName is upstream's Node(name) of the Send cases: it appends its
// name to the list.
func appendName(name string) func(context.Context, itemsState) (engine.Output, error) {
	return func(context.Context, itemsState) (engine.Output, error) {
		return engine.Update{"items": name}, nil
	}
}

func routeTo(nodes ...string) func(context.Context, itemsState) (engine.Route, error) {
	return func(context.Context, itemsState) (engine.Route, error) { return engine.Route{To: nodes}, nil }
}

// Case 8 (tp::test_cond_edge_after_send): two Sends to "2", each routing
// to "3": "3" runs once, because both writes to its trigger land in one
// step.
func TestConformanceCondEdgeAfterSend(t *testing.T) {
	t.Parallel()
	var threeCalls atomic.Int32
	g := engine.NewStateGraph[itemsState]()
	g.AddNode("1", appendName("1")).AddNode("2", appendName("2"))
	g.AddNode("3", func(context.Context, itemsState) (engine.Output, error) {
		threeCalls.Add(1)
		return engine.Update{"items": "3"}, nil
	})
	g.AddEdge(engine.Start, "1")
	g.AddConditionalEdges("1", func(_ context.Context, s itemsState) (engine.Route, error) {
		return engine.SendTo(engine.Send{Node: "2", Arg: s}, engine.Send{Node: "2", Arg: s}), nil
	}, nil)
	g.AddConditionalEdges("2", routeTo("3"), nil)
	got, err := mustCompile(t, g, engine.CompileOptions{}).Invoke(context.Background(), engine.Update{"items": []string{"0"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"0", "1", "2", "2", "3"}; !slices.Equal(got.Items, want) {
		t.Fatalf("items = %q, want %q", got.Items, want)
	}
	if n := threeCalls.Load(); n != 1 {
		t.Fatalf("3 ran %d times, want 1", n)
	}
}

// Case 9 (tp::test_concurrent_emit_sends): writes of a step are applied
// pull tasks first (by node name), then Send tasks by Send index (Sends of
// one step numbered in barrier order), whatever order the tasks finish in.
func TestConformanceConcurrentEmitSends(t *testing.T) {
	t.Parallel()
	g := engine.NewStateGraph[itemsState]()
	for _, n := range []string{"1", "1.1", "3", "3.1"} {
		g.AddNode(n, appendName(n))
	}
	engine.AddNodeFunc(g, "2", func(_ context.Context, n int) (engine.Output, error) {
		return engine.Update{"items": fmt.Sprintf("2|%d", n)}, nil
	})
	g.AddEdge(engine.Start, "1").AddEdge(engine.Start, "1.1")
	g.AddConditionalEdges("1", func(context.Context, itemsState) (engine.Route, error) {
		return engine.Route{To: []string{"3.1"}, Sends: []engine.Send{{Node: "2", Arg: 1}, {Node: "2", Arg: 2}}}, nil
	}, nil)
	g.AddConditionalEdges("1.1", func(context.Context, itemsState) (engine.Route, error) {
		return engine.SendTo(engine.Send{Node: "2", Arg: 3}, engine.Send{Node: "2", Arg: 4}), nil
	}, nil)
	g.AddConditionalEdges("2", routeTo("3"), nil)
	got, err := mustCompile(t, g, engine.CompileOptions{}).Invoke(context.Background(), engine.Update{"items": []string{"0"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"0", "1", "1.1", "3.1", "2|1", "2|2", "2|3", "2|4", "3"}; !slices.Equal(got.Items, want) {
		t.Fatalf("items = %q, want %q", got.Items, want)
	}
}

// describeGoto is the Go stand-in for upstream's repr of a Command in
// test_send_sequences ("Command(goto=Send(node='2', arg=3))").
func describeGoto(c engine.Command) string {
	parts := make([]string, len(c.Goto))
	for i, g := range c.Goto {
		switch d := g.(type) {
		case engine.Send:
			parts[i] = fmt.Sprintf("send %s(%v)", d.Node, d.Arg)
		default:
			parts[i] = fmt.Sprint(d)
		}
	}
	return "goto " + strings.Join(parts, ", ")
}

// Case 10 (tp::test_send_sequences): a Send whose argument is a Command.
// Node "2" applies it (upstream returns [state, Command(update)], the Go
// node returns one Command with both), so its Goto Sends run a step later,
// alongside "3".
func TestConformanceCommandInsideSend(t *testing.T) {
	t.Parallel()
	g := engine.NewStateGraph[itemsState]()
	for _, n := range []string{"1", "3", "3.1"} {
		g.AddNode(n, appendName(n))
	}
	engine.AddNodeFunc(g, "2", func(_ context.Context, arg any) (engine.Output, error) {
		if c, ok := arg.(engine.Command); ok {
			return engine.Command{Update: engine.Update{"items": "2|" + describeGoto(c)}, Goto: c.Goto}, nil
		}
		return engine.Update{"items": fmt.Sprintf("2|%v", arg)}, nil
	})
	g.AddEdge(engine.Start, "1")
	g.AddConditionalEdges("1", func(context.Context, itemsState) (engine.Route, error) {
		return engine.Route{To: []string{"3.1"}, Sends: []engine.Send{
			{Node: "2", Arg: engine.Command{Goto: []any{engine.Send{Node: "2", Arg: 3}}}},
			{Node: "2", Arg: engine.Command{Goto: []any{engine.Send{Node: "2", Arg: 4}}}},
		}}, nil
	}, nil)
	g.AddConditionalEdges("2", routeTo("3"), nil)
	got, err := mustCompile(t, g, engine.CompileOptions{}).Invoke(context.Background(), engine.Update{"items": []string{"0"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"0", "1", "3.1", "2|goto send 2(3)", "2|goto send 2(4)", "3", "2|3", "2|4", "3"}
	if !slices.Equal(got.Items, want) {
		t.Fatalf("items = %q, want %q", got.Items, want)
	}
}
