package engine_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/engine/channels"
)

type sendFanState struct {
	Items []string `json:"items"`
	Done  []string `json:"done" reduce:"append"`
	Note  string   `json:"note"`
}

// noteOnly reads one state key: the details list it as the node's read.
type noteOnly struct {
	Note string `json:"note"`
}

func fanGraph(t *testing.T, opts engine.CompileOptions) *engine.Graph[sendFanState] {
	t.Helper()
	g := engine.NewStateGraph[sendFanState]()
	g.AddNode("plan", func(context.Context, sendFanState) (engine.Output, error) {
		return engine.Update{"items": []string{"x", "y"}}, nil
	}, engine.SendTargets("work"), engine.WithRetry(engine.RetryPolicy{MaxAttempts: 5}))
	engine.AddNodeFunc(g, "work", func(_ context.Context, item string) (engine.Output, error) {
		return engine.Update{"done": []string{item}}, nil
	}, engine.WithCache(engine.CachePolicy{TTL: time.Minute}))
	engine.AddNodeFunc(g, "sum", func(_ context.Context, in noteOnly) (engine.Output, error) {
		return engine.Update{"note": in.Note + "summed"}, nil
	})
	g.AddEdge(engine.Start, "plan")
	g.AddConditionalEdges("plan", func(_ context.Context, s sendFanState) (engine.Route, error) {
		sends := make([]engine.Send, len(s.Items))
		for i, it := range s.Items {
			sends[i] = engine.Send{Node: "work", Arg: it}
		}
		return engine.SendTo(sends...), nil
	}, nil)
	g.AddEdge("work", "sum").AddEdge("sum", engine.End)
	c, err := g.Compile(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func topoNode(t *testing.T, topo engine.Topology, name string) engine.TopoNode {
	t.Helper()
	i := slices.IndexFunc(topo.Nodes, func(n engine.TopoNode) bool { return n.Name == name })
	if i < 0 {
		t.Fatalf("no node %q in %+v", name, topo.Nodes)
	}
	return topo.Nodes[i]
}

func TestTopologyNodeDetails(t *testing.T) {
	t.Parallel()
	g := fanGraph(t, engine.CompileOptions{Retry: []engine.RetryPolicy{{MaxAttempts: 2}}})
	topo := g.Topology()
	keys := []string{"items", "done", "note"}

	plan := topoNode(t, topo, "plan")
	if !reflect.DeepEqual(plan.Triggers, []string{"branch:to:plan"}) || !reflect.DeepEqual(plan.Reads, keys) || !reflect.DeepEqual(plan.Writes, keys) {
		t.Errorf("plan: triggers %v reads %v writes %v", plan.Triggers, plan.Reads, plan.Writes)
	}
	if len(plan.Retry) != 1 || plan.Retry[0].MaxAttempts != 5 || plan.Cache != nil {
		t.Errorf("plan: retry %+v cache %+v; want its own policy and no cache", plan.Retry, plan.Cache)
	}
	work := topoNode(t, topo, "work")
	if len(work.Reads) != 0 {
		t.Errorf("work reads %v; only Sends deliver its input", work.Reads)
	}
	if work.Cache == nil || work.Cache.TTL != time.Minute || len(work.Retry) != 1 || work.Retry[0].MaxAttempts != 2 {
		t.Errorf("work: cache %+v retry %+v; want its cache and the graph's default retry", work.Cache, work.Retry)
	}
	if sum := topoNode(t, topo, "sum"); !reflect.DeepEqual(sum.Reads, []string{"note"}) {
		t.Errorf("sum reads %v, want [note]", sum.Reads)
	}
}

func TestTopologyDetailsLowLevel(t *testing.T) {
	t.Parallel()
	report, err := engine.NewNode().SubscribeTo(true, "doubled").ReadFrom("input").
		Do(func(_ context.Context, in any) (any, error) { return "ok", nil }).
		WriteTo("output", "log").Retry(engine.RetryPolicy{MaxAttempts: 4}).Build()
	if err != nil {
		t.Fatal(err)
	}
	report.Name = "report"
	p, err := engine.NewPregel(engine.PregelConfig{
		Channels: map[string]channels.Channel{
			"input":   channels.NewLastValue(reflect.TypeFor[int]()),
			"doubled": channels.NewLastValue(reflect.TypeFor[int]()),
			"output":  channels.NewLastValue(reflect.TypeFor[string]()),
			"log":     channels.NewTopic(reflect.TypeFor[string](), true),
		},
		Nodes: []*engine.Node{report}, InputChannels: []string{"input"}, OutputChannels: []string{"output"},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := topoNode(t, p.Topology(), "report")
	if !reflect.DeepEqual(n.Triggers, []string{"doubled"}) || !reflect.DeepEqual(n.Reads, []string{"doubled", "input"}) ||
		!reflect.DeepEqual(n.Writes, []string{"output", "log"}) {
		t.Errorf("report: triggers %v reads %v writes %v", n.Triggers, n.Reads, n.Writes)
	}
	if len(n.Retry) != 1 || n.Retry[0].MaxAttempts != 4 {
		t.Errorf("report retry %+v", n.Retry)
	}
}

func TestSendTargetsDrawnAsSendEdges(t *testing.T) {
	t.Parallel()
	g := fanGraph(t, engine.CompileOptions{})
	var sends []engine.TopoEdge
	for _, e := range g.Topology().Edges {
		if e.To == "*" {
			t.Errorf("a router of a node with Send targets is drawn as routing anywhere: %+v", e)
		}
		if e.Send {
			sends = append(sends, e)
		}
	}
	want := []engine.TopoEdge{{From: "plan", To: "work", Conditional: true, Send: true, Label: "Send"}}
	if !reflect.DeepEqual(sends, want) {
		t.Errorf("send edges %+v, want %+v", sends, want)
	}
	if ws := g.Warnings(); len(ws) != 0 {
		t.Errorf("warnings %v; the Send edge makes work reachable", ws)
	}

	bad := engine.NewStateGraph[sendFanState]()
	bad.AddNode("plan", func(context.Context, sendFanState) (engine.Output, error) { return nil, nil }, engine.SendTargets("nowhere"))
	bad.AddEdge(engine.Start, "plan")
	if _, err := bad.Compile(engine.CompileOptions{}); !errors.Is(err, engine.ErrInvalidGraph) {
		t.Errorf("unknown Send target: err %v, want ErrInvalidGraph", err)
	}
}

func TestSendTaskArgInHistory(t *testing.T) {
	t.Parallel()
	g := fanGraph(t, engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	ctx := context.Background()
	if _, err := g.Invoke(ctx, engine.Update{}, &engine.RunOptions{ThreadID: "t"}); err != nil {
		t.Fatal(err)
	}
	hist, err := g.GetStateHistory(ctx, checkpoints.Config{ThreadID: "t"}, engine.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var args []any
	for _, s := range hist {
		for _, ts := range s.Tasks {
			if ts.Name == "work" {
				args = append(args, ts.Arg)
			} else if ts.Arg != nil {
				t.Errorf("task %s planned by its triggers has Arg %v", ts.Name, ts.Arg)
			}
		}
	}
	slices.SortFunc(args, func(a, b any) int {
		if a.(string) < b.(string) {
			return -1
		}
		return 1
	})
	if !reflect.DeepEqual(args, []any{"x", "y"}) {
		t.Errorf("Send args %v, want [x y]", args)
	}
}

func TestSubgraphBreakpointByQualifiedName(t *testing.T) {
	t.Parallel()
	inner := engine.NewStateGraph[logState]()
	inner.AddNode("inner_1", logNode("i1")).AddNode("inner_2", logNode("i2"))
	inner.AddEdge(engine.Start, "inner_1").AddEdge("inner_1", "inner_2")
	sub, err := inner.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	outer := engine.NewStateGraph[logState]()
	outer.AddNode("a", logNode("a")).AddSubgraph("inner", sub).AddNode("b", logNode("b"))
	outer.AddEdge(engine.Start, "a").AddEdge("a", "inner").AddEdge("inner", "b")
	g, err := outer.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	plain, err := g.Invoke(ctx, engine.Update{}, &engine.RunOptions{ThreadID: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		before, after []string
		want          []string // the log when the run stops
		stopBefore    []string
		stopAfter     []string
	}{
		{name: "before", before: []string{"inner:inner_2"}, want: []string{"a", "i1"}, stopBefore: []string{"inner:inner_2"}},
		{name: "after", after: []string{"inner:inner_1"}, want: []string{"a", "i1"}, stopAfter: []string{"inner:inner_1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := &engine.RunOptions{ThreadID: tc.name, InterruptBefore: tc.before, InterruptAfter: tc.after}
			_, err := g.Invoke(ctx, engine.Update{}, opts)
			var intr *engine.Interrupted
			if !errors.As(err, &intr) {
				t.Fatalf("run did not stop inside the subgraph: %v", err)
			}
			if !reflect.DeepEqual(intr.Before, tc.stopBefore) || !reflect.DeepEqual(intr.After, tc.stopAfter) {
				t.Errorf("stopped before %v after %v, want %v %v", intr.Before, intr.After, tc.stopBefore, tc.stopAfter)
			}
			st, err := g.GetStateWith(ctx, checkpoints.Config{ThreadID: tc.name}, engine.StateOptions{Subgraphs: true})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(st.Next, []string{"inner"}) || len(st.Tasks) != 1 || st.Tasks[0].State == nil {
				t.Fatalf("next %v tasks %+v; want the run paused in inner", st.Next, st.Tasks)
			}
			if got := st.Tasks[0].State.Values["log"]; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("subgraph log at the pause %v, want %v", got, tc.want)
			}
			out, err := g.Invoke(ctx, nil, &engine.RunOptions{ThreadID: tc.name})
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			if !reflect.DeepEqual(out.Log, plain.Log) {
				t.Errorf("after resume log %v, want %v as in a run without breakpoints", out.Log, plain.Log)
			}
		})
	}
}
