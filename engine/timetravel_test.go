package engine_test

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

type fanoutState struct {
	Inputs      []string `json:"inputs"`
	HumanInputs []string `json:"human_inputs" reduce:"append"`
}

type childState struct {
	Prompt      string   `json:"prompt"`
	HumanInputs []string `json:"human_inputs" reduce:"append"`
}

// Reference §11 case 22: two Sends to a subgraph that interrupts; each
// interrupt is answered by id, one at a time; the answered child's result
// is kept (reported as cached) while the other waits.
func TestParallelSubgraphInterruptsViaSend(t *testing.T) {
	t.Parallel()
	var childRuns atomic.Int32
	child := engine.NewStateGraph[childState]()
	child.AddNode("ask", func(ctx context.Context, s childState) (engine.Output, error) {
		childRuns.Add(1)
		a, err := engine.Interrupt(ctx, s.Prompt)
		if err != nil {
			return nil, err
		}
		return engine.Update{"human_inputs": a.(string)}, nil
	})
	child.AddEdge(engine.Start, "ask")
	sub, err := child.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parent := engine.NewStateGraph[fanoutState]()
	parent.AddNode("plan", func(context.Context, fanoutState) (engine.Output, error) { return nil, nil })
	parent.AddSubgraph("child_graph", sub)
	parent.AddEdge(engine.Start, "plan")
	parent.AddConditionalEdges("plan", func(_ context.Context, s fanoutState) (engine.Route, error) {
		var sends []engine.Send
		for _, in := range s.Inputs {
			sends = append(sends, engine.Send{Node: "child_graph", Arg: map[string]any{"prompt": in}})
		}
		return engine.SendTo(sends...), nil
	}, nil)
	g, err := parent.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	opts := &engine.RunOptions{ThreadID: "1"}
	_, err = g.Invoke(ctx, engine.Update{"inputs": []string{"a", "b"}}, opts)
	var intr *engine.Interrupted
	if !errors.As(err, &intr) || len(intr.Interrupts) != 2 {
		t.Fatalf("want two interrupts, got %v", err)
	}
	values := []any{intr.Interrupts[0].Value, intr.Interrupts[1].Value}
	sort.Slice(values, func(i, j int) bool { return values[i].(string) < values[j].(string) })
	if !reflect.DeepEqual(values, []any{"a", "b"}) {
		t.Fatalf("interrupt values %v", values)
	}
	first := intr.Interrupts[0]
	var events []engine.TaskFinished
	_, err = g.Invoke(ctx, engine.Command{Resume: map[string]any{first.ID: "Resume #1"}}, opts)
	if !errors.As(err, &intr) || len(intr.Interrupts) != 1 || intr.Interrupts[0].ID == first.ID {
		t.Fatalf("after answering one: %v", err)
	}
	second := intr.Interrupts[0]
	out, err := g.Invoke(ctx, engine.Command{Resume: map[string]any{second.ID: "Resume #2"}}, &engine.RunOptions{ThreadID: "1", Listener: func(ev engine.Event) {
		if f, ok := ev.(engine.TaskFinished); ok && f.Task.Name == "child_graph" {
			events = append(events, f)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := append([]string(nil), out.HumanInputs...)
	sort.Strings(got)
	if !reflect.DeepEqual(got, []string{"Resume #1", "Resume #2"}) {
		t.Fatalf("human inputs %v", out.HumanInputs)
	}
	cached := 0
	for _, e := range events {
		if e.Cached {
			cached++
		}
	}
	if cached != 1 {
		t.Fatalf("the first child's result should be reapplied as cached once in the last run, got %d cached of %d", cached, len(events))
	}
}

// BenchmarkHistoryPage: a thread with 1000 checkpoints in the memory saver;
// the newest 50 in metadata-only mode.
func BenchmarkHistoryPage(b *testing.B) {
	saver := checkpoints.NewMemory()
	g := engine.NewStateGraph[counter]()
	g.AddNode("inc", func(_ context.Context, s counter) (engine.Output, error) { return engine.Update{"n": s.N + 1}, nil })
	g.AddEdge(engine.Start, "inc")
	g.AddConditionalEdges("inc", func(_ context.Context, s counter) (engine.Route, error) {
		if s.N >= 998 {
			return engine.To(engine.End), nil
		}
		return engine.To("inc"), nil
	}, nil)
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cg.Invoke(ctx, engine.Update{"n": 0}, &engine.RunOptions{ThreadID: "h", Durability: engine.DurabilitySync}); err != nil {
		b.Fatal(err)
	}
	cfg := checkpoints.Config{ThreadID: "h"}
	if all, _ := cg.GetStateHistory(ctx, cfg, engine.HistoryOptions{MetadataOnly: true}); len(all) != 1000 {
		b.Fatalf("thread has %d checkpoints, want 1000", len(all))
	}
	b.ReportAllocs()
	for b.Loop() {
		page, err := cg.GetStateHistory(ctx, cfg, engine.HistoryOptions{MetadataOnly: true, Limit: 50})
		if err != nil || len(page) != 50 {
			b.Fatal(len(page), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/page")
}

type waitDocsState struct {
	Query  string   `json:"query"`
	Docs   []string `json:"docs" reduce:"append"`
	Answer string   `json:"answer"`
}

func waitingEdgeGraph(t *testing.T, opts engine.CompileOptions) *engine.Graph[waitDocsState] {
	t.Helper()
	g := engine.NewStateGraph[waitDocsState]()
	g.AddNode("rewrite_query", func(_ context.Context, s waitDocsState) (engine.Output, error) {
		return engine.Update{"query": "query: " + s.Query}, nil
	})
	g.AddNode("analyzer_one", func(_ context.Context, s waitDocsState) (engine.Output, error) {
		return engine.Update{"query": "analyzed: " + s.Query}, nil
	})
	g.AddNode("retriever_one", func(context.Context, waitDocsState) (engine.Output, error) {
		return engine.Update{"docs": []string{"doc1", "doc2"}}, nil
	})
	g.AddNode("retriever_two", func(context.Context, waitDocsState) (engine.Output, error) {
		return engine.Update{"docs": []string{"doc3", "doc4"}}, nil
	})
	g.AddNode("qa", func(_ context.Context, s waitDocsState) (engine.Output, error) {
		docs := append([]string(nil), s.Docs...)
		sort.Strings(docs)
		return engine.Update{"answer": strings.Join(docs, ",")}, nil
	})
	g.AddEdge(engine.Start, "rewrite_query").AddEdge("rewrite_query", "analyzer_one").AddEdge("analyzer_one", "retriever_one")
	g.AddEdge("rewrite_query", "retriever_two").AddJoin([]string{"retriever_one", "retriever_two"}, "qa")
	cg, err := g.Compile(opts)
	if err != nil {
		t.Fatal(err)
	}
	return cg
}

// Reference §11 case 23: breakpoints in a waiting-edge fan-out.
func TestBreakpointsInWaitingEdgeFanOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	after := waitingEdgeGraph(t, engine.CompileOptions{Checkpointer: checkpoints.NewMemory(), InterruptAfter: []string{"retriever_one"}})
	opts := &engine.RunOptions{ThreadID: "1"}
	if _, err := after.Invoke(ctx, engine.Update{"query": "what is weather in sf"}, opts); !errors.Is(err, engine.ErrInterrupted) {
		t.Fatalf("interrupt after retriever_one: %v", err)
	}
	var updates []map[string]any
	for p, err := range after.Stream(ctx, nil, opts, engine.StreamUpdates) {
		if err != nil {
			t.Fatal(err)
		}
		updates = append(updates, p.Data.(map[string]any))
	}
	if len(updates) != 1 || updates[0]["qa"] == nil {
		t.Fatalf("resume streamed %v, want only qa", updates)
	}

	before := waitingEdgeGraph(t, engine.CompileOptions{Checkpointer: checkpoints.NewMemory(), InterruptBefore: []string{"qa"}})
	if _, err := before.Invoke(ctx, engine.Update{"query": "what is weather in sf"}, opts); !errors.Is(err, engine.ErrInterrupted) {
		t.Fatalf("interrupt before qa: %v", err)
	}
	cfg, err := before.UpdateState(ctx, checkpoints.Config{ThreadID: "1"}, engine.Update{"docs": []string{"doc5"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := before.GetState(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st.Next, []string{"qa"}) || st.Metadata.Source != checkpoints.SourceUpdate || st.Metadata.Step != 4 {
		t.Fatalf("after update: next %v, metadata %+v", st.Next, st.Metadata)
	}
	out, err := before.Invoke(ctx, nil, opts)
	if err != nil || out.Answer != "doc1,doc2,doc3,doc4,doc5" {
		t.Fatalf("resume: %+v %v", out, err)
	}
}

type robotState struct {
	RobotInput string `json:"robot_input"`
	HumanInput string `json:"human_input"`
}

// Reference §11 case 21: interrupts in the values and updates streams. The
// run that stops shows the interrupt in both; the resume streams the state
// it resumes from first.
func TestInterruptInValuesAndUpdatesStreams(t *testing.T) {
	t.Parallel()
	g := engine.NewStateGraph[robotState]()
	g.AddNode("robot", func(context.Context, robotState) (engine.Output, error) {
		return engine.Update{"robot_input": "beep"}, nil
	})
	g.AddNode("human_input_node", func(ctx context.Context, s robotState) (engine.Output, error) {
		a, err := engine.Interrupt(ctx, "what does the human say?")
		if err != nil {
			return nil, err
		}
		return engine.Update{"human_input": a}, nil
	})
	g.AddEdge(engine.Start, "robot").AddEdge("robot", "human_input_node")
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	opts := &engine.RunOptions{ThreadID: "1"}
	shape := func(in any) (out []string, last map[string]any) {
		for p, err := range cg.Stream(ctx, in, opts, engine.StreamUpdates, engine.StreamValues) {
			if err != nil {
				if !errors.Is(err, engine.ErrInterrupted) {
					t.Fatal(err)
				}
				continue
			}
			m := p.Data.(map[string]any)
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			out = append(out, string(p.Mode)+strings.Join(keys, "+"))
			last = m
		}
		return out, last
	}
	got, last := shape(engine.Update{"robot_input": ""})
	// Keys without a value are absent, as upstream; the first values part
	// is the input applied by START.
	want := []string{"valuesrobot_input", "updatesrobot", "valuesrobot_input", "updates__interrupt__", "values__interrupt__+robot_input"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("first run streamed %v\nwant %v", got, want)
	}
	if is, ok := last["__interrupt__"].([]engine.Interruption); !ok || len(is) != 1 || is[0].Value != "what does the human say?" {
		t.Fatalf("last values part %v", last)
	}
	got, last = shape(engine.Command{Resume: "hello"})
	want = []string{"valuesrobot_input", "updateshuman_input_node", "valueshuman_input+robot_input"}
	if !reflect.DeepEqual(got, want) || last["human_input"] != "hello" {
		t.Fatalf("resume streamed %v (last %v)\nwant %v", got, last, want)
	}
}

// UpdateStateWith reports the fork it makes, with its parent and next tasks,
// so a viewer can draw the new branch live.
func TestUpdateStateEmitsTheNewCheckpoint(t *testing.T) {
	t.Parallel()
	g, _ := abGraph(t)
	ctx := context.Background()
	if _, err := g.Invoke(ctx, engine.Update{"log": []string{}}, &engine.RunOptions{ThreadID: "1"}); err != nil {
		t.Fatal(err)
	}
	hist, err := g.GetStateHistory(ctx, checkpoints.Config{ThreadID: "1"}, engine.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var beforeB *engine.StateSnapshot
	for _, h := range hist {
		if reflect.DeepEqual(h.Next, []string{"node_b"}) {
			beforeB = h
		}
	}
	if beforeB == nil {
		t.Fatal("no checkpoint before node_b")
	}
	var saved []engine.CheckpointSaved
	fork, err := g.UpdateStateWith(ctx, beforeB.Config, [][]engine.StateUpdate{{{Values: engine.Update{"log": "x"}, AsNode: "node_a"}}},
		engine.UpdateOptions{Listener: func(ev engine.Event) {
			if c, ok := ev.(engine.CheckpointSaved); ok {
				saved = append(saved, c)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(saved) != 1 || saved[0].Config != fork || saved[0].Parent == nil || saved[0].Parent.CheckpointID != beforeB.Config.CheckpointID ||
		saved[0].Metadata.Source != checkpoints.SourceUpdate || !reflect.DeepEqual(saved[0].Next, []string{"node_b"}) {
		t.Fatalf("events = %+v", saved)
	}
}

// A subgraph node carries its graph's topology, for viewers that expand it;
// compiled breakpoints are visible on the graph.
func TestSubgraphTopologyAndBreakpoints(t *testing.T) {
	t.Parallel()
	inner := engine.NewStateGraph[logState]()
	inner.AddNode("inner_1", logNode("i1")).AddNode("inner_2", logNode("i2"))
	inner.AddEdge(engine.Start, "inner_1").AddEdge("inner_1", "inner_2")
	sub, err := inner.Compile(engine.CompileOptions{InterruptBefore: []string{"inner_2"}})
	if err != nil {
		t.Fatal(err)
	}
	outer := engine.NewStateGraph[logState]()
	outer.AddNode("a", logNode("a")).AddSubgraph("inner", sub)
	outer.AddEdge(engine.Start, "a").AddEdge("a", "inner")
	g, err := outer.Compile(engine.CompileOptions{InterruptAfter: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	var found *engine.Topology
	for _, n := range g.Topology().Nodes {
		if n.Name == "inner" {
			found = n.Subgraph
		}
		if n.Name == "a" && n.Subgraph != nil {
			t.Fatal("a plain node has a subgraph topology")
		}
	}
	if found == nil {
		t.Fatal("the subgraph node has no topology")
	}
	var names []string
	for _, n := range found.Nodes {
		names = append(names, n.Name)
	}
	if !reflect.DeepEqual(names, []string{engine.Start, "inner_1", "inner_2", engine.End}) {
		t.Fatalf("subgraph nodes %v", names)
	}
	if b, a := g.Pregel().Breakpoints(); len(b) != 0 || !reflect.DeepEqual(a, []string{"a"}) {
		t.Fatalf("breakpoints before %v after %v", b, a)
	}
	if b, _ := sub.Pregel().Breakpoints(); !reflect.DeepEqual(b, []string{"inner_2"}) {
		t.Fatalf("subgraph breakpoints %v", b)
	}
}
