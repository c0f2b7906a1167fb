package promptcache_test

import (
	"context"
	"sync"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/promptcache"
)

// TestInAGraph: inside a node the thread and lineage come from the task;
// each call's Record is the node's custom event and is kept with the
// thread.
func TestInAGraph(t *testing.T) {
	t.Parallel()
	saver := checkpoints.NewMemory()
	f := setup(t, promptcache.Config{Checkpoints: saver})
	m := f.anthropic(t, "claude-sonnet-4-5")
	type State struct {
		Messages []models.Message `json:"messages" reduce:"add_messages"`
	}
	g := engine.NewStateGraph[State]()
	g.AddNode("agent", func(ctx context.Context, s State) (engine.Output, error) {
		reply, err := models.Call(ctx, m, s.Messages, &models.CallOptions{Tools: tools})
		if err != nil {
			return nil, err
		}
		return engine.Update{"messages": []models.Message{reply}}, nil
	})
	g.AddEdge(engine.Start, "agent")
	graph, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var emitted []promptcache.Record
	listen := func(ev engine.Event) {
		var payload any
		switch c := ev.(type) {
		case engine.Custom:
			payload = c.Payload
		case *engine.Custom:
			payload = c.Payload
		}
		if r, ok := payload.(promptcache.Record); ok {
			mu.Lock()
			emitted = append(emitted, r)
			mu.Unlock()
		}
	}
	opts := &engine.RunOptions{ThreadID: "graph-thread", Listener: listen}
	for _, q := range []string{"Weather in Paris?", "And in Rome?"} {
		if _, err := graph.Invoke(context.Background(), engine.Update{"messages": []models.Message{models.Human(q)}}, opts); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := f.cache.Records(context.Background(), "graph-thread")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || len(emitted) != 2 {
		t.Fatalf("%d records, %d emitted; want 2 and 2", len(recs), len(emitted))
	}
	r := recs[1]
	if r.Node != "agent" || r.LineageKey != "|agent" || r.CheckpointID == "" || r.PrevCallID != recs[0].CallID || r.Lineage != "main" {
		t.Errorf("record %+v", r)
	}
	if emitted[1].CallID != r.CallID {
		t.Errorf("emitted %s, stored %s", emitted[1].CallID, r.CallID)
	}
}
