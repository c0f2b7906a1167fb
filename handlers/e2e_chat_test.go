package handlers_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/e2e"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/runs"
)

// turn is one scripted reply: its text in pieces, its tool calls.
type turn struct {
	pieces  []string
	calls   []models.ToolCall
	usage   *models.UsageMetadata
	offline bool
}

// scriptedChat is a models.ChatModel that replies with its turns in
// order (the last one again when they run out). With gate set, every
// piece after a reply's first waits for a receive on it, so a test sees
// a reply half streamed for as long as it likes; with streamed set too,
// each of those pieces is followed by a send on it once it is out.
type scriptedChat struct {
	gate     chan struct{}
	streamed chan struct{}
	mu       sync.Mutex
	turns    []turn
	n        int
}

func (s *scriptedChat) Info() models.ModelInfo {
	return models.ModelInfo{Provider: "scripted", Model: "chat-1"}
}

func (s *scriptedChat) Generate(ctx context.Context, msgs []models.Message, opts *models.CallOptions) (models.Message, error) {
	return s.Stream(ctx, msgs, opts, func(models.Message) error { return nil })
}

func (s *scriptedChat) Stream(ctx context.Context, _ []models.Message, _ *models.CallOptions, onChunk func(models.Message) error) (models.Message, error) {
	s.mu.Lock()
	tr := s.turns[min(s.n, len(s.turns)-1)]
	s.n++
	s.mu.Unlock()
	for i, p := range tr.pieces {
		if i > 0 && s.gate != nil {
			select {
			case <-s.gate:
			case <-ctx.Done():
				return models.Message{}, ctx.Err()
			}
		}
		if err := onChunk(models.AIChunk(p)); err != nil {
			return models.Message{}, err
		}
		if i > 0 && s.gate != nil && s.streamed != nil {
			s.streamed <- struct{}{}
		}
	}
	reply := models.AIWithToolCalls(strings.Join(tr.pieces, ""), tr.calls...)
	reply.Usage = tr.usage
	if tr.offline {
		reply.ResponseMetadata = map[string]any{"offline": true}
	}
	return reply, nil
}

// chatGraph is an agent loop: agent calls the model; when the reply has
// tool calls, tools answers each with "result of <name>" and the agent
// runs again.
func chatGraph(t testing.TB, model models.ChatModel) engine.Compiled {
	t.Helper()
	g := engine.NewStateGraph[models.MessagesState]()
	g.AddNode("agent", func(ctx context.Context, s models.MessagesState) (engine.Output, error) {
		reply, err := models.Call(ctx, model, s.Messages, nil)
		if err != nil {
			return nil, err
		}
		return engine.Update{"messages": reply}, nil
	})
	g.AddNode("tools", func(ctx context.Context, s models.MessagesState) (engine.Output, error) {
		last := s.Messages[len(s.Messages)-1]
		var out []models.Message
		for _, c := range last.ToolCalls {
			out = append(out, models.ToolResult(c.ID, models.Text("result of "+c.Name)))
		}
		return engine.Update{"messages": out}, nil
	})
	g.AddEdge(engine.Start, "agent")
	g.AddConditionalEdges("agent", func(ctx context.Context, s models.MessagesState) (engine.Route, error) {
		if len(s.Messages[len(s.Messages)-1].ToolCalls) > 0 {
			return engine.To("tools"), nil
		}
		return engine.To(engine.End), nil
	}, map[string]string{"tools": "tools", engine.End: engine.End})
	g.AddEdge("tools", "agent")
	c, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// evalIn runs a JS expression in the page.
func evalIn[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// pollFor waits (in the browser) until the JS expression is true.
func pollFor(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Run(pctx, chromedp.Poll[bool](js)); err != nil {
		html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.ID("chat-area")))
		t.Fatalf("waiting for %s (%s): %v\npage: %.4000s", what, js, err, html)
	}
}

const chatText = `document.getElementById("chat-area").innerText`

// Tokens appear as the model streams them, before the run ends; once the
// step is saved the bubble is the server-rendered message, and a reload
// shows the same conversation as the live tab.
func TestE2EChatStreamsTokensLive(t *testing.T) {
	t.Parallel()
	model := &scriptedChat{gate: make(chan struct{}), turns: []turn{{pieces: []string{"Hello", " there", ", friend"},
		usage: &models.UsageMetadata{InputTokens: 12, OutputTokens: 3, TotalTokens: 15, InputTokenDetails: &models.InputTokenDetails{CacheRead: models.Int(8)}}, offline: true}}}
	f := serve(t, map[string]engine.Compiled{"chat": chatGraph(t, model)})
	if _, err := f.runs.Start(context.Background(), "chat", "e2e-chat-live", map[string]any{"messages": "hi"}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/e2e-chat-live")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the page, live", `body[data-live="1"]`)
	// The first piece: from the page's catch-up or live, whichever came
	// first; the human message is in the chat from the input's step.
	pollFor(t, ctx, "the first piece", `(document.querySelector("#chat-streaming li.streaming pre") || {}).textContent === "Hello"`)
	model.gate <- struct{}{}
	pollFor(t, ctx, "the second piece, live", `(document.querySelector("#chat-streaming li.streaming pre") || {}).textContent === "Hello there"`)
	if st := evalIn[string](t, ctx, `document.body.dataset.status`); st != "running" {
		t.Fatalf("status %q while the reply streams; want running", st)
	}
	if h := evalIn[string](t, ctx, `document.querySelector("#chats li.msg.human pre").textContent`); h != "hi" {
		t.Fatalf("human message %q", h)
	}
	model.gate <- struct{}{}
	waitFor(t, ctx, "the run finished", `body[data-status="idle"]`)
	pollFor(t, ctx, "the saved reply in place of the bubble", `(() => { const m = document.querySelector("#chats li.msg.ai pre.msg-text"); return !!m && m.textContent === "Hello there, friend" && document.querySelectorAll("#chat-streaming li").length === 0; })()`)
	live := evalIn[string](t, ctx, chatText)
	for _, want := range []string{"offline model", "in 12 · out 3 · cache read 8 tokens", "edit", "fork from here"} {
		if !strings.Contains(live, want) {
			t.Errorf("the live chat lacks %q:\n%s", want, live)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the reloaded page, live", `body[data-live="1"]`)
	if again := evalIn[string](t, ctx, chatText); again != live {
		t.Fatalf("a reload shows another conversation:\nlive:\n%s\nreload:\n%s", live, again)
	}
}

// An AI message's tool calls are shown under it, each with its result
// folded under the call, and a reload shows the same.
func TestE2EChatFoldsToolResultsUnderTheirCalls(t *testing.T) {
	t.Parallel()
	model := &scriptedChat{turns: []turn{
		{pieces: []string{"Let me look."}, calls: []models.ToolCall{{ID: "call_1", Name: "fetch_cve", Args: map[string]any{"id": "CVE-2024-1"}}, {ID: "call_2", Name: "cvss", Args: map[string]any{"vector": "AV:N"}}}},
		{pieces: []string{"Severity ", "9.8"}},
	}}
	f := serve(t, map[string]engine.Compiled{"chat": chatGraph(t, model)})
	ctx := e2e.Browser(t)
	if _, err := f.runs.Start(context.Background(), "chat", "e2e-chat-tools", map[string]any{"messages": "assess CVE-2024-1"}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/e2e-chat-tools")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the run finished", `body[data-live="1"][data-status="idle"]`)
	pollFor(t, ctx, "the final reply", `[...document.querySelectorAll("#chats li.msg.ai pre.msg-text")].some((p) => p.textContent === "Severity 9.8")`)
	type call struct{ Name, Args, Result string }
	got := evalIn[[]call](t, ctx, `[...document.querySelectorAll("#chats li.tool-call")].map((c) => ({Name: c.querySelector(".tool-name").textContent, Args: c.querySelector(".args").textContent, Result: (c.querySelector(".tool-result pre") || {}).textContent || ""}))`)
	want := []call{{"fetch_cve", `{"id":"CVE-2024-1"}`, "result of fetch_cve"}, {"cvss", `{"vector":"AV:N"}`, "result of cvss"}}
	if gj, wj := jsonOf(got), jsonOf(want); gj != wj {
		t.Fatalf("tool calls %s, want %s", gj, wj)
	}
	// Folded: no tool message stands on its own.
	if n := evalIn[int](t, ctx, `document.querySelectorAll("#chats li.msg.tool").length`); n != 0 {
		t.Fatalf("%d tool messages shown apart from their calls", n)
	}
	roles := evalIn[[]string](t, ctx, `[...document.querySelectorAll("#chats ol.messages > li")].map((l) => l.className)`)
	if strings.Join(roles, "|") != "msg human|msg ai|msg ai" {
		t.Fatalf("messages %q", roles)
	}
	live := evalIn[string](t, ctx, chatText)
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the reloaded page, live", `body[data-live="1"]`)
	if again := evalIn[string](t, ctx, chatText); again != live {
		t.Fatalf("a reload shows another conversation:\nlive:\n%s\nreload:\n%s", live, again)
	}
}

// "Fork from here" on the first reply leads to the checkpoint where it
// first appeared; re-running from there forks the thread, and the chat
// shows the forked history: the first reply, then the new one, not the
// old second.
func TestE2EChatForkFromAMessage(t *testing.T) {
	t.Parallel()
	model := &scriptedChat{turns: []turn{
		{pieces: []string{"first"}, calls: []models.ToolCall{{ID: "c1", Name: "lookup", Args: map[string]any{}}}},
		{pieces: []string{"old ending"}},
		{pieces: []string{"new ending"}},
	}}
	f := serve(t, map[string]engine.Compiled{"chat": chatGraph(t, model)})
	if _, err := f.runs.Start(context.Background(), "chat", "e2e-chat-fork", map[string]any{"messages": "go"}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "e2e-chat-fork")
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/e2e-chat-fork")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the page, live", `body[data-live="1"]`)
	if txt := evalIn[string](t, ctx, chatText); !strings.Contains(txt, "old ending") {
		t.Fatalf("chat before the fork:\n%s", txt)
	}
	// The first AI message's "fork from here".
	evalIn[bool](t, ctx, `(document.querySelector("#chats li.msg.ai > .msg-head a.msg-fork").click(), true)`)
	waitFor(t, ctx, "the checkpoint page", `#rerun`)
	next, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("next")))
	if err != nil || !strings.Contains(next, "tools") {
		t.Fatalf("next at the reply's first checkpoint = %q, %v; want tools", next, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("rerun"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the thread page, idle", `body[data-thread="e2e-chat-fork"][data-live="1"][data-status="idle"]`)
	pollFor(t, ctx, "the forked history", `document.getElementById("chat-area").innerText.includes("new ending")`)
	txt := evalIn[string](t, ctx, chatText)
	if strings.Contains(txt, "old ending") || !strings.Contains(txt, "first") || !strings.Contains(txt, "result of lookup") {
		t.Fatalf("chat after the fork:\n%s", txt)
	}
	// A branch: the tree has a fork.
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/e2e-chat-fork/checkpoints")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "a branch in the tree", `#tree tr.ckpt.depth-1`)
}

// "Edit" on a message opens the checkpoint's edit form with that message
// alone; changing its text and forking replaces it by id (add_messages),
// keeping the others.
func TestE2EChatEditAMessage(t *testing.T) {
	t.Parallel()
	model := &scriptedChat{turns: []turn{{pieces: []string{"typo reply"}}}}
	f := serve(t, map[string]engine.Compiled{"chat": chatGraph(t, model)})
	if _, err := f.runs.Start(context.Background(), "chat", "e2e-chat-edit", map[string]any{"messages": "hello"}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "e2e-chat-edit")
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/e2e-chat-edit")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the page, live", `body[data-live="1"]`)
	// Clicked through the page's DOM at the moment of clicking: the live
	// page may redraw the list between a node id's lookup and a click on
	// it (a CI flake: "Could not find node with given id").
	waitFor(t, ctx, "the message's Edit link", `#chats li.msg.ai a.msg-edit`)
	if !evalIn[bool](t, ctx, `(() => { const a = document.querySelector("#chats li.msg.ai a.msg-edit"); if (!a) return false; a.click(); return true; })()`) {
		t.Fatal("the message's Edit link went away")
	}
	waitFor(t, ctx, "the edit form, opened on the message", `#editing-message`)
	// messages is the only key: edit-0.
	js := `(() => { const ta = document.getElementById("edit-0"); const v = JSON.parse(ta.value); v[0].content = "fixed reply"; ta.value = JSON.stringify(v); return v.length; })()`
	if n := evalIn[int](t, ctx, js); n != 1 {
		t.Fatalf("the form holds %d messages; want the one", n)
	}
	head := f.history(t, "chat", "e2e-chat-edit")[0].Config.CheckpointID
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("fork"))); err != nil {
		t.Fatal(err)
	}
	// The page the form was on selects the old head already: wait for the
	// new page, whose selected head is the edit.
	waitFor(t, ctx, "the fork, head", `#tree tr.ckpt.head.selected:not([id="ck-`+head+`"])`)
	v := f.values(t, "chat", "e2e-chat-edit")
	msgs, ok := v["messages"].([]models.Message)
	if !ok || len(msgs) != 2 || msgs[0].Text() != "hello" || msgs[1].Text() != "fixed reply" || msgs[1].Type != models.TypeAI {
		t.Fatalf("messages after the edit: %s", jsonOf(v["messages"]))
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
