package handlers_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/internal/e2e"
	"github.com/superstep-dev/superstep/runs"
)

// A person watches a run: the edges that fired light up (the current
// step's differently), the values panel marks the key the step changed;
// after the run a reload keeps the durations in the timeline, and the
// checkpoint tree lists each checkpoint's next tasks.
func TestE2ELiveEdgesValuesAndReload(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := e2e.Browser(t)
	if _, err := f.runs.Start(context.Background(), "flow", "live-edges", map[string]any{"log": []any{"start"}}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	<-f.gate.entered // fetch finished, slow runs
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/live-edges")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the page, live", `body[data-live="1"]`)
	waitFor(t, ctx, "START → fetch fired", `g#e-__start__-fetch.fired`)
	waitFor(t, ctx, "fetch → slow fired in the current step", `g#e-fetch-slow.fired.fired-now`)
	if cls, err := e2e.Class(ctx, "e-__start__-fetch"); err != nil || strings.Contains(cls, "fired-now") {
		t.Fatalf("START → fetch is still marked as the current step: %q, %v", cls, err)
	}
	if cls, err := e2e.Class(ctx, "e-slow-__end__"); err != nil || strings.Contains(cls, "fired") {
		t.Fatalf("slow → END is marked fired before slow ran: %q, %v", cls, err)
	}
	waitFor(t, ctx, "log marked changed by fetch's step", `tr#v-log.changed`)
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("vp-log")))
	if err != nil || !strings.Contains(text, `"fetch"`) || strings.Contains(text, `"slow"`) {
		t.Fatalf("values panel log = %q, %v; want fetch's write and not slow's", text, err)
	}
	screenshot(t, ctx, "live-edges.png")
	close(f.gate.release)
	waitFor(t, ctx, "the run finished", `body[data-status="idle"]`)
	waitFor(t, ctx, "slow's write shown", `tr#v-log.changed`)
	if text, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("vp-log"))); err != nil || !strings.Contains(text, `"slow"`) {
		t.Fatalf("after the run the values panel log = %q, %v", text, err)
	}

	// Reload: the page is rebuilt on the server, with what it saw live.
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the reloaded page, live", `body[data-live="1"]`)
	for _, node := range []string{"fetch", "slow"} {
		ms, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("#timeline tr.task")).filter(r => r.cells[1].textContent === "`+node+`").map(r => r.querySelector("td.ms").textContent).join("|")`))
		if err != nil || ms == "" || strings.Contains(ms, "||") {
			t.Errorf("after reload the timeline shows duration %q for %s (%v)", ms, node, err)
		}
	}
	waitFor(t, ctx, "edges still fired after reload", `g#e-fetch-slow.fired`)
	waitFor(t, ctx, "values panel after reload", `tr#v-log`)

	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/live-edges/checkpoints")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the tree", `#tree tbody tr`)
	next, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("#tree tbody tr td.next")).map(td => td.textContent.trim()).join("|")`))
	if err != nil || next != "__start__|fetch|slow|—" {
		t.Fatalf("tree next column = %q, %v; want __start__, fetch, slow, then nothing", next, err)
	}
	screenshot(t, ctx, "tree-next.png")
}

type hyphenState struct {
	Log []string `json:"log" reduce:"append"`
}

// Node names may hold "-": the edges that fired light up, and only they,
// even where two edges' ids read alike (a → b-c and a-b → c).
func TestE2EFiredEdgesWithHyphenatedNodeNames(t *testing.T) {
	t.Parallel()
	g := engine.NewStateGraph[hyphenState]()
	for _, name := range []string{"a", "b-c", "a-b", "c"} {
		g.AddNode(name, func(context.Context, hyphenState) (engine.Output, error) { return engine.Set("log", name), nil })
	}
	g.AddConditionalEdges(engine.Start, func(context.Context, hyphenState) (engine.Route, error) { return engine.To("a"), nil },
		map[string]string{"a": "a", "a-b": "a-b"})
	g.AddEdge("a", "b-c").AddEdge("b-c", engine.End).AddEdge("a-b", "c").AddEdge("c", engine.End)
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	f := serve(t, map[string]engine.Compiled{"hyphens": cg})
	m, srv := f.runs, f.srv
	if _, err := m.Start(context.Background(), "hyphens", "h", map[string]any{}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Wait(context.Background(), "h"); err != nil {
		t.Fatal(err)
	}
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/threads/h")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the page, live", `body[data-live="1"]`)
	waitFor(t, ctx, "a → b-c fired", `g.gedge.fired`)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("g.gedge")).map(g => g.querySelector("title").textContent + (g.classList.contains("fired") ? " fired" : " not")).sort().join("|")`))
	if err != nil {
		t.Fatal(err)
	}
	want := "__start__->a fired|__start__->a-b not|a->b-c fired|a-b->c not|b-c->__end__ not|c->__end__ not" // edges into END never fire: END is no task
	if got != want {
		t.Fatalf("edges: %s\nwant:  %s", got, want)
	}
}

// A thread page whose socket the server takes and closes at once (the
// thread cannot be read) backs off between reconnects instead of asking
// again every half second.
func TestE2EReconnectsBackOffWhenTheServerClosesTheSocket(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if _, err := f.runs.Start(context.Background(), "flow", "closing", map[string]any{}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	close(f.gate.release)
	f.wait(t, "closing")
	var accepted atomic.Int32
	page := chi.NewRouter()
	handlers.Routes{Runs: f.runs}.Mount(page)
	mux := http.NewServeMux()
	mux.HandleFunc("/threads/closing/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		accepted.Add(1)
		c.Close(websocket.StatusInternalError, "cannot read the thread")
	})
	mux.Handle("/", page)
	srv := httptest.NewServer(handlers.Secure(mux))
	t.Cleanup(srv.Close)
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/threads/closing")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the first socket closed", `body[data-live="0"]`)
	// 4 s of a socket closed at once: 0.5 + 1 + 2 s of back-off allow 4
	// connections; reconnecting every 0.5 s would make 8.
	start := time.Now()
	for time.Since(start) < 4*time.Second {
		if err := chromedp.Do(ctx, chromedp.Sleep(100*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	if n := accepted.Load(); n < 2 || n > 5 {
		t.Fatalf("%d sockets in 4 s; want a few, backing off", n)
	}
}
