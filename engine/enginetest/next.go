package enginetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

func init() {
	registerDurabilities("x saved checkpoints name the tasks planned from them", savedNextIsPlanned)
}

// savedNextIsPlanned: every checkpoint a run saves carries the names of
// the tasks planned from it (checkpoints.Checkpoint.Next) exactly as the
// CheckpointSaved event told a live listener, so a page reloaded later
// shows what the live one did: through Sends (a node named once per
// Send), a breakpoint, an interrupt and its answer, a failed node, a
// state edit, and the run's end (nothing next, an empty list). Under
// exit durability only the last checkpoint is saved, and it is checked.
func savedNextIsPlanned(t *testing.T, saver checkpoints.Saver, d engine.Durability) {
	fail := true
	g := engine.NewStateGraph[logState]()
	g.AddNode("plan", logNode("plan"))
	g.AddNode("work", func(_ context.Context, s logState) (engine.Output, error) {
		return engine.Update{"log": "work"}, nil
	})
	g.AddNode("ask", func(ctx context.Context, _ logState) (engine.Output, error) {
		ans, err := engine.Interrupt(ctx, "go on?")
		if err != nil {
			return nil, err
		}
		return engine.Update{"log": "asked:" + ans.(string)}, nil
	})
	g.AddNode("flaky", func(context.Context, logState) (engine.Output, error) {
		if fail {
			return nil, errors.New("flaky failed")
		}
		return engine.Update{"log": "flaky"}, nil
	})
	g.AddEdge(engine.Start, "plan")
	g.AddConditionalEdges("plan", func(context.Context, logState) (engine.Route, error) {
		return engine.SendTo(engine.Send{Node: "work", Arg: logState{}}, engine.Send{Node: "work", Arg: logState{}}), nil
	}, nil)
	g.AddEdge("work", "ask").AddEdge("ask", "flaky").AddEdge("flaky", engine.End)
	cg := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver, InterruptBefore: []string{"ask"}})
	th := thread(t, "next")
	told := map[string][]string{} // checkpoint id → the event's Next
	var last string
	listen := func(e engine.Event) {
		if ev, ok := e.(engine.CheckpointSaved); ok && ev.Config.Namespace == "" {
			told[ev.Config.CheckpointID], last = ev.Next, ev.Config.CheckpointID
		}
	}
	opts := &engine.RunOptions{ThreadID: th, Durability: d, Listener: listen}
	check := func(stage string) {
		t.Helper()
		if d == engine.DurabilityExit {
			// Only the checkpoint a run stops at is saved.
			tu := latest(t, saver, th)
			if tu.Config.CheckpointID != last {
				t.Fatalf("%s: latest checkpoint %s, the last event's %s", stage, tu.Config.CheckpointID, last)
			}
			same(t, stage+", the last checkpoint", tu.Checkpoint.Next, told[last])
			return
		}
		stored := map[string][]string{}
		for _, tu := range history(t, saver, th) {
			stored[tu.Config.CheckpointID] = tu.Checkpoint.Next
			want, ok := told[tu.Config.CheckpointID]
			if !ok {
				continue // a state edit's: checked where it is made
			}
			same(t, stage+", checkpoint "+tu.Config.CheckpointID, tu.Checkpoint.Next, want)
		}
		// Planning again from each checkpoint, as a full history does,
		// finds the same tasks.
		snaps, err := cg.GetStateHistory(ctx(), checkpoints.Config{ThreadID: th}, engine.HistoryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range snaps {
			if next := stored[s.Config.CheckpointID]; !slices.Equal(s.Next, next) {
				t.Errorf("%s: the history plans %v from %s, its checkpoint names %v", stage, s.Next, s.Config.CheckpointID, next)
			}
		}
		// A metadata-only history gives the saved names.
		heads, err := cg.GetStateHistory(ctx(), checkpoints.Config{ThreadID: th}, engine.HistoryOptions{MetadataOnly: true})
		if err != nil || len(heads) != len(snaps) {
			t.Fatalf("metadata-only history: %d snapshots, %v; want %d", len(heads), err, len(snaps))
		}
		for i, s := range heads {
			if !slices.Equal(s.Next, snaps[i].Next) {
				t.Errorf("%s: the metadata-only history names %v next from %s, the full one %v", stage, s.Next, s.Config.CheckpointID, snaps[i].Next)
			}
		}
	}
	_, err := cg.Invoke(ctx(), engine.Update{"log": "in"}, opts)
	if in := interrupted(t, err); !slices.Equal(in.Before, []string{"ask"}) {
		t.Fatalf("first run stopped before %v, want [ask]", in.Before)
	}
	if d != engine.DurabilityExit {
		// The step of the two Sends: "work" is named once per Send.
		var sends int
		for _, next := range told {
			if slices.Equal(next, []string{"work", "work"}) {
				sends++
			}
		}
		if sends != 1 {
			t.Fatalf("events %v: want one checkpoint planning work twice", told)
		}
	}
	check("at the breakpoint")
	_, err = cg.Invoke(ctx(), nil, opts) // ask interrupts
	if in := interrupted(t, err); len(in.Interrupts) != 1 {
		t.Fatalf("second run: %+v, want ask's interrupt", in)
	}
	check("at the interrupt")
	if _, err := cg.Invoke(ctx(), engine.Command{Resume: "yes"}, opts); err == nil || interruptedErr(err) {
		t.Fatalf("the resumed run: %v, want flaky's failure", err)
	}
	check("after flaky failed")
	// A state edit as plan: its checkpoint names what would run next.
	edit, err := cg.UpdateState(ctx(), checkpoints.Config{ThreadID: th}, engine.Update{"log": "edited"}, "ask")
	if err != nil {
		t.Fatal(err)
	}
	if d != engine.DurabilityExit {
		tu, err := saver.Get(ctx(), edit)
		if err != nil || tu == nil {
			t.Fatalf("get the edit: %v, %v", tu, err)
		}
		same(t, "the state edit", tu.Checkpoint.Next, []string{"flaky"})
	}
	fail = false
	if _, err := cg.Invoke(ctx(), nil, opts); err != nil {
		t.Fatal(err)
	}
	check("at the end")
	if next := told[last]; next == nil || len(next) != 0 {
		t.Fatalf("the last checkpoint's event names %#v, want nothing next (an empty list)", next)
	}
}

// interruptedErr says whether err is an interrupt.
func interruptedErr(err error) bool {
	var in *engine.Interrupted
	return errors.As(err, &in)
}

// same fails the test unless got and want name the same tasks, telling
// nil (unknown) from empty (nothing next).
func same(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) || (got == nil) != (want == nil) {
		t.Errorf("%s: next = %#v, want %#v", what, got, want)
	}
}

func init() {
	registerDurabilities("x an interrupt beside a finished task keeps the step's checkpoint", interruptBesideFinishedTask)
}

// interruptBesideFinishedTask: a asks a question while b, in the same
// step, finishes. The checkpoint the run stops at is the step's, as it
// was before the step (b's writes are its pending writes, not part of
// its values; a and b are its next tasks), under every durability: under
// exit durability it is saved only when the run stops, after the
// returned values applied b's writes in memory. Answering runs a (not b
// again) and goes on to c.
func interruptBesideFinishedTask(t *testing.T, saver checkpoints.Saver, d engine.Durability) {
	var bCalls atomic.Int32
	g := engine.NewStateGraph[logState]()
	g.AddNode("a", func(ctx context.Context, _ logState) (engine.Output, error) {
		ans, err := engine.Interrupt(ctx, "ok?")
		if err != nil {
			return nil, err
		}
		return engine.Update{"log": "a:" + ans.(string)}, nil
	})
	g.AddNode("b", func(context.Context, logState) (engine.Output, error) {
		bCalls.Add(1)
		return engine.Update{"log": "b"}, nil
	})
	g.AddNode("c", logNode("c"))
	g.AddEdge(engine.Start, "a").AddEdge(engine.Start, "b").AddEdge("b", "c")
	cg := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver})
	th := thread(t, "beside")
	var told []string
	opts := &engine.RunOptions{ThreadID: th, Durability: d, Listener: func(e engine.Event) {
		if ev, ok := e.(engine.CheckpointSaved); ok && ev.Config.Namespace == "" {
			told = ev.Next
		}
	}}
	_, err := cg.Invoke(ctx(), engine.Update{"log": "in"}, opts)
	interrupted(t, err)
	head := latest(t, saver, th)
	same(t, "the stopped step's checkpoint", head.Checkpoint.Next, told)
	same(t, "the stopped step's checkpoint", head.Checkpoint.Next, []string{"a", "b"})
	state, err := cg.GetState(ctx(), checkpoints.Config{ThreadID: th, CheckpointID: head.Config.CheckpointID})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(state.Values["log"]); got != "[in]" {
		t.Fatalf("the stopped step's checkpoint holds log %v, want [in] (b's write pending)", got)
	}
	out, err := cg.Invoke(ctx(), engine.Command{Resume: "yes"}, &engine.RunOptions{ThreadID: th, Durability: d})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"in", "a:yes", "b", "c"}; !slices.Equal(out.Log, want) {
		t.Fatalf("after the answer: log %v, want %v", out.Log, want)
	}
	if n := bCalls.Load(); n != 1 {
		t.Fatalf("b ran %d times, want once", n)
	}
}
