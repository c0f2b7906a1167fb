package engine_test

import (
	"context"
	"fmt"

	"github.com/superstep-dev/superstep/engine"
)

// A chat-like state: messages has an append reducer, so every node adds to
// the list; turns is a plain key, so each write replaces it.
type chatState struct {
	Messages []string `json:"messages" reduce:"append"`
	Turns    int      `json:"turns"`
}

// A StateGraph with a reducer: two nodes run in parallel after START and
// both append in the same superstep. Their writes are folded in the
// barrier's order (nodes by name), not in the order they finished, so the
// result is the same on every run.
func ExampleStateGraph_reducer() {
	g := engine.NewStateGraph[chatState]()
	g.AddNode("greeter", func(_ context.Context, s chatState) (engine.Output, error) {
		return engine.Update{"messages": "hello", "turns": s.Turns + 1}, nil
	})
	g.AddNode("assistant", func(context.Context, chatState) (engine.Output, error) {
		return engine.Update{"messages": []string{"how can I help?"}}, nil
	})
	g.AddNode("closer", func(_ context.Context, s chatState) (engine.Output, error) {
		return engine.Update{"messages": fmt.Sprintf("bye after %d messages", len(s.Messages))}, nil
	})
	g.AddEdge(engine.Start, "greeter").AddEdge(engine.Start, "assistant")
	g.AddJoin([]string{"greeter", "assistant"}, "closer")
	g.AddEdge("closer", engine.End)
	graph, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := graph.Invoke(context.Background(), engine.Update{"messages": []string{"hi"}}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range out.Messages {
		fmt.Println(m)
	}
	fmt.Println("turns:", out.Turns)
	// Output:
	// hi
	// how can I help?
	// hello
	// bye after 3 messages
	// turns: 1
}
