package runs_test

import (
	"context"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/runs"
)

// streamingGraph's node streams "a", "b", "c" as one reply, waiting on
// gate before each piece after the first, and returns the reply.
func streamingGraph(t *testing.T, gate chan struct{}) engine.Compiled {
	t.Helper()
	g := engine.NewStateGraph[models.MessagesState]()
	g.AddNode("agent", func(ctx context.Context, s models.MessagesState) (engine.Output, error) {
		for i, p := range []string{"a", "b", "c"} {
			if i > 0 {
				select {
				case <-gate:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			c := models.AIChunk(p)
			c.ID = "reply-1"
			engine.EmitMessageChunk(ctx, c, nil)
		}
		reply := models.AI("abc")
		reply.ID = "reply-1"
		return engine.Update{"messages": reply}, nil
	})
	g.AddEdge(engine.Start, "agent")
	c, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func nextOf(t *testing.T, sub *runs.Subscription, kind runs.Kind) runs.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				t.Fatalf("subscription closed waiting for %s", kind)
			}
			if ev.Kind == kind {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event", kind)
		}
	}
}

// A model's chunks reach subscribers live as message_chunk events with
// the reply's id, take no seq (a cursor is unaffected) and stay out of
// the hub's log; a catch-up while the reply streams carries its whole text
// so far, and none once the step is saved.
func TestMessageChunksStreamLiveAndCatchUp(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	m := manager(t, map[string]engine.Compiled{"chat": streamingGraph(t, gate)})
	ctx := context.Background()
	if _, err := m.Start(ctx, "chat", "t1", map[string]any{"messages": "hi"}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	_, sub, err := m.Subscribe(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	gate <- struct{}{} // "b"
	ev := nextOf(t, sub, runs.KindMessageChunk)
	if ev.Text == "a" { // subscribed before the first piece
		ev = nextOf(t, sub, runs.KindMessageChunk)
	}
	if ev.Text != "b" || ev.Message != "reply-1" || ev.Node != "agent" || ev.Seq != 0 || ev.Catchup {
		t.Fatalf("live chunk %+v; want text b of reply-1 from agent, no seq", ev)
	}
	evs, _, err := m.History(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	var caught []runs.Event
	for _, e := range evs {
		if e.Kind == runs.KindMessageChunk {
			caught = append(caught, e)
		}
	}
	if len(caught) != 1 || caught[0].Text != "ab" || !caught[0].Catchup || caught[0].Message != "reply-1" {
		t.Fatalf("catch-up chunks %+v; want the text so far, ab", caught)
	}
	gate <- struct{}{} // "c"
	if ev := nextOf(t, sub, runs.KindMessageChunk); ev.Text != "c" {
		t.Fatalf("live chunk %q, want c", ev.Text)
	}
	nextOf(t, sub, runs.KindRunFinished)
	evs, _, err = m.History(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Kind == runs.KindMessageChunk {
			t.Fatalf("a catch-up after the step holds a chunk: %+v", e)
		}
	}
}
