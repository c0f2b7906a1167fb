package engine_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/superstep-dev/superstep/engine"
)

type essayState struct {
	Topics []string `json:"topics"`
	Jokes  []string `json:"jokes" reduce:"append"`
	Best   string   `json:"best"`
}

// subject is what a Send hands the "joke" node: its whole input, not the
// graph state.
type subject struct {
	Topic string `json:"topic"`
}

// Map-reduce with Send: a router fans out one "joke" task per topic; the
// tasks run in parallel in one superstep, and their appends are applied in
// Send order. A plain edge then reduces the jokes once.
func ExampleSend_mapReduce() {
	g := engine.NewStateGraph[essayState]()
	engine.AddNodeFunc(g, "joke", func(_ context.Context, s subject) (engine.Output, error) {
		return engine.Update{"jokes": "why did the " + s.Topic + " cross the road?"}, nil
	})
	g.AddNode("pick", func(_ context.Context, s essayState) (engine.Output, error) {
		best := ""
		for _, j := range s.Jokes {
			if len(j) > len(best) {
				best = j
			}
		}
		return engine.Update{"best": best}, nil
	})
	g.AddConditionalEdges(engine.Start, func(_ context.Context, s essayState) (engine.Route, error) {
		sends := make([]engine.Send, len(s.Topics))
		for i, t := range s.Topics {
			sends[i] = engine.Send{Node: "joke", Arg: subject{Topic: t}}
		}
		return engine.SendTo(sends...), nil
	}, nil)
	g.AddEdge("joke", "pick")
	g.AddEdge("pick", engine.End)
	graph, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := graph.Invoke(context.Background(), engine.Update{"topics": []string{"chicken", "cat", "elephant"}}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.Join(out.Jokes, "\n"))
	fmt.Println("best:", out.Best)
	// Output:
	// why did the chicken cross the road?
	// why did the cat cross the road?
	// why did the elephant cross the road?
	// best: why did the elephant cross the road?
}
