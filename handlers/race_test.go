package handlers_test

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// A start and a cancel posted at once for the same new thread: each gets
// an answer that is not a 5xx, and the thread ends up either known with
// its checkpoints, or unknown with none (never an input checkpoint for a
// thread whose page is a 404).
func TestStartRacingCancelNeverFailsTheServer(t *testing.T) {
	t.Parallel()
	saver := checkpoints.NewMemory()
	sg := engine.NewStateGraph[flowState]()
	sg.AddNode("fetch", func(context.Context, flowState) (engine.Output, error) {
		return engine.Update{"log": "fetch"}, nil
	})
	sg.AddEdge(engine.Start, "fetch")
	g, err := sg.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	f := serve(t, map[string]engine.Compiled{"flow": g})
	for i := range 150 {
		id := fmt.Sprintf("race-%d", i)
		var wg sync.WaitGroup
		var start, cancel response
		wg.Add(2)
		go func() {
			defer wg.Done()
			start = f.post(t, "/graphs/flow/runs", url.Values{"thread": {id}, "input": {`{"log": ["in"]}`}})
		}()
		go func() {
			defer wg.Done()
			cancel = f.post(t, "/threads/"+id+"/cancel", url.Values{})
		}()
		wg.Wait()
		if start.code >= 500 || cancel.code >= 500 {
			t.Fatalf("%s: start %d (%.200s), cancel %d (%.200s)", id, start.code, start.body, cancel.code, cancel.body)
		}
		tup, err := saver.Get(context.Background(), checkpoints.Config{ThreadID: id})
		if err != nil {
			t.Fatal(err)
		}
		page := f.get(t, "/threads/"+id)
		if tup != nil && page.code != 200 {
			t.Fatalf("%s: the thread has checkpoints but its page is %d (start %d, cancel %d)", id, page.code, start.code, cancel.code)
		}
		if tup == nil && page.code == 200 && start.code < 400 {
			t.Fatalf("%s: started (%d) but left no checkpoint", id, start.code)
		}
	}
}
