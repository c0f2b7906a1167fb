package engine_test

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

func historyWithNext(t *testing.T, g *engine.Graph[logState], thread string, next string) *engine.StateSnapshot {
	t.Helper()
	hist, err := g.GetStateHistory(context.Background(), checkpoints.Config{ThreadID: thread}, engine.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hist {
		if reflect.DeepEqual(h.Next, []string{next}) {
			return h
		}
	}
	t.Fatalf("no checkpoint with next [%s]", next)
	return nil
}

func abGraph(t *testing.T) (*engine.Graph[logState], *atomic.Int32) {
	var bCalls atomic.Int32
	g := engine.NewStateGraph[logState]()
	g.AddNode("node_a", logNode("a"))
	g.AddNode("node_b", func(context.Context, logState) (engine.Output, error) {
		bCalls.Add(1)
		return engine.Update{"log": "b"}, nil
	})
	g.AddEdge(engine.Start, "node_a").AddEdge("node_a", "node_b")
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	return cg, &bCalls
}

// Reference §11 case 28: a fork via UpdateState re-runs with the modified
// state, and two forks of one checkpoint are independent.
func TestForkRerunsWithModifiedState(t *testing.T) {
	t.Parallel()
	g, bCalls := abGraph(t)
	ctx := context.Background()
	if _, err := g.Invoke(ctx, engine.Update{"log": []string{}}, &engine.RunOptions{ThreadID: "1"}); err != nil {
		t.Fatal(err)
	}
	beforeB := historyWithNext(t, g, "1", "node_b")
	for _, x := range []string{"x", "y"} {
		fork, err := g.UpdateState(ctx, beforeB.Config, engine.Update{"log": x}, "")
		if err != nil {
			t.Fatal(err)
		}
		st, err := g.GetState(ctx, fork)
		if err != nil || st.Metadata.Source != checkpoints.SourceUpdate || st.ParentConfig == nil || st.ParentConfig.CheckpointID != beforeB.Config.CheckpointID {
			t.Fatalf("fork %s: %+v %v", x, st, err)
		}
		if !reflect.DeepEqual(st.Next, []string{"node_b"}) {
			t.Fatalf("fork %s: next %v (the plain edge out of node_a fires again)", x, st.Next)
		}
		out, err := g.Invoke(ctx, nil, &engine.RunOptions{ThreadID: "1", CheckpointID: fork.CheckpointID})
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
func TestForkDoesNotApplyPendingWrites(t *testing.T) {
	t.Parallel()
	g := engine.NewStateGraph[addState]()
	g.AddNode("node_a", func(context.Context, addState) (engine.Output, error) { return engine.Update{"value": 10}, nil })
	g.AddNode("node_b", func(context.Context, addState) (engine.Output, error) { return engine.Update{"value": 100}, nil })
	g.AddEdge(engine.Start, "node_a").AddEdge("node_a", "node_b")
	cg, _ := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	ctx := context.Background()
	if out, err := cg.Invoke(ctx, engine.Update{"value": 1}, &engine.RunOptions{ThreadID: "1"}); err != nil || out.Value != 111 {
		t.Fatal(out, err)
	}
	hist, _ := cg.GetStateHistory(ctx, checkpoints.Config{ThreadID: "1"}, engine.HistoryOptions{})
	var beforeA *engine.StateSnapshot
	for _, h := range hist {
		if reflect.DeepEqual(h.Next, []string{"node_a"}) {
			beforeA = h
		}
	}
	fork, err := cg.UpdateState(ctx, beforeA.Config, engine.Update{"value": 20}, "node_a")
	if err != nil {
		t.Fatal(err)
	}
	out, err := cg.Invoke(ctx, nil, &engine.RunOptions{ThreadID: "1", CheckpointID: fork.CheckpointID})
	if err != nil || out.Value != 121 {
		t.Fatalf("got %+v %v, want 121", out, err)
	}
}

// Reference §11 case 30: __copy__ forks as a sibling (source fork); a plain
// update has source update.
func TestCopyForkIsASibling(t *testing.T) {
	t.Parallel()
	g, _ := abGraph(t)
	ctx := context.Background()
	if _, err := g.Invoke(ctx, engine.Update{"log": []string{}}, &engine.RunOptions{ThreadID: "1"}); err != nil {
		t.Fatal(err)
	}
	beforeB := historyWithNext(t, g, "1", "node_b")
	cp, err := g.UpdateState(ctx, beforeB.Config, nil, engine.AsCopy)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := g.GetState(ctx, cp)
	if st.Metadata.Source != checkpoints.SourceFork || !reflect.DeepEqual(st.ParentConfig, beforeB.ParentConfig) ||
		!reflect.DeepEqual(st.Values, beforeB.Values) || !reflect.DeepEqual(st.Next, []string{"node_b"}) {
		t.Fatalf("copy = %+v (parent %+v), want a sibling of %+v", st, st.ParentConfig, beforeB.Config)
	}
}

type routeState struct {
	V string `json:"v"`
}

// Reference §11 case 32: a node that routes only with Command.Goto loses its
// route under a plain update, keeps it under a Command update.
func TestUpdateStateRoutesThroughWriters(t *testing.T) {
	t.Parallel()
	g := engine.NewStateGraph[routeState]()
	g.AddNode("a", func(context.Context, routeState) (engine.Output, error) {
		return engine.Command{Update: engine.Update{"v": "a"}, Goto: []any{"b"}}, nil
	}, engine.Destinations("b"))
	g.AddNode("b", func(context.Context, routeState) (engine.Output, error) { return engine.Update{"v": "b"}, nil })
	g.AddEdge(engine.Start, "a")
	cg, _ := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory(), InterruptBefore: []string{"b"}})
	ctx := context.Background()
	_, err := cg.Invoke(ctx, engine.Update{"v": ""}, &engine.RunOptions{ThreadID: "1"})
	if !errors.Is(err, engine.ErrInterrupted) {
		t.Fatal(err)
	}
	head, _ := cg.GetState(ctx, checkpoints.Config{ThreadID: "1"})
	up, err := cg.UpdateState(ctx, head.Config, engine.Update{"v": "edited"}, "")
	if err != nil {
		t.Fatal(err)
	}
	st, _ := cg.GetState(ctx, up)
	if len(st.Next) != 0 || st.Metadata.Source != checkpoints.SourceUpdate || st.Metadata.Step != head.Metadata.Step+1 {
		t.Fatalf("plain update: next %v, md %+v", st.Next, st.Metadata)
	}
	up, err = cg.UpdateState(ctx, head.Config, engine.Command{Update: engine.Update{"v": "edited"}, Goto: []any{"b"}}, "a")
	if err != nil {
		t.Fatal(err)
	}
	st, _ = cg.GetState(ctx, up)
	if !reflect.DeepEqual(st.Next, []string{"b"}) || st.Values["v"] != "edited" {
		t.Fatalf("command update: %+v", st)
	}
}

func TestUpdateStateErrors(t *testing.T) {
	t.Parallel()
	g := engine.NewStateGraph[pairState]()
	g.AddNode("x", func(context.Context, pairState) (engine.Output, error) { return engine.Update{"a": "x"}, nil })
	g.AddNode("y", func(context.Context, pairState) (engine.Output, error) { return engine.Update{"b": "y"}, nil })
	g.AddEdge(engine.Start, "x").AddEdge(engine.Start, "y")
	cg, _ := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	ctx := context.Background()
	if _, err := cg.Invoke(ctx, engine.Update{"a": ""}, &engine.RunOptions{ThreadID: "1"}); err != nil {
		t.Fatal(err)
	}
	cfg := checkpoints.Config{ThreadID: "1"}
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
		_, err := cg.UpdateState(ctx, cfg, tc.values, tc.asNode)
		if !errors.Is(err, engine.ErrInvalidUpdate) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("UpdateState(%v, %q) = %v, want an error containing %q", tc.values, tc.asNode, err, tc.want)
		}
	}
	hist, _ := cg.GetStateHistory(ctx, cfg, engine.HistoryOptions{MetadataOnly: true})
	if len(hist) != 3 {
		t.Fatalf("failed updates wrote checkpoints: history has %d, want 3", len(hist))
	}
}

// Reference §11 case 33: bulk updates reproduce a run's history.
func TestBulkUpdateReproducesHistory(t *testing.T) {
	t.Parallel()
	g, _ := abGraph(t)
	ctx := context.Background()
	if _, err := g.Invoke(ctx, engine.Update{"log": []string{"in"}}, &engine.RunOptions{ThreadID: "real"}); err != nil {
		t.Fatal(err)
	}
	_, err := g.BulkUpdateState(ctx, checkpoints.Config{ThreadID: "copy"}, [][]engine.StateUpdate{
		{{Values: engine.Update{"log": []string{"in"}}, AsNode: engine.AsInput}},
		{{Values: engine.Update{"log": []string{"in"}}, AsNode: engine.Start}},
		{{Values: engine.Update{"log": "a"}, AsNode: "node_a"}},
		{{Values: engine.Update{"log": "b"}, AsNode: "node_b"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	shape := func(thread string) (out []any) {
		hist, err := g.GetStateHistory(ctx, checkpoints.Config{ThreadID: thread}, engine.HistoryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hist {
			out = append(out, h.Values["log"], h.Next, h.Metadata.Step)
		}
		return out
	}
	if real, cp := shape("real"), shape("copy"); !reflect.DeepEqual(real, cp) {
		t.Fatalf("bulk history differs:\nreal %v\ncopy %v", real, cp)
	}
}
