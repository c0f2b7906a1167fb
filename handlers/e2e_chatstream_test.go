package handlers_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/internal/e2e"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/web"
)

// midListSaver streams one gated piece of the model's reply during each
// of the first pieces List calls (a catch-up reading the thread's
// checkpoints): the moment between a socket's subscription and the end
// of its catch-up.
type midListSaver struct {
	checkpoints.Saver
	pieces atomic.Int32
	model  *scriptedChat
}

func (s *midListSaver) List(ctx context.Context, q checkpoints.ListQuery, opts checkpoints.ListOptions) ([]*checkpoints.Tuple, error) {
	if s.pieces.Add(-1) >= 0 {
		s.model.gate <- struct{}{}
		<-s.model.streamed
	}
	return s.Saver.List(ctx, q, opts)
}

// checkpointsRunner is a Runner without the live log's History and
// SubscribeFrom: its pages render from the checkpoints and its sockets
// get Subscribe's full catch-up, as a tab reconnecting with a cursor no
// longer resumable does.
type checkpointsRunner struct{ handlers.Runner }

// A piece of the reply that streams while the socket's catch-up is read
// shows once: in the catch-up's text or live, not both.
func TestE2EChatCatchUpDoesNotDoubleText(t *testing.T) {
	t.Parallel()
	model := &scriptedChat{gate: make(chan struct{}), streamed: make(chan struct{}), turns: []turn{{pieces: []string{"Hello", " there", ", friend", "!", " Bye."}}}}
	saver := &midListSaver{Saver: checkpoints.NewMemory(), model: model}
	g := engine.NewStateGraph[models.MessagesState]()
	g.AddNode("agent", func(ctx context.Context, s models.MessagesState) (engine.Output, error) {
		reply, err := models.Call(ctx, model, s.Messages, nil)
		if err != nil {
			return nil, err
		}
		return engine.Update{"messages": reply}, nil
	})
	g.AddEdge(engine.Start, "agent")
	compiled, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	m, err := runs.NewManager(map[string]engine.Compiled{"chat": compiled})
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	handlers.Routes{Runs: checkpointsRunner{m}}.Mount(r)
	srv := httptest.NewServer(handlers.Secure(r))
	t.Cleanup(func() {
		srv.Close()
		m.Close()
	})
	if _, err := m.Start(context.Background(), "chat", "e2e-chat-overlap", map[string]any{"messages": "hi"}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	// The page's read streams " there", the socket's ", friend".
	saver.pieces.Store(2)
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/threads/e2e-chat-overlap")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the page, live", `body[data-live="1"]`)
	if n := saver.pieces.Load(); n > 0 {
		t.Fatalf("%d catch-up reads fewer than expected", n)
	}
	model.gate <- struct{}{} // "!"
	<-model.streamed
	const bubble = `((document.querySelector("#chat-streaming li.streaming pre") || {}).textContent || "")`
	pollFor(t, ctx, "the live piece", bubble+`.endsWith("!")`)
	if got := evalIn[string](t, ctx, bubble); got != "Hello there, friend!" {
		t.Fatalf("the streaming reply shows %q; want %q", got, "Hello there, friend!")
	}
	model.gate <- struct{}{} // " Bye."
	<-model.streamed
	waitFor(t, ctx, "the run finished", `body[data-status="idle"]`)
	pollFor(t, ctx, "the saved reply", `(() => { const m = document.querySelector("#chats li.msg.ai pre.msg-text"); return !!m && m.textContent === "Hello there, friend! Bye." && document.querySelectorAll("#chat-streaming li").length === 0; })()`)
}

// A reply longer than runs.StreamTextBytes shows cut at that bound with
// the same mark live as after a reload, which shows what the server
// keeps.
func TestE2EChatStreamingReplyCutLiveAsOnReload(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("A", 40_000)
	accents := strings.Repeat("é", 15_000) // 30,000 bytes: the bound falls inside it
	model := &scriptedChat{gate: make(chan struct{}), streamed: make(chan struct{}), turns: []turn{{pieces: []string{"Start ", long, accents, " end"}}}}
	f := serve(t, map[string]engine.Compiled{"chat": chatGraph(t, model)})
	if _, err := f.runs.Start(context.Background(), "chat", "e2e-chat-cut", map[string]any{"messages": "hi"}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/e2e-chat-cut")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the page, live", `body[data-live="1"]`)
	pollFor(t, ctx, "the first piece", `((document.querySelector("#chat-streaming li.streaming pre") || {}).textContent || "") === "Start "`)
	for range 2 {
		model.gate <- struct{}{}
		<-model.streamed
	}
	// What the server keeps: the bound, on a character.
	kept := "Start " + long
	kept += accents[:(runs.StreamTextBytes-len(kept))/2*2]
	const shown = `(() => { const li = document.querySelector("#chat-streaming li.streaming"); return li ? li.querySelector("pre").textContent + "|" + ((li.querySelector(".stream-cut") || {}).textContent || "") : ""; })()`
	want := kept + "|" + web.StreamCutNote
	pollFor(t, ctx, "the cut reply, live", shown+`.includes("é")`)
	if got := evalIn[string](t, ctx, shown); got != want {
		t.Fatalf("live: the bubble shows %d bytes %q…; want %d bytes and the cut mark %q", len(got), tail(got), len(want), web.StreamCutNote)
	}
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the reloaded page, live", `body[data-live="1"]`)
	if got := evalIn[string](t, ctx, shown); got != want {
		t.Fatalf("reload: the bubble shows %d bytes %q…; want %d bytes and the cut mark", len(got), tail(got), len(want))
	}
	model.gate <- struct{}{} // " end"
	<-model.streamed
	waitFor(t, ctx, "the run finished", `body[data-status="idle"]`)
	pollFor(t, ctx, "the saved reply in place of the bubble", `document.querySelectorAll("#chat-streaming li").length === 0 && !!document.querySelector("#chats li.msg.ai")`)
}

// tail is the end of a long text, for a failure message.
func tail(s string) string {
	if r := []rune(s); len(r) > 80 {
		return "…" + string(r[len(r)-80:])
	}
	return s
}

// A ReAct agent used as a subgraph streams its reply into a bubble named
// for its node in the subgraph, live and after a reload, until the
// thread graph's step saves the reply.
func TestE2EChatStreamsASubgraphsReply(t *testing.T) {
	t.Parallel()
	model := &scriptedChat{gate: make(chan struct{}), streamed: make(chan struct{}), turns: []turn{{pieces: []string{"Sub", "graph", " reply"}}}}
	inner := engine.NewStateGraph[models.MessagesState]()
	inner.AddNode("agent", func(ctx context.Context, s models.MessagesState) (engine.Output, error) {
		reply, err := models.Call(ctx, model, s.Messages, nil)
		if err != nil {
			return nil, err
		}
		return engine.Update{"messages": reply}, nil
	})
	inner.AddEdge(engine.Start, "agent")
	sub, err := inner.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	outer := engine.NewStateGraph[models.MessagesState]()
	outer.AddSubgraph("react", sub)
	outer.AddEdge(engine.Start, "react")
	g, err := outer.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	f := serve(t, map[string]engine.Compiled{"outer": g})
	if _, err := f.runs.Start(context.Background(), "outer", "e2e-chat-subgraph", map[string]any{"messages": "hi"}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/e2e-chat-subgraph")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the page, live", `body[data-live="1"]`)
	const bubble = `((document.querySelector("#chat-streaming li.streaming pre") || {}).textContent || "")`
	pollFor(t, ctx, "the subgraph's first piece", bubble+` === "Sub"`)
	model.gate <- struct{}{}
	<-model.streamed
	pollFor(t, ctx, "the second piece, live", bubble+` === "Subgraph"`)
	const label = `document.querySelector("#chat-streaming li.streaming .msg-head .muted").textContent`
	if got := evalIn[string](t, ctx, label); got != "react:agent · streaming…" {
		t.Fatalf("the bubble is labelled %q; want react:agent", got)
	}
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the reloaded page, live", `body[data-live="1"]`)
	if got, lab := evalIn[string](t, ctx, bubble), evalIn[string](t, ctx, label); got != "Subgraph" || lab != "react:agent · streaming…" {
		t.Fatalf("after a reload the bubble shows %q labelled %q; want Subgraph from react:agent", got, lab)
	}
	model.gate <- struct{}{}
	<-model.streamed
	waitFor(t, ctx, "the run finished", `body[data-status="idle"]`)
	pollFor(t, ctx, "the saved reply in place of the bubble", `(() => { const m = document.querySelector("#chats li.msg.ai pre.msg-text"); return !!m && m.textContent === "Subgraph reply" && document.querySelectorAll("#chat-streaming li").length === 0; })()`)
}
