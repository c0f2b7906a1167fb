package runs_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/runs"
)

// streamingGraph's node streams "a", "b", "c" as one reply, waiting on
// gate before each piece after the first (and, when streamed is set,
// sending on it once that piece is out), and returns the reply.
func streamingGraph(t *testing.T, gate, streamed chan struct{}, saver checkpoints.Saver) engine.Compiled {
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
			if i > 0 && streamed != nil {
				streamed <- struct{}{}
			}
		}
		reply := models.AI("abc")
		reply.ID = "reply-1"
		return engine.Update{"messages": reply}, nil
	})
	g.AddEdge(engine.Start, "agent")
	if saver == nil {
		saver = checkpoints.NewMemory()
	}
	c, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// midListSaver lets one piece of a reply stream while a catch-up lists
// the thread's checkpoints, once armed: the moment between a
// subscriber's registration and the end of its catch-up.
type midListSaver struct {
	checkpoints.Saver
	armed          atomic.Bool
	gate, streamed chan struct{}
}

func (s *midListSaver) List(ctx context.Context, q checkpoints.ListQuery, opts checkpoints.ListOptions) ([]*checkpoints.Tuple, error) {
	if s.armed.CompareAndSwap(true, false) {
		s.gate <- struct{}{}
		<-s.streamed
	}
	return s.Saver.List(ctx, q, opts)
}

// shownText is what a page shows of reply-1 from a catch-up and then
// live events up to the run's end: a catch-up chunk's text replaces the
// text, a live one is appended.
func shownText(t *testing.T, catchup []runs.Event, sub *runs.Subscription) string {
	t.Helper()
	text := ""
	for _, ev := range catchup {
		if ev.Kind == runs.KindMessageChunk {
			if !ev.Catchup {
				t.Fatalf("a chunk in the catch-up is not marked catchup: %+v", ev)
			}
			text = ev.Text
		}
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				t.Fatal("subscription closed before the run finished")
			}
			switch ev.Kind {
			case runs.KindMessageChunk:
				if ev.Catchup || ev.Seq != 0 || ev.Message != "reply-1" || ev.Node != "agent" {
					t.Fatalf("live chunk %+v; want one of reply-1 from agent, no seq", ev)
				}
				text += ev.Text
			case runs.KindRunFinished:
				return text
			}
		case <-timeout:
			t.Fatal("no run_finished")
		}
	}
}

// A model's chunks reach subscribers live as message_chunk events with
// the reply's id, take no seq (a cursor is unaffected) and stay out of
// the hub's log; a catch-up while the reply streams carries its whole
// text so far, and none once the step is saved. A piece streamed while a
// subscriber's catch-up is read is in the catch-up's text or live, not
// both: the catch-up and the live chunks together are the reply, once.
func TestMessageChunksStreamLiveAndCatchUp(t *testing.T) {
	t.Parallel()
	gate, streamed := make(chan struct{}), make(chan struct{})
	saver := &midListSaver{Saver: checkpoints.NewMemory(), gate: gate, streamed: streamed}
	m := manager(t, map[string]engine.Compiled{"chat": streamingGraph(t, gate, streamed, saver)})
	ctx := context.Background()
	if _, err := m.Start(ctx, "chat", "t1", map[string]any{"messages": "hi"}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	// "b" streams while the catch-up lists the checkpoints.
	saver.armed.Store(true)
	catchup, sub, err := m.Subscribe(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if saver.armed.Load() {
		t.Fatal("the catch-up listed no checkpoints")
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
	go func() {
		gate <- struct{}{} // "c"
		<-streamed
	}()
	if got := shownText(t, catchup, sub); got != "abc" {
		t.Fatalf("the catch-up and the live chunks show %q; want abc", got)
	}
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

// SubscribeFrom's catch-up (a page's cursor) and its live chunks
// together are the reply, once.
func TestMessageChunksResumeFromCursor(t *testing.T) {
	t.Parallel()
	gate, streamed := make(chan struct{}), make(chan struct{})
	m := manager(t, map[string]engine.Compiled{"chat": streamingGraph(t, gate, streamed, nil)})
	ctx := context.Background()
	if _, err := m.Start(ctx, "chat", "t1", map[string]any{"messages": "hi"}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	gate <- struct{}{} // "b"
	<-streamed
	_, cursor, err := m.History(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	catchup, sub, err := m.SubscribeFrom(ctx, "t1", cursor)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	go func() {
		gate <- struct{}{} // "c"
		<-streamed
	}()
	if got := shownText(t, catchup, sub); got != "abc" {
		t.Fatalf("the catch-up and the live chunks show %q; want abc", got)
	}
}
