package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

type pathState struct {
	Items []string `json:"items" reduce:"append"`
}

// Issue 13, item 8: snapshots and task events give each task's path as
// upstream does: ["__pregel_pull", node] for a triggered node,
// ["__pregel_push", index] for a Send's task.
func TestTaskPaths(t *testing.T) {
	t.Parallel()
	g := engine.NewStateGraph[pathState]()
	g.AddNode("fan", func(context.Context, pathState) (engine.Output, error) {
		return engine.Update{"items": []string{"f"}}, nil
	})
	g.AddNode("work", func(context.Context, pathState) (engine.Output, error) {
		return engine.Update{"items": []string{"w"}}, nil
	})
	g.AddEdge(engine.Start, "fan")
	g.AddConditionalEdges("fan", func(context.Context, pathState) (engine.Route, error) {
		return engine.SendTo(engine.Send{Node: "work", Arg: pathState{}}, engine.Send{Node: "work", Arg: pathState{}}), nil
	}, nil)
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory(), InterruptBefore: []string{"work"}})
	if err != nil {
		t.Fatal(err)
	}
	var eventPaths []string
	_, err = cg.Invoke(context.Background(), engine.Update{}, &engine.RunOptions{ThreadID: "t", Listener: func(ev engine.Event) {
		if s, ok := ev.(engine.TaskStarted); ok {
			eventPaths = append(eventPaths, fmt.Sprint(s.Task.TaskPath()))
		}
	}})
	if err == nil {
		t.Fatal("want the breakpoint before work")
	}
	if fmt.Sprint(eventPaths) != "[[__pregel_pull __start__] [__pregel_pull fan]]" {
		t.Fatalf("started task paths %v", eventPaths)
	}
	st, err := cg.GetState(context.Background(), checkpoints.Config{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ts := range st.Tasks {
		got = append(got, fmt.Sprint(ts.Path))
	}
	if fmt.Sprint(got) != "[[__pregel_push 0] [__pregel_push 1]]" {
		t.Fatalf("snapshot task paths %v, want the two Sends' push paths", got)
	}
}
