package enginetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

func init() {
	register("25 27 replay re-runs later nodes, forks, re-fires interrupts", replayFromOlderCheckpoint)
	register("28 fork via update state re-runs with the modified state", forkRerunsWithModifiedState)
	register("29 fork does not apply old pending writes", forkDoesNotApplyPendingWrites)
	register("30 copy fork is a sibling", copyForkIsASibling)
	register("30 copy fork re-fires an answered interrupt", copyForkRefiresInterrupt)
	register("31 history shape and replay from each point", historyShapeAndReplay)
	register("32 update state routes through the node's writers", updateStateRoutesThroughWriters)
	register("33 bulk update reproduces history", bulkUpdateReproducesHistory)
	register("x update state errors write nothing", updateStateErrors)
	register("x which runs from a checkpoint fork", whichRunsFork)
}

// abGraph is START→node_a→node_b on a log; bCalls counts node_b's runs.
func abGraph(t *testing.T, saver checkpoints.Saver) (*engine.Graph[logState], *atomic.Int32) {
	var bCalls atomic.Int32
	g := engine.NewStateGraph[logState]()
	g.AddNode("node_a", logNode("a"))
	g.AddNode("node_b", func(context.Context, logState) (engine.Output, error) {
		bCalls.Add(1)
		return engine.Update{"log": "b"}, nil
	})
	g.AddEdge(engine.Start, "node_a").AddEdge("node_a", "node_b")
	return mustCompile(t, g, engine.CompileOptions{Checkpointer: saver}), &bCalls
}

// Reference §11 cases 25 and 27: replaying from an older checkpoint writes a
// fork checkpoint first, re-runs only the nodes after it, and makes
// interrupts fire again.
func replayFromOlderCheckpoint(t *testing.T, saver checkpoints.Saver) {
	var aCalls, bCalls atomic.Int32
	g := engine.NewStateGraph[logState]()
	g.AddNode("node_a", func(context.Context, logState) (engine.Output, error) {
		aCalls.Add(1)
		return engine.Update{"log": "a"}, nil
	})
	g.AddNode("ask_human", func(ctx context.Context, s logState) (engine.Output, error) {
		ans, err := engine.Interrupt(ctx, "what?")
		if err != nil {
			return nil, err
		}
		return engine.Update{"log": "human:" + ans.(string)}, nil
	})
	g.AddNode("node_b", func(context.Context, logState) (engine.Output, error) {
		bCalls.Add(1)
		return engine.Update{"log": "b"}, nil
	})
	g.AddEdge(engine.Start, "node_a").AddSequence("node_a", "ask_human", "node_b")
	cg := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver})
	th := thread(t, "1")
	opts := &engine.RunOptions{ThreadID: th}
	_, err := cg.Invoke(ctx(), engine.Update{"log": []string{}}, opts)
	interrupted(t, err)
	out, err := cg.Invoke(ctx(), engine.Command{Resume: "first"}, opts)
	if err != nil || !reflect.DeepEqual(out.Log, []string{"a", "human:first", "b"}) {
		t.Fatalf("first branch %v %v", out.Log, err)
	}
	hist := stateHistory(t, cg, th)
	beforeAsk := snapshotWithNext(t, cg, th, "ask_human")
	_, err = cg.Invoke(ctx(), nil, &engine.RunOptions{ThreadID: th, CheckpointID: beforeAsk.Config.CheckpointID})
	interrupted(t, err) // the interrupt fires again
	out, err = cg.Invoke(ctx(), engine.Command{Resume: "new_answer"}, opts)
	if err != nil || !reflect.DeepEqual(out.Log, []string{"a", "human:new_answer", "b"}) {
		t.Fatalf("new branch %v %v", out.Log, err)
	}
	if aCalls.Load() != 1 || bCalls.Load() != 2 {
		t.Fatalf("node_a ran %d times (want 1), node_b %d (want 2)", aCalls.Load(), bCalls.Load())
	}
	hist2, err := cg.GetStateHistory(ctx(), checkpoints.Config{ThreadID: th}, engine.HistoryOptions{MetadataOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var fork *engine.StateSnapshot
	for _, h := range hist2 {
		if h.Metadata.Source == checkpoints.SourceFork {
			fork = h
		}
	}
	if fork == nil || fork.ParentConfig == nil || fork.ParentConfig.CheckpointID != beforeAsk.Config.CheckpointID {
		t.Fatalf("fork checkpoint missing or not a child of the replayed one: %+v", fork)
	}
	// Case 27's history after replay + resume, newest first.
	// The fork's step is the replayed checkpoint's + 1, as upstream, and
	// the steps after it follow on.
	var shape []string
	for _, h := range stateHistory(t, cg, th) {
		shape = append(shape, fmt.Sprintf("%s%d(%s)", h.Metadata.Source, h.Metadata.Step, strings.Join(h.Next, ",")))
	}
	wantShape := []string{"loop4()", "loop3(node_b)", "fork2(ask_human)", "loop3()", "loop2(node_b)", "loop1(ask_human)", "loop0(node_a)", "input-1(__start__)"}
	if !reflect.DeepEqual(shape, wantShape) {
		t.Fatalf("history after replay and resume = %v, want %v", shape, wantShape)
	}
	// The old branch is preserved.
	old, err := cg.GetState(ctx(), hist[0].Config)
	if err != nil || !reflect.DeepEqual(old.Values["log"], []string{"a", "human:first", "b"}) {
		t.Fatalf("old head %+v %v", old, err)
	}
}

// Reference §11 case 28: a fork via UpdateState re-runs with the modified
// state, and two forks of one checkpoint are independent.
func forkRerunsWithModifiedState(t *testing.T, saver checkpoints.Saver) {
	g, bCalls := abGraph(t, saver)
	th := thread(t, "1")
	if _, err := g.Invoke(ctx(), engine.Update{"log": []string{}}, &engine.RunOptions{ThreadID: th}); err != nil {
		t.Fatal(err)
	}
	beforeB := snapshotWithNext(t, g, th, "node_b")
	for _, x := range []string{"x", "y"} {
		fork, err := g.UpdateState(ctx(), beforeB.Config, engine.Update{"log": x}, "")
		if err != nil {
			t.Fatal(err)
		}
		st, err := g.GetState(ctx(), fork)
		if err != nil || st.Metadata.Source != checkpoints.SourceUpdate || st.ParentConfig == nil || st.ParentConfig.CheckpointID != beforeB.Config.CheckpointID {
			t.Fatalf("fork %s: %+v %v", x, st, err)
		}
		if !reflect.DeepEqual(st.Next, []string{"node_b"}) {
			t.Fatalf("fork %s: next %v (the plain edge out of node_a fires again)", x, st.Next)
		}
		out, err := g.Invoke(ctx(), nil, &engine.RunOptions{ThreadID: th, CheckpointID: fork.CheckpointID})
		if err != nil || !reflect.DeepEqual(out.Log, []string{"a", x, "b"}) {
			t.Fatalf("fork %s: %v %v", x, out.Log, err)
		}
	}
	if bCalls.Load() != 3 {
		t.Fatalf("node_b ran %d times, want 3", bCalls.Load())
	}
}

// Reference §11 case 29: a fork never applies the old checkpoint's
// pending writes.
func forkDoesNotApplyPendingWrites(t *testing.T, saver checkpoints.Saver) {
	g := engine.NewStateGraph[addState]()
	g.AddNode("node_a", func(context.Context, addState) (engine.Output, error) { return engine.Update{"value": 10}, nil })
	g.AddNode("node_b", func(context.Context, addState) (engine.Output, error) { return engine.Update{"value": 100}, nil })
	g.AddEdge(engine.Start, "node_a").AddEdge("node_a", "node_b")
	cg := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver})
	th := thread(t, "1")
	if out, err := cg.Invoke(ctx(), engine.Update{"value": 1}, &engine.RunOptions{ThreadID: th}); err != nil || out.Value != 111 {
		t.Fatal(out, err)
	}
	beforeA := snapshotWithNext(t, cg, th, "node_a")
	fork, err := cg.UpdateState(ctx(), beforeA.Config, engine.Update{"value": 20}, "node_a")
	if err != nil {
		t.Fatal(err)
	}
	out, err := cg.Invoke(ctx(), nil, &engine.RunOptions{ThreadID: th, CheckpointID: fork.CheckpointID})
	if err != nil || out.Value != 121 {
		t.Fatalf("got %+v %v, want 121", out, err)
	}
}

// Reference §11 case 30: __copy__ forks as a sibling (source fork); a plain
// update has source update.
func copyForkIsASibling(t *testing.T, saver checkpoints.Saver) {
	g, _ := abGraph(t, saver)
	th := thread(t, "1")
	if _, err := g.Invoke(ctx(), engine.Update{"log": []string{}}, &engine.RunOptions{ThreadID: th}); err != nil {
		t.Fatal(err)
	}
	beforeB := snapshotWithNext(t, g, th, "node_b")
	cp, err := g.UpdateState(ctx(), beforeB.Config, nil, engine.AsCopy)
	if err != nil {
		t.Fatal(err)
	}
	st, err := g.GetState(ctx(), cp)
	if err != nil {
		t.Fatal(err)
	}
	if st.Metadata.Source != checkpoints.SourceFork || !reflect.DeepEqual(st.ParentConfig, beforeB.ParentConfig) ||
		!reflect.DeepEqual(st.Values, beforeB.Values) || !reflect.DeepEqual(st.Next, []string{"node_b"}) {
		t.Fatalf("copy = %+v (parent %+v), want a sibling of %+v", st, st.ParentConfig, beforeB.Config)
	}
	up, err := g.UpdateState(ctx(), beforeB.Config, engine.Update{"log": "x"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := g.GetState(ctx(), up); err != nil || st.Metadata.Source != checkpoints.SourceUpdate {
		t.Fatalf("plain update: %+v, %v; want source update", st, err)
	}
}

// Reference §11 case 30 (ttt::test_copy_fork_retriggers_interrupt): a
// __copy__ of the checkpoint where ask interrupted, after the interrupt
// was answered, asks again: the answer stored on the original checkpoint
// belongs to its task, not to the fork's. The fork answers on its own
// branch; the original branch keeps its answer.
func copyForkRefiresInterrupt(t *testing.T, saver checkpoints.Saver) {
	var asks atomic.Int32
	g := engine.NewStateGraph[logState]()
	g.AddNode("ask", func(ctx context.Context, s logState) (engine.Output, error) {
		asks.Add(1)
		a, err := engine.Interrupt(ctx, "ok?")
		if err != nil {
			return nil, err
		}
		return engine.Update{"log": a}, nil
	})
	g.AddEdge(engine.Start, "ask")
	cg := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver})
	th := thread(t, "1")
	opts := &engine.RunOptions{ThreadID: th}
	_, err := cg.Invoke(ctx(), engine.Update{"log": []string{}}, opts)
	interrupted(t, err)
	if out, err := cg.Invoke(ctx(), engine.Command{Resume: "yes"}, opts); err != nil || !reflect.DeepEqual(out.Log, []string{"yes"}) {
		t.Fatalf("first answer: %v, %v", out.Log, err)
	}
	answered := latest(t, saver, th)
	atAsk := snapshotWithNext(t, cg, th, "ask")
	fork, err := cg.UpdateState(ctx(), atAsk.Config, nil, engine.AsCopy)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := cg.GetState(ctx(), fork); err != nil || st.Metadata.Source != checkpoints.SourceFork {
		t.Fatalf("copy: %+v, %v; want source fork", st, err)
	}
	_, err = cg.Invoke(ctx(), nil, &engine.RunOptions{ThreadID: th, CheckpointID: fork.CheckpointID})
	if is := interrupted(t, err).Interrupts; len(is) != 1 || is[0].Value != "ok?" {
		t.Fatalf("run of the copy: interrupts %+v, want ask's question again", is)
	}
	out, err := cg.Invoke(ctx(), engine.Command{Resume: "again"}, opts)
	if err != nil || !reflect.DeepEqual(out.Log, []string{"again"}) {
		t.Fatalf("answer on the fork: %v, %v; want [again]", out.Log, err)
	}
	if n := asks.Load(); n != 4 {
		t.Fatalf("ask ran %d times, want 4 (ask, answer, ask on the copy, answer)", n)
	}
	old, err := cg.GetState(ctx(), answered.Config)
	if err != nil || !reflect.DeepEqual(old.Values["log"], []string{"yes"}) {
		t.Fatalf("original branch = %+v, %v; want its answer kept", old, err)
	}
}

// Reference §11 case 31 (tlc::test_fork_always_re_runs_nodes): add_one
// adds 1 while the value is below 6, from input 1. The stream alternates
// values and updates; the history has the input checkpoint (value 0, next
// START with result 1) and steps 0..5, each loop checkpoint but the last
// showing add_one as next with its result 1; streaming
// nil from history[k] re-runs add_one k times (the hidden START task of the
// input checkpoint aside) and ends at 6 again.
func historyShapeAndReplay(t *testing.T, saver checkpoints.Saver) {
	var calls atomic.Int32
	g := engine.NewStateGraph[addState]()
	g.AddNode("add_one", func(context.Context, addState) (engine.Output, error) {
		calls.Add(1)
		return engine.Update{"value": 1}, nil
	})
	g.AddEdge(engine.Start, "add_one")
	g.AddConditionalEdges("add_one", func(_ context.Context, s addState) (engine.Route, error) {
		if s.Value < 6 {
			return engine.To("add_one"), nil
		}
		return engine.To(engine.End), nil
	}, nil)
	cg := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver})
	th := thread(t, "1")

	var got []any
	for _, p := range collect(t, cg, engine.Update{"value": 1}, &engine.RunOptions{ThreadID: th, Durability: engine.DurabilityAsync}, engine.StreamValues, engine.StreamUpdates) {
		got = append(got, string(p.Mode), p.Data)
	}
	want := []any{"values", map[string]any{"value": 1}}
	for v := 2; v <= 6; v++ {
		want = append(want, "updates", map[string]any{"add_one": map[string]any{"value": 1}}, "values", map[string]any{"value": v})
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stream =\n%v\nwant\n%v", got, want)
	}

	hist := stateHistory(t, cg, th)
	if len(hist) != 7 {
		t.Fatalf("history has %d snapshots, want 7", len(hist))
	}
	for k, h := range hist {
		step := 5 - k
		source := checkpoints.SourceLoop
		wantNext, wantTask, wantResult := []string{"add_one"}, "add_one", map[string]any{"value": 1}
		switch {
		case k == 0:
			wantNext, wantTask = nil, ""
		case step == -1:
			source = checkpoints.SourceInput
			wantNext, wantTask = []string{engine.Start}, engine.Start
		}
		if h.Metadata.Step != step || h.Metadata.Source != source {
			t.Errorf("history[%d]: %s step %d, want %s step %d", k, h.Metadata.Source, h.Metadata.Step, source, step)
		}
		// The input checkpoint shows the reducer's zero, as upstream's 0.
		if !reflect.DeepEqual(h.Values, map[string]any{"value": 6 - k}) {
			t.Errorf("history[%d] values = %v, want {value: %d}", k, h.Values, 6-k)
		}
		if len(h.Next) != len(wantNext) || (len(wantNext) > 0 && !reflect.DeepEqual(h.Next, wantNext)) {
			t.Errorf("history[%d] next = %v, want %v", k, h.Next, wantNext)
		}
		switch {
		case wantTask == "":
			if len(h.Tasks) != 0 {
				t.Errorf("history[%d] tasks = %+v, want none", k, h.Tasks)
			}
		case len(h.Tasks) != 1 || h.Tasks[0].Name != wantTask || !reflect.DeepEqual(h.Tasks[0].Result, wantResult):
			t.Errorf("history[%d] tasks = %+v, want %s with result %v", k, h.Tasks, wantTask, wantResult)
		}
		if k+1 < len(hist) {
			if h.ParentConfig == nil || h.ParentConfig.CheckpointID != hist[k+1].Config.CheckpointID {
				t.Errorf("history[%d] parent = %+v, want history[%d] %s", k, h.ParentConfig, k+1, hist[k+1].Config.CheckpointID)
			}
		} else if h.ParentConfig != nil {
			t.Errorf("the input checkpoint has parent %+v, want none", h.ParentConfig)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	for k, h := range hist {
		before := calls.Load()
		var updates int
		var last any
		for _, p := range collect(t, cg, nil, &engine.RunOptions{ThreadID: th, CheckpointID: h.Config.CheckpointID}, engine.StreamUpdates, engine.StreamValues) {
			switch p.Mode {
			case engine.StreamUpdates:
				if !reflect.DeepEqual(p.Data, map[string]any{"add_one": map[string]any{"value": 1}}) {
					t.Fatalf("replay from history[%d]: update %v, want add_one's", k, p.Data)
				}
				updates++
			case engine.StreamValues:
				last = p.Data
			}
		}
		wantUpdates := min(k, 5)
		if updates != wantUpdates || calls.Load()-before != int32(wantUpdates) {
			t.Fatalf("replay from history[%d]: %d updates, add_one ran %d times; want %d", k, updates, calls.Load()-before, wantUpdates)
		}
		if k > 0 && !reflect.DeepEqual(last, map[string]any{"value": 6}) {
			t.Fatalf("replay from history[%d] ended at %v, want {value: 6}", k, last)
		}
	}
}

// Reference §11 case 32: a node that routes only with Command.Goto loses its
// route under a plain update, keeps it under a Command update.
func updateStateRoutesThroughWriters(t *testing.T, saver checkpoints.Saver) {
	g := engine.NewStateGraph[routeState]()
	g.AddNode("a", func(context.Context, routeState) (engine.Output, error) {
		return engine.Command{Update: engine.Update{"v": "a"}, Goto: []any{"b"}}, nil
	}, engine.Destinations("b"))
	g.AddNode("b", func(context.Context, routeState) (engine.Output, error) { return engine.Update{"v": "b"}, nil })
	g.AddEdge(engine.Start, "a")
	cg := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver, InterruptBefore: []string{"b"}})
	th := thread(t, "1")
	_, err := cg.Invoke(ctx(), engine.Update{"v": ""}, &engine.RunOptions{ThreadID: th})
	if !errors.Is(err, engine.ErrInterrupted) {
		t.Fatal(err)
	}
	head, err := cg.GetState(ctx(), checkpoints.Config{ThreadID: th})
	if err != nil {
		t.Fatal(err)
	}
	up, err := cg.UpdateState(ctx(), head.Config, engine.Update{"v": "edited"}, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := cg.GetState(ctx(), up)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Next) != 0 || st.Metadata.Source != checkpoints.SourceUpdate || st.Metadata.Step != head.Metadata.Step+1 {
		t.Fatalf("plain update: next %v, md %+v", st.Next, st.Metadata)
	}
	up, err = cg.UpdateState(ctx(), head.Config, engine.Command{Update: engine.Update{"v": "edited"}, Goto: []any{"b"}}, "a")
	if err != nil {
		t.Fatal(err)
	}
	st, err = cg.GetState(ctx(), up)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st.Next, []string{"b"}) || st.Values["v"] != "edited" {
		t.Fatalf("command update: %+v", st)
	}
}

// UpdateState rejects bad updates with a clear ErrInvalidUpdate and saves
// nothing.
func updateStateErrors(t *testing.T, saver checkpoints.Saver) {
	g := engine.NewStateGraph[pairState]()
	g.AddNode("x", func(context.Context, pairState) (engine.Output, error) { return engine.Update{"a": "x"}, nil })
	g.AddNode("y", func(context.Context, pairState) (engine.Output, error) { return engine.Update{"b": "y"}, nil })
	g.AddEdge(engine.Start, "x").AddEdge(engine.Start, "y")
	cg := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver})
	th := thread(t, "1")
	if _, err := cg.Invoke(ctx(), engine.Update{"a": ""}, &engine.RunOptions{ThreadID: th}); err != nil {
		t.Fatal(err)
	}
	cfg := checkpoints.Config{ThreadID: th}
	for _, tc := range []struct {
		values any
		asNode string
		want   string
	}{
		{engine.Update{"a": "z"}, "", "ambiguous"},
		{engine.Update{"a": "z"}, "nope", `unknown as-node "nope"`},
		{engine.Update{"nokey": 1}, "x", `unknown state key "nokey"`},
		{engine.Update{"a": 5}, "x", "holds string"},
		{42, "x", "must be an Update"},
		{engine.Update{"a": "z"}, engine.End, "takes no values"},
	} {
		_, err := cg.UpdateState(ctx(), cfg, tc.values, tc.asNode)
		if !errors.Is(err, engine.ErrInvalidUpdate) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("UpdateState(%v, %q) = %v, want an error containing %q", tc.values, tc.asNode, err, tc.want)
		}
	}
	hist, err := cg.GetStateHistory(ctx(), cfg, engine.HistoryOptions{MetadataOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 3 {
		t.Fatalf("failed updates wrote checkpoints: history has %d, want 3", len(hist))
	}
}

// Reference §11 case 33: bulk updates reproduce a run's history.
func bulkUpdateReproducesHistory(t *testing.T, saver checkpoints.Saver) {
	g, _ := abGraph(t, saver)
	real, cp := thread(t, "real"), thread(t, "copy")
	if _, err := g.Invoke(ctx(), engine.Update{"log": []string{"in"}}, &engine.RunOptions{ThreadID: real}); err != nil {
		t.Fatal(err)
	}
	_, err := g.BulkUpdateState(ctx(), checkpoints.Config{ThreadID: cp}, [][]engine.StateUpdate{
		{{Values: engine.Update{"log": []string{"in"}}, AsNode: engine.AsInput}},
		{{Values: engine.Update{"log": []string{"in"}}, AsNode: engine.Start}},
		{{Values: engine.Update{"log": "a"}, AsNode: "node_a"}},
		{{Values: engine.Update{"log": "b"}, AsNode: "node_b"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	shape := func(thread string) (out []any) {
		for _, h := range stateHistory(t, g, thread) {
			out = append(out, h.Values["log"], h.Next, h.Metadata.Step)
		}
		return out
	}
	if r, c := shape(real), shape(cp); !reflect.DeepEqual(r, c) {
		t.Fatalf("bulk history differs:\nreal %v\ncopy %v", r, c)
	}
}

// Issue 13 item 5: which runs from an explicit checkpoint write a fork
// checkpoint first. As upstream: a time-travel run (a nil input, or a
// Command that answers no interrupt) from a checkpoint the loop wrote
// forks, one step after it; one from an UpdateState checkpoint or a copy
// runs from it directly; a Command with Resume at a checkpoint's id is a
// resume and never forks.
func whichRunsFork(t *testing.T, saver checkpoints.Saver) {
	shape := func(g *engine.Graph[logState], th string) []string {
		var out []string
		for _, h := range stateHistory(t, g, th) {
			out = append(out, fmt.Sprintf("%s%d", h.Metadata.Source, h.Metadata.Step))
		}
		return out
	}
	setup := func(t *testing.T) (*engine.Graph[logState], string, *engine.StateSnapshot) {
		g, _ := abGraph(t, saver)
		th := thread(t, "1")
		if _, err := g.Invoke(ctx(), engine.Update{"log": []string{"in"}}, &engine.RunOptions{ThreadID: th}); err != nil {
			t.Fatal(err)
		}
		return g, th, snapshotWithNext(t, g, th, "node_b")
	}
	t.Run("an edit is run from directly", func(t *testing.T) {
		g, th, beforeB := setup(t)
		u, err := g.UpdateState(ctx(), beforeB.Config, engine.Update{"log": "x"}, "node_a")
		if err != nil {
			t.Fatal(err)
		}
		out, err := g.Invoke(ctx(), nil, &engine.RunOptions{ThreadID: th, CheckpointID: u.CheckpointID})
		if err != nil || !reflect.DeepEqual(out.Log, []string{"in", "a", "x", "b"}) {
			t.Fatalf("run from the edit = %v, %v", out.Log, err)
		}
		want := []string{"loop3", "update2", "loop2", "loop1", "loop0", "input-1"}
		if got := shape(g, th); !reflect.DeepEqual(got, want) {
			t.Fatalf("history %v, want %v (no fork after an edit)", got, want)
		}
		head := latest(t, saver, th)
		if head.ParentConfig == nil || head.ParentConfig.CheckpointID != u.CheckpointID {
			t.Fatalf("the run's checkpoint's parent is %+v, want the edit %s", head.ParentConfig, u.CheckpointID)
		}
	})
	t.Run("a copy is run from directly", func(t *testing.T) {
		g, th, beforeB := setup(t)
		c, err := g.UpdateState(ctx(), beforeB.Config, nil, engine.AsCopy)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Invoke(ctx(), nil, &engine.RunOptions{ThreadID: th, CheckpointID: c.CheckpointID}); err != nil {
			t.Fatal(err)
		}
		want := []string{"loop3", "fork2", "loop2", "loop1", "loop0", "input-1"}
		if got := shape(g, th); !reflect.DeepEqual(got, want) {
			t.Fatalf("history %v, want %v (one fork: the copy)", got, want)
		}
	})
	t.Run("a Command without Resume forks with its update", func(t *testing.T) {
		g, th, beforeB := setup(t)
		out, err := g.Invoke(ctx(), engine.Command{Update: engine.Update{"log": "cmd"}}, &engine.RunOptions{ThreadID: th, CheckpointID: beforeB.Config.CheckpointID})
		if err != nil || !reflect.DeepEqual(out.Log, []string{"in", "a", "cmd", "b"}) {
			t.Fatalf("run = %v, %v", out.Log, err)
		}
		want := []string{"loop3", "fork2", "loop2", "loop1", "loop0", "input-1"}
		if got := shape(g, th); !reflect.DeepEqual(got, want) {
			t.Fatalf("history %v, want %v", got, want)
		}
		fork := stateHistory(t, g, th)[1]
		if !reflect.DeepEqual(fork.Values["log"], []string{"in", "a", "cmd"}) || fork.ParentConfig.CheckpointID != beforeB.Config.CheckpointID {
			t.Fatalf("fork %+v: want the Command's update in it, child of the checkpoint travelled to", fork)
		}
	})
}
