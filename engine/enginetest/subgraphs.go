package enginetest

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

func init() {
	register("26 replay from the final checkpoint is a no-op", replayFromFinalIsNoop)
	register("34 subgraph namespaces", nestedGraphState)
	register("34 interrupt inside a subgraph/scalar resume", func(t *testing.T, s checkpoints.Saver) { interruptInsideSubgraph(t, s, false) })
	register("34 interrupt inside a subgraph/resume by id", func(t *testing.T, s checkpoints.Saver) { interruptInsideSubgraph(t, s, true) })
	register("x parent replay keeps the subgraph's state", parentReplayKeepsSubgraphState)
	register("x subgraph state follows every kind of fork", subgraphStateFollowsForks)
}

// Reference §11 case 26 (ttt::test_replay_from_final_checkpoint_is_noop):
// the final checkpoint has nothing next, so replaying it calls no node.
func replayFromFinalIsNoop(t *testing.T, saver checkpoints.Saver) {
	g, bCalls := abGraph(t, saver)
	th := thread(t, "1")
	if _, err := g.Invoke(ctx(), engine.Update{"log": []string{}}, &engine.RunOptions{ThreadID: th}); err != nil {
		t.Fatal(err)
	}
	head, err := g.GetState(ctx(), checkpoints.Config{ThreadID: th})
	if err != nil || len(head.Next) != 0 {
		t.Fatalf("head = %+v, %v; want nothing next", head, err)
	}
	out, err := g.Invoke(ctx(), nil, &engine.RunOptions{ThreadID: th, CheckpointID: head.Config.CheckpointID})
	if err != nil || !reflect.DeepEqual(out.Log, []string{"a", "b"}) || bCalls.Load() != 1 {
		t.Fatalf("replay of the final checkpoint: %v %v, node_b ran %d times; want [a b] and 1", out.Log, err, bCalls.Load())
	}
}

type keyState struct {
	MyKey string `json:"my_key"`
}

func suffixNode(suffix string) func(context.Context, keyState) (engine.Output, error) {
	return func(_ context.Context, s keyState) (engine.Output, error) {
		return engine.Update{"my_key": s.MyKey + suffix}, nil
	}
}

// Reference §11 case 34 (tlc::test_nested_graph_state): outer_1 → inner
// (compiled with a breakpoint before inner_2) → outer_2. The breakpoint
// inside the subgraph stops the parent; GetState shows the subgraph task's
// namespace "inner:<task id>" and, with subgraphs, the nested state whose
// metadata names the parent checkpoint; the subgraph's checkpoints are in
// the same thread under that namespace; resuming the parent resumes inside
// the subgraph.
func nestedGraphState(t *testing.T, saver checkpoints.Saver) {
	inner := engine.NewStateGraph[keyState]()
	inner.AddNode("inner_1", suffixNode(" here")).AddNode("inner_2", suffixNode(" and there"))
	inner.AddEdge(engine.Start, "inner_1").AddEdge("inner_1", "inner_2")
	sub := mustCompile(t, inner, engine.CompileOptions{InterruptBefore: []string{"inner_2"}})
	outer := engine.NewStateGraph[keyState]()
	outer.AddNode("outer_1", suffixNode(" my value")).AddSubgraph("inner", sub).AddNode("outer_2", suffixNode(" and back again"))
	outer.AddEdge(engine.Start, "outer_1").AddSequence("outer_1", "inner", "outer_2")
	g := mustCompile(t, outer, engine.CompileOptions{Checkpointer: saver})
	th := thread(t, "1")
	opts := &engine.RunOptions{ThreadID: th}
	if _, err := g.Invoke(ctx(), engine.Update{"my_key": "hi"}, opts); !errors.Is(err, engine.ErrInterrupted) {
		t.Fatalf("first run: %v, want the subgraph's breakpoint to stop the parent", err)
	}
	st, err := g.GetStateWith(ctx(), checkpoints.Config{ThreadID: th}, engine.StateOptions{Subgraphs: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st.Next, []string{"inner"}) || len(st.Tasks) != 1 || st.Tasks[0].Name != "inner" || st.Tasks[0].Subgraph == nil {
		t.Fatalf("parent: next %v, tasks %+v; want the inner task with its subgraph address", st.Next, st.Tasks)
	}
	ns := st.Tasks[0].Subgraph.Namespace
	if ns != "inner:"+st.Tasks[0].ID || st.Tasks[0].Subgraph.ThreadID != th {
		t.Fatalf("subgraph address %+v, want thread %q and namespace inner:%s", st.Tasks[0].Subgraph, th, st.Tasks[0].ID)
	}
	nested := st.Tasks[0].State
	if nested == nil || nested.Values["my_key"] != "hi my value here" || !reflect.DeepEqual(nested.Next, []string{"inner_2"}) {
		t.Fatalf("nested state = %+v, want my_key %q and next [inner_2]", nested, "hi my value here")
	}
	if nested.Config.Namespace != ns || nested.Metadata.Parents[""] != st.Config.CheckpointID {
		t.Fatalf("nested config %+v, parents %v; want namespace %q and parents {\"\": %s}", nested.Config, nested.Metadata.Parents, ns, st.Config.CheckpointID)
	}
	byNS, err := g.GetState(ctx(), checkpoints.Config{ThreadID: th, Namespace: ns})
	if err != nil || byNS.Config.CheckpointID != nested.Config.CheckpointID {
		t.Fatalf("GetState by namespace = %+v, %v; want the nested checkpoint %s", byNS, err, nested.Config.CheckpointID)
	}
	// The saver keeps the subgraph's checkpoints apart from the root's.
	sub1, err := saver.List(ctx(), checkpoints.ListQuery{ThreadID: th, Namespace: ns}, checkpoints.ListOptions{})
	if err != nil || len(sub1) == 0 || sub1[0].Config.CheckpointID != nested.Config.CheckpointID {
		t.Fatalf("subgraph checkpoints in %q: %d, %v; want the nested checkpoint first", ns, len(sub1), err)
	}
	for _, tup := range history(t, saver, th) {
		if tup.Config.Namespace != "" || len(tup.Metadata.Parents) != 0 {
			t.Fatalf("root listing holds %+v (parents %v), want root checkpoints only", tup.Config, tup.Metadata.Parents)
		}
	}

	out, err := g.Invoke(ctx(), nil, opts)
	if err != nil || out.MyKey != "hi my value here and there and back again" {
		t.Fatalf("resume = %q, %v", out.MyKey, err)
	}
	sub2, err := saver.List(ctx(), checkpoints.ListQuery{ThreadID: th, Namespace: ns}, checkpoints.ListOptions{})
	if err != nil || len(sub2) <= len(sub1) {
		t.Fatalf("subgraph checkpoints after the resume: %d (was %d), %v; want the resumed steps saved in %q", len(sub2), len(sub1), err, ns)
	}
	for _, tup := range sub2 {
		if tup.Metadata.Parents[""] == "" {
			t.Fatalf("subgraph checkpoint %s (step %d) has parents %v, want the root checkpoint", tup.Config.CheckpointID, tup.Metadata.Step, tup.Metadata.Parents)
		}
	}
	if head, err := g.GetState(ctx(), checkpoints.Config{ThreadID: th}); err != nil || len(head.Next) != 0 || head.Values["my_key"] != out.MyKey {
		t.Fatalf("parent head after the resume = %+v, %v", head, err)
	}
}

type approvalState struct {
	Request  string `json:"request"`
	Decision string `json:"decision"`
}

// notedApproval is approvalState with a key of the parent's own, which
// the review subgraph does not read.
type notedApproval struct {
	Request  string `json:"request"`
	Decision string `json:"decision"`
	Note     string `json:"note"`
}

// notedApprovalGraph is approvalGraph's review under a parent whose state
// also has note.
func notedApprovalGraph(t *testing.T, saver checkpoints.Saver, prepCalls *atomic.Int32) *engine.Graph[notedApproval] {
	outer := engine.NewStateGraph[notedApproval]()
	outer.AddSubgraph("review", mustCompile(t, reviewSubgraph(prepCalls), engine.CompileOptions{}))
	outer.AddEdge(engine.Start, "review")
	return mustCompile(t, outer, engine.CompileOptions{Checkpointer: saver})
}

// approvalGraph nests prepare → ask (which interrupts) as the subgraph
// review; prepCalls counts prepare's runs.
func approvalGraph(t *testing.T, saver checkpoints.Saver, prepCalls *atomic.Int32) *engine.Graph[approvalState] {
	outer := engine.NewStateGraph[approvalState]()
	outer.AddSubgraph("review", mustCompile(t, reviewSubgraph(prepCalls), engine.CompileOptions{}))
	outer.AddEdge(engine.Start, "review")
	return mustCompile(t, outer, engine.CompileOptions{Checkpointer: saver})
}

// reviewSubgraph is prepare → ask, which asks to approve the prepared
// request.
func reviewSubgraph(prepCalls *atomic.Int32) *engine.StateGraph[approvalState] {
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
	return inner
}

// An interrupt inside a subgraph surfaces at the root with the subgraph's
// namespace, and a resume of the parent (by value or by id) continues the
// subgraph where it stopped instead of restarting it.
func interruptInsideSubgraph(t *testing.T, saver checkpoints.Saver, byID bool) {
	var prep atomic.Int32
	g := approvalGraph(t, saver, &prep)
	opts := &engine.RunOptions{ThreadID: thread(t, "1")}
	_, err := g.Invoke(ctx(), engine.Update{"request": "refund"}, opts)
	is := interrupted(t, err).Interrupts
	if len(is) != 1 || is[0].Value != "approve refund (prepared)?" || !strings.HasPrefix(is[0].Namespace, "review:") {
		t.Fatalf("interrupts %+v, want the subgraph's question from namespace review:<task id>", is)
	}
	var resume any = "yes"
	if byID {
		resume = map[string]any{is[0].ID: "yes"}
	}
	out, err := g.Invoke(ctx(), engine.Command{Resume: resume}, opts)
	if err != nil || out.Decision != "yes" || out.Request != "refund (prepared)" {
		t.Fatalf("resume = %+v, %v", out, err)
	}
	if prep.Load() != 1 {
		t.Fatalf("prepare ran %d times: the subgraph restarted instead of resuming", prep.Load())
	}
}

// A replay of the parent from the checkpoint where the subgraph was
// interrupted keeps the subgraph's state: prepare is not re-run and the
// interrupt fires again on the new branch. (Upstream loses it,
// langchain-ai/langgraph#8458; the engine finds the subgraph's checkpoint
// through the saver, so this is a saver-dependent behaviour.)
func parentReplayKeepsSubgraphState(t *testing.T, saver checkpoints.Saver) {
	var prep atomic.Int32
	g := approvalGraph(t, saver, &prep)
	th := thread(t, "1")
	opts := &engine.RunOptions{ThreadID: th}
	if _, err := g.Invoke(ctx(), engine.Update{"request": "refund"}, opts); !errors.Is(err, engine.ErrInterrupted) {
		t.Fatal(err)
	}
	head, err := g.GetState(ctx(), checkpoints.Config{ThreadID: th})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Invoke(ctx(), nil, &engine.RunOptions{ThreadID: th, CheckpointID: head.Config.CheckpointID})
	if is := interrupted(t, err).Interrupts; len(is) != 1 {
		t.Fatalf("replay: interrupts %+v, want the subgraph's interrupt again", is)
	}
	if prep.Load() != 1 {
		t.Fatalf("prepare ran %d times after the parent's replay: the subgraph state was lost", prep.Load())
	}
	out, err := g.Invoke(ctx(), engine.Command{Resume: "no"}, opts)
	if err != nil || out.Decision != "no" || prep.Load() != 1 {
		t.Fatalf("resume on the new branch = %+v, %v (prepare ran %d times)", out, err, prep.Load())
	}
}

// Issue 13 item 9 (upstream langchain-ai/langgraph#8458, which we fix): a
// thread stopped at an interrupt inside a subgraph keeps the subgraph's
// state on every kind of fork — a time-travel run from the head, a copy
// (AsCopy), a run from an UpdateState checkpoint with its id, and chains
// of them. The subgraph's first node does not run again, and the answer
// reaches the subgraph's interrupt.
func subgraphStateFollowsForks(t *testing.T, saver checkpoints.Saver) {
	start := func(t *testing.T) (*engine.Graph[approvalState], *atomic.Int32, string, checkpoints.Config) {
		var prep atomic.Int32
		g := approvalGraph(t, saver, &prep)
		th := thread(t, "1")
		if _, err := g.Invoke(ctx(), engine.Update{"request": "refund"}, &engine.RunOptions{ThreadID: th}); !errors.Is(err, engine.ErrInterrupted) {
			t.Fatal(err)
		}
		head, err := g.GetState(ctx(), checkpoints.Config{ThreadID: th})
		if err != nil {
			t.Fatal(err)
		}
		return g, &prep, th, head.Config
	}
	// finish answers the interrupt on the thread's latest checkpoint and
	// checks that prepare ran once in all.
	finish := func(t *testing.T, g *engine.Graph[approvalState], prep *atomic.Int32, th string) {
		t.Helper()
		out, err := g.Invoke(ctx(), engine.Command{Resume: "no"}, &engine.RunOptions{ThreadID: th})
		if err != nil || out.Decision != "no" || out.Request != "refund (prepared)" {
			t.Fatalf("resume = %+v, %v", out, err)
		}
		if n := prep.Load(); n != 1 {
			t.Fatalf("the subgraph's first node ran %d times: its state was lost on the fork", n)
		}
	}
	copyOf := func(t *testing.T, g *engine.Graph[approvalState], cfg checkpoints.Config) checkpoints.Config {
		t.Helper()
		c, err := g.UpdateState(ctx(), cfg, nil, engine.AsCopy)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	runFrom := func(t *testing.T, g *engine.Graph[approvalState], cfg checkpoints.Config) {
		t.Helper()
		_, err := g.Invoke(ctx(), nil, &engine.RunOptions{ThreadID: cfg.ThreadID, CheckpointID: cfg.CheckpointID})
		if is := interrupted(t, err).Interrupts; len(is) != 1 || is[0].Value != "approve refund (prepared)?" {
			t.Fatalf("run from %s: interrupts %+v, want the subgraph's question again", cfg.CheckpointID, is)
		}
	}
	t.Run("time travel to the head", func(t *testing.T) {
		g, prep, th, head := start(t)
		runFrom(t, g, head)
		finish(t, g, prep, th)
	})
	t.Run("copy", func(t *testing.T) {
		g, prep, th, head := start(t)
		copyOf(t, g, head)
		finish(t, g, prep, th)
	})
	t.Run("copy of a copy, run from it", func(t *testing.T) {
		g, prep, th, head := start(t)
		c := copyOf(t, g, copyOf(t, g, head))
		runFrom(t, g, c)
		finish(t, g, prep, th)
	})
	t.Run("update of a key the subgraph does not read, run from it by id", func(t *testing.T) {
		var prep atomic.Int32
		g := notedApprovalGraph(t, saver, &prep)
		th := thread(t, "1")
		if _, err := g.Invoke(ctx(), engine.Update{"request": "refund"}, &engine.RunOptions{ThreadID: th}); !errors.Is(err, engine.ErrInterrupted) {
			t.Fatal(err)
		}
		head, err := g.GetState(ctx(), checkpoints.Config{ThreadID: th})
		if err != nil {
			t.Fatal(err)
		}
		u, err := g.UpdateState(ctx(), head.Config, engine.Update{"note": "urgent"}, engine.Start)
		if err != nil {
			t.Fatal(err)
		}
		_, err = g.Invoke(ctx(), nil, &engine.RunOptions{ThreadID: th, CheckpointID: u.CheckpointID})
		if is := interrupted(t, err).Interrupts; len(is) != 1 || is[0].Value != "approve refund (prepared)?" {
			t.Fatalf("run from the edit: interrupts %+v", is)
		}
		out, err := g.Invoke(ctx(), engine.Command{Resume: "no"}, &engine.RunOptions{ThreadID: th})
		if err != nil || out.Decision != "no" || out.Note != "urgent" || prep.Load() != 1 {
			t.Fatalf("resume = %+v, %v; prepare ran %d times, want once (the subgraph kept its state)", out, err, prep.Load())
		}
	})
	t.Run("update of the subgraph's input starts it over on the new input", func(t *testing.T) {
		g, prep, th, head := start(t)
		u, err := g.UpdateState(ctx(), head, engine.Update{"request": "exchange"}, engine.Start)
		if err != nil {
			t.Fatal(err)
		}
		_, err = g.Invoke(ctx(), nil, &engine.RunOptions{ThreadID: th, CheckpointID: u.CheckpointID})
		if is := interrupted(t, err).Interrupts; len(is) != 1 || is[0].Value != "approve exchange (prepared)?" {
			t.Fatalf("run from the edit: interrupts %+v, want the question on the edited request", is)
		}
		if prep.Load() != 2 {
			t.Fatalf("prepare ran %d times, want twice: the edited input must reach the subgraph", prep.Load())
		}
	})
	t.Run("a subgraph that finished runs again on time travel", func(t *testing.T) {
		g, prep, th, _ := start(t)
		if _, err := g.Invoke(ctx(), engine.Command{Resume: "yes"}, &engine.RunOptions{ThreadID: th}); err != nil {
			t.Fatal(err)
		}
		before := snapshotWithNext(t, g, th, "review")
		_, err := g.Invoke(ctx(), nil, &engine.RunOptions{ThreadID: th, CheckpointID: before.Config.CheckpointID})
		if is := interrupted(t, err).Interrupts; len(is) != 1 {
			t.Fatalf("travel to before the finished subgraph: interrupts %+v, want its question again", is)
		}
		if prep.Load() != 2 {
			t.Fatalf("prepare ran %d times, want twice: a finished subgraph re-runs after the checkpoint travelled to", prep.Load())
		}
	})
	t.Run("copy of a copy, then time travel to the head of a fork", func(t *testing.T) {
		g, prep, th, head := start(t)
		runFrom(t, g, copyOf(t, g, copyOf(t, g, head)))
		latest, err := g.GetState(ctx(), checkpoints.Config{ThreadID: th})
		if err != nil {
			t.Fatal(err)
		}
		// The head is still the second copy (the run stopped inside its
		// step): travelling to it again runs from it directly and still
		// keeps the state.
		runFrom(t, g, latest.Config)
		finish(t, g, prep, th)
	})
}
