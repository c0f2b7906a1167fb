package engine_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/engine"
)

type lookupState struct {
	Word    string `json:"word"`
	Meaning string `json:"meaning"`
}

// A cached node: its writes are stored by input, so the second run with
// the same input replays them without calling the node (the listener sees
// a TaskFinished with Cached set). Entries live for the policy's TTL.
func ExampleCachePolicy() {
	calls := 0
	g := engine.NewStateGraph[lookupState]()
	g.AddNode("define", func(_ context.Context, s lookupState) (engine.Output, error) {
		calls++ // an expensive call (a model, an API) in real life
		return engine.Update{"meaning": strings.ToUpper(s.Word)}, nil
	}, engine.WithCache(engine.CachePolicy{TTL: time.Hour}))
	g.AddEdge(engine.Start, "define")
	graph, err := g.Compile(engine.CompileOptions{Cache: cache.NewMemory(nil)})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, word := range []string{"pregel", "pregel", "superstep"} {
		cached := false
		opts := &engine.RunOptions{Listener: func(e engine.Event) {
			if f, ok := e.(engine.TaskFinished); ok && f.Task.Name == "define" {
				cached = f.Cached
			}
		}}
		out, err := graph.Invoke(context.Background(), engine.Update{"word": word}, opts)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s → %s (cached: %v)\n", word, out.Meaning, cached)
	}
	fmt.Println("node calls:", calls)
	// Output:
	// pregel → PREGEL (cached: false)
	// pregel → PREGEL (cached: true)
	// superstep → SUPERSTEP (cached: false)
	// node calls: 2
}
