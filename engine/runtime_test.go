package engine_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/store"
)

type factState struct {
	Fact   string `json:"fact"`
	Answer string `json:"answer"`
}

// TestNodesReachTheStore: one node writes a fact to the store, the next
// reads it back: the store is shared by the run's nodes.
func TestNodesReachTheStore(t *testing.T) {
	t.Parallel()
	st, err := store.NewMemory(store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ns := []string{"users", "ada"}
	g := engine.NewStateGraph[factState]()
	g.AddNode("remember", func(ctx context.Context, s factState) (engine.Output, error) {
		s2 := engine.StoreFrom(ctx)
		if s2 == nil {
			return nil, errors.New("no store")
		}
		return nil, store.Put(ctx, s2, ns, "fact", map[string]any{"text": s.Fact})
	})
	g.AddNode("recall", func(ctx context.Context, s factState) (engine.Output, error) {
		it, err := store.Get(ctx, engine.StoreFrom(ctx), ns, "fact")
		if err != nil || it == nil {
			return nil, errors.Join(errors.New("fact not found"), err)
		}
		return engine.Update{"answer": it.Value["text"]}, nil
	})
	g.AddEdge(engine.Start, "remember").AddEdge("remember", "recall")
	cg, err := g.Compile(engine.CompileOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cg.Invoke(context.Background(), engine.Update{"fact": "likes tea"}, nil)
	if err != nil || out.Answer != "likes tea" {
		t.Fatalf("got %+v, %v", out, err)
	}
	if engine.StoreFrom(context.Background()) != nil {
		t.Fatal("StoreFrom outside a node must be nil")
	}
}

// RemainingSteps and IsLastStep follow upstream's managed values
// (stop - step, and step == stop - 1), on the recursion limit's
// arithmetic: a chain START→a→b→c with limit 4 just fits.
func TestRemainingStepsAndIsLastStep(t *testing.T) {
	t.Parallel()
	type st struct {
		Log []string `json:"log" reduce:"append"`
	}
	g := engine.NewStateGraph[st]()
	for _, n := range []string{"a", "b", "c"} {
		g.AddNode(n, func(ctx context.Context, _ st) (engine.Output, error) {
			return engine.Update{"log": fmt.Sprintf("%s:%d:%v", n, engine.RemainingSteps(ctx), engine.IsLastStep(ctx))}, nil
		})
	}
	g.AddEdge(engine.Start, "a").AddSequence("a", "b", "c")
	cg, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cg.Invoke(context.Background(), engine.Update{"log": []string{}}, &engine.RunOptions{RecursionLimit: 4})
	if err != nil {
		t.Fatal(err)
	}
	// stop = -1 + 4 + 1 = 4 on a new thread (input at step -1); a runs at
	// step 1 (3 left), b at 2, c at 3 (1 left: the last step allowed).
	if want := []string{"a:3:false", "b:2:false", "c:1:true"}; !reflect.DeepEqual(out.Log, want) {
		t.Fatalf("log %v, want %v", out.Log, want)
	}
	if engine.RemainingSteps(context.Background()) != 0 || engine.IsLastStep(context.Background()) {
		t.Fatal("outside a node: want 0 and false")
	}
}

// CurrentTask tells a node where it runs: thread, run, the checkpoint its
// step runs from (the previous step's, as the history lists it), its
// namespace and path.
func TestCurrentTask(t *testing.T) {
	t.Parallel()
	type st struct {
		Log []string `json:"log" reduce:"append"`
	}
	var got engine.TaskContext
	g := engine.NewStateGraph[st]()
	g.AddNode("a", func(ctx context.Context, _ st) (engine.Output, error) {
		var ok bool
		got, ok = engine.CurrentTask(ctx)
		if !ok {
			return nil, errors.New("no task context in a node")
		}
		return nil, nil
	})
	g.AddEdge(engine.Start, "a")
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cg.Invoke(context.Background(), engine.Update{"log": []string{}}, &engine.RunOptions{ThreadID: "th", RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	hist, err := cg.GetStateHistory(context.Background(), checkpoints.Config{ThreadID: "th"}, engine.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Newest first: the final checkpoint, the one a ran from, the input.
	if got.ThreadID != "th" || got.RunID != "r1" || got.Node != "a" || got.Step != 1 || got.Attempt != 1 ||
		got.CheckpointID != hist[1].Config.CheckpointID || got.CheckpointNS != "a:"+got.TaskID || !reflect.DeepEqual(got.Path, []any{"__pregel_pull", "a"}) {
		t.Fatalf("task context %+v (history %s)", got, hist[1].Config.CheckpointID)
	}
	if _, ok := engine.CurrentTask(context.Background()); ok {
		t.Fatal("a task context outside a node")
	}
}

// heldSaver holds every Put until release is closed.
type heldSaver struct {
	checkpoints.Saver
	release chan struct{}
}

func (s heldSaver) Put(ctx context.Context, cfg checkpoints.Config, cp *checkpoints.Checkpoint, md checkpoints.Metadata, nv map[string]int64) (checkpoints.Config, error) {
	<-s.release
	return s.Saver.Put(ctx, cfg, cp, md, nv)
}

// Under async durability a node may run before the checkpoint its step
// runs from is saved; WaitCheckpoint waits for it. Under exit durability
// it says it cannot.
func TestWaitCheckpoint(t *testing.T) {
	t.Parallel()
	type st struct {
		Log []string `json:"log" reduce:"append"`
	}
	saver := heldSaver{Saver: checkpoints.NewMemory(), release: make(chan struct{})}
	var before, after *checkpoints.Tuple
	var exitErr error
	g := engine.NewStateGraph[st]()
	g.AddNode("a", func(ctx context.Context, _ st) (engine.Output, error) {
		tc, _ := engine.CurrentTask(ctx)
		cfg := checkpoints.Config{ThreadID: tc.ThreadID, CheckpointID: tc.CheckpointID}
		var err error
		if before, err = saver.Get(ctx, cfg); err != nil {
			return nil, err
		}
		close(saver.release)
		if err := engine.WaitCheckpoint(ctx); err != nil {
			return nil, err
		}
		after, err = saver.Get(ctx, cfg)
		return nil, err
	})
	g.AddEdge(engine.Start, "a")
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cg.Invoke(context.Background(), engine.Update{"log": []string{}}, &engine.RunOptions{ThreadID: "w", Durability: engine.DurabilityAsync}); err != nil {
		t.Fatal(err)
	}
	if before != nil || after == nil {
		t.Fatalf("the step's checkpoint before the wait %v (want not saved yet), after %v (want saved)", before != nil, after != nil)
	}

	ex := engine.NewStateGraph[st]()
	ex.AddNode("a", func(ctx context.Context, _ st) (engine.Output, error) {
		exitErr = engine.WaitCheckpoint(ctx)
		return nil, nil
	})
	ex.AddEdge(engine.Start, "a")
	cex, err := ex.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cex.Invoke(context.Background(), engine.Update{"log": []string{}}, &engine.RunOptions{ThreadID: "x", Durability: engine.DurabilityExit}); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(exitErr, engine.ErrCheckpointNotSaved) {
		t.Fatalf("under exit durability WaitCheckpoint = %v", exitErr)
	}
	if err := engine.WaitCheckpoint(context.Background()); err != nil {
		t.Fatalf("outside a node: %v", err)
	}
}
