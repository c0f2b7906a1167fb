package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

type keyState struct {
	MyKey string `json:"my_key"`
}

func appendNode(suffix string, calls *atomic.Int32) func(context.Context, keyState) (engine.Output, error) {
	return func(_ context.Context, s keyState) (engine.Output, error) {
		if calls != nil {
			calls.Add(1)
		}
		return engine.Update{"my_key": s.MyKey + suffix}, nil
	}
}

// Reference §11 case 34: outer_1 → inner (compiled with a breakpoint before
// inner_2) → outer_2. The breakpoint inside the subgraph stops the parent;
// GetState shows the subgraph's namespace and, with subgraphs, its state
// with a parents map; resuming the parent resumes inside the subgraph.
func TestNestedGraphState(t *testing.T) {
	t.Parallel()
	inner := engine.NewStateGraph[keyState]()
	inner.AddNode("inner_1", appendNode(" here", nil)).AddNode("inner_2", appendNode(" and there", nil))
	inner.AddEdge(engine.Start, "inner_1").AddEdge("inner_1", "inner_2")
	sub, err := inner.Compile(engine.CompileOptions{InterruptBefore: []string{"inner_2"}})
	if err != nil {
		t.Fatal(err)
	}
	outer := engine.NewStateGraph[keyState]()
	outer.AddNode("outer_1", appendNode(" my value", nil)).AddSubgraph("inner", sub).AddNode("outer_2", appendNode(" and back again", nil))
	outer.AddEdge(engine.Start, "outer_1").AddSequence("outer_1", "inner", "outer_2")
	g, err := outer.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	opts := &engine.RunOptions{ThreadID: "1"}
	if _, err := g.Invoke(ctx, engine.Update{"my_key": "hi"}, opts); !errors.Is(err, engine.ErrInterrupted) {
		t.Fatalf("first run: %v", err)
	}
	st, err := g.GetStateWith(ctx, checkpoints.Config{ThreadID: "1"}, engine.StateOptions{Subgraphs: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Tasks) != 1 || st.Tasks[0].Name != "inner" || st.Tasks[0].Subgraph == nil {
		t.Fatalf("tasks = %+v", st.Tasks)
	}
	ns := st.Tasks[0].Subgraph.Namespace
	if ns != "inner:"+st.Tasks[0].ID {
		t.Fatalf("subgraph namespace %q, want inner:<task id>", ns)
	}
	nested := st.Tasks[0].State
	if nested == nil || nested.Values["my_key"] != "hi my value here" || len(nested.Next) != 1 || nested.Next[0] != "inner_2" {
		t.Fatalf("nested state = %+v", nested)
	}
	if nested.Metadata.Parents[""] != st.Config.CheckpointID {
		t.Fatalf("nested parents = %v, want {\"\": %s}", nested.Metadata.Parents, st.Config.CheckpointID)
	}
	byNS, err := g.GetState(ctx, checkpoints.Config{ThreadID: "1", Namespace: ns})
	if err != nil || byNS.Config.CheckpointID != nested.Config.CheckpointID {
		t.Fatalf("GetState by namespace = %+v, %v", byNS, err)
	}
	out, err := g.Invoke(ctx, nil, opts)
	if err != nil || out.MyKey != "hi my value here and there and back again" {
		t.Fatalf("resume = %q, %v", out.MyKey, err)
	}
}

type approvalState struct {
	Request  string `json:"request"`
	Decision string `json:"decision"`
}

func approvalGraphs(t *testing.T, prepCalls *atomic.Int32) *engine.Graph[approvalState] {
	t.Helper()
	inner := engine.NewStateGraph[approvalState]()
	inner.AddNode("prepare", func(_ context.Context, s approvalState) (engine.Output, error) {
		prepCalls.Add(1)
		return engine.Update{"request": s.Request + " (prepared)"}, nil
	})
	inner.AddNode("ask", func(ctx context.Context, s approvalState) (engine.Output, error) {
		a, err := engine.Interrupt(ctx, "approve "+s.Request+"?")
		if err != nil {
			return nil, err
		}
		return engine.Update{"decision": a}, nil
	})
	inner.AddEdge(engine.Start, "prepare").AddEdge("prepare", "ask")
	sub, err := inner.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	outer := engine.NewStateGraph[approvalState]()
	outer.AddSubgraph("review", sub)
	outer.AddEdge(engine.Start, "review")
	g, err := outer.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestInterruptInsideSubgraph(t *testing.T) {
	t.Parallel()
	for _, byID := range []bool{false, true} {
		var prep atomic.Int32
		g := approvalGraphs(t, &prep)
		ctx := context.Background()
		opts := &engine.RunOptions{ThreadID: "1"}
		_, err := g.Invoke(ctx, engine.Update{"request": "refund"}, opts)
		var intr *engine.Interrupted
		if !errors.As(err, &intr) || len(intr.Interrupts) != 1 || intr.Interrupts[0].Value != "approve refund (prepared)?" {
			t.Fatalf("interrupt did not surface at the root: %v", err)
		}
		if !strings.HasPrefix(intr.Interrupts[0].Namespace, "review:") {
			t.Fatalf("interrupt namespace %q", intr.Interrupts[0].Namespace)
		}
		var resume any = "yes"
		if byID {
			resume = map[string]any{intr.Interrupts[0].ID: "yes"}
		}
		out, err := g.Invoke(ctx, engine.Command{Resume: resume}, opts)
		if err != nil || out.Decision != "yes" || out.Request != "refund (prepared)" {
			t.Fatalf("byID=%v: resume = %+v, %v", byID, out, err)
		}
		if prep.Load() != 1 {
			t.Fatalf("prepare ran %d times: the subgraph restarted instead of resuming", prep.Load())
		}
	}
}

// A replay of the parent from the checkpoint where the subgraph was
// interrupted keeps the subgraph's state: prepare is not re-run, and the
// interrupt fires again on the new branch. Upstream loses it
// (langchain-ai/langgraph#8458).
func TestParentReplayKeepsSubgraphState(t *testing.T) {
	t.Parallel()
	var prep atomic.Int32
	g := approvalGraphs(t, &prep)
	ctx := context.Background()
	opts := &engine.RunOptions{ThreadID: "1"}
	if _, err := g.Invoke(ctx, engine.Update{"request": "refund"}, opts); !errors.Is(err, engine.ErrInterrupted) {
		t.Fatal(err)
	}
	head, err := g.GetState(ctx, checkpoints.Config{ThreadID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Invoke(ctx, nil, &engine.RunOptions{ThreadID: "1", CheckpointID: head.Config.CheckpointID})
	var intr *engine.Interrupted
	if !errors.As(err, &intr) || len(intr.Interrupts) != 1 {
		t.Fatalf("replay: interrupt should fire again: %v", err)
	}
	if prep.Load() != 1 {
		t.Fatalf("prepare ran %d times after the parent's replay: the subgraph state was lost", prep.Load())
	}
	out, err := g.Invoke(ctx, engine.Command{Resume: "no"}, opts)
	if err != nil || out.Decision != "no" || prep.Load() != 1 {
		t.Fatalf("resume on the new branch = %+v, %v (prepare ran %d times)", out, err, prep.Load())
	}
	// The fork via UpdateState keeps it too.
	st, _ := g.GetState(ctx, checkpoints.Config{ThreadID: "1"})
	hist, _ := g.GetStateHistory(ctx, checkpoints.Config{ThreadID: "1"}, engine.HistoryOptions{})
	var beforeReview *engine.StateSnapshot
	for _, h := range hist {
		if len(h.Next) == 1 && h.Next[0] == "review" && h.Metadata.Source == "loop" {
			beforeReview = h
		}
	}
	if beforeReview == nil {
		t.Fatalf("no checkpoint before review; head %+v", st)
	}
}
