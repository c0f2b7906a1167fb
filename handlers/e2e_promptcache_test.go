package handlers_test

import (
	"context"
	"math"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/internal/e2e"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/anthropic"
	"github.com/superstep-dev/superstep/models/localprovider"
	"github.com/superstep-dev/superstep/models/promptcache"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/store"
)

// longSystem is a system prompt past claude-sonnet-4-5's 1024-token
// minimum (the double counts a token per 4 bytes), so it is cached.
var longSystem = strings.Repeat("You are a careful weather agent; answer briefly and cite the station. ", 80)

// promptCacheGraph loops its agent node three times; each call sends the
// system prompt with a timestamp section, which the third call finds
// changed (the clock moved) after waiting on gate. The model is the
// local double (its cache emulation on) behind the Anthropic adapter,
// with the prompt-cache layer's hooks.
func promptCacheGraph(t *testing.T, pc *promptcache.Cache, gate chan struct{}) engine.Compiled {
	t.Helper()
	_, ts := localprovider.NewTestServer(localprovider.Config{})
	t.Cleanup(ts.Close)
	m, err := anthropic.New(anthropic.Config{APIKey: "sk-test", BaseURL: ts.URL, Model: "claude-sonnet-4-5", Hooks: pc.Hooks()})
	if err != nil {
		t.Fatal(err)
	}
	g := engine.NewStateGraph[models.MessagesState]()
	g.AddNode("agent", func(ctx context.Context, s models.MessagesState) (engine.Output, error) {
		turn := 1
		for _, msg := range s.Messages {
			if msg.Type == models.TypeAI {
				turn++
			}
		}
		stamp := "It is 2026-09-01 12:00 UTC."
		if turn == 3 {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			stamp = "It is 2026-09-01 12:07 UTC."
		}
		sys := models.System(longSystem + stamp)
		reply, err := models.Call(ctx, m, append([]models.Message{sys}, s.Messages...), nil)
		if err != nil {
			return nil, err
		}
		return engine.Update{"messages": []models.Message{reply, models.Human("And in city " + strconv.Itoa(turn) + "?")}}, nil
	})
	g.AddEdge(engine.Start, "agent")
	g.AddConditionalEdges("agent", func(_ context.Context, s models.MessagesState) (engine.Route, error) {
		n := 0
		for _, msg := range s.Messages {
			if msg.Type == models.TypeAI {
				n++
			}
		}
		if n < 3 {
			return engine.To("again"), nil
		}
		return engine.To("done"), nil
	}, map[string]string{"again": "agent", "done": engine.End})
	c, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A run whose third model call breaks the cache (the system prompt's
// timestamp changed) shows the break with the dimension that changed in
// the prompt-cache panel, live and after a reload (the same text), with
// thread totals that add up the calls.
func TestE2EPromptCachePanelShowsABreakLiveAndOnReload(t *testing.T) {
	t.Parallel()
	st, err := store.NewMemory(store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := promptcache.New(promptcache.Config{Store: st, Prices: map[string]promptcache.Price{"claude-sonnet-4": promptcache.AnthropicPrice(3, 15)},
		OnError: func(err error) { t.Errorf("promptcache: %v", err) }})
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	m, err := runs.NewManager(map[string]engine.Compiled{"pc": promptCacheGraph(t, pc, gate)})
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	handlers.Routes{Runs: m, PromptCache: pc}.Mount(r)
	srv := httptest.NewServer(handlers.Secure(r))
	t.Cleanup(func() {
		srv.Close()
		m.Close()
	})
	if _, err := m.Start(context.Background(), "pc", "e2e-pc", map[string]any{"messages": "Weather in city 0?"}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/threads/e2e-pc")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the page, live", `body[data-live="1"]`)
	// The first two calls: a write, then a read of the system prompt.
	pollFor(t, ctx, "two calls", `document.querySelectorAll("#prompt-cache:not([hidden]) tr.pc-call").length === 2`)
	if n := evalIn[int](t, ctx, `document.querySelectorAll("#pc-calls .pc-break").length`); n != 0 {
		t.Fatalf("%d breaks before the timestamp changed", n)
	}
	close(gate)
	pollFor(t, ctx, "the third call, live", `document.querySelectorAll("#pc-calls tr.pc-call").length === 3`)
	waitFor(t, ctx, "the run finished", `body[data-status="idle"]`)
	const brk = `(document.querySelector("#pc-calls .pc-break") || {}).textContent || ""`
	live := evalIn[string](t, ctx, brk)
	if !strings.Contains(live, "changed: system") || !strings.HasPrefix(live, "cache break: reads dropped 100.0%") {
		t.Fatalf("live, the break reads %q; want the system prompt named as the change", live)
	}
	const panel = `document.getElementById("prompt-cache").innerText`
	livePanel := evalIn[string](t, ctx, panel)
	checkTotals(t, ctx)
	t.Logf("the panel:\n%s", livePanel)
	screenshot(t, ctx, "prompt-cache-panel.png")
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the reloaded page, live", `body[data-live="1"]`)
	if got := evalIn[string](t, ctx, brk); got != live {
		t.Fatalf("after a reload the break reads %q; live it read %q", got, live)
	}
	if got := evalIn[string](t, ctx, panel); got != livePanel {
		t.Fatalf("after a reload the panel reads\n%s\nlive it read\n%s", got, livePanel)
	}
	checkTotals(t, ctx)
	// The break is the third call's, and its row is marked.
	if got := evalIn[string](t, ctx, `Array.from(document.querySelectorAll("#pc-calls tr.pc-call")).map(r => r.classList.contains("pc-broken") ? "B" : "-").join("")`); got != "--B" {
		t.Fatalf("rows marked broken: %q; want the third", got)
	}
	// The markers are drawn on the prefix: the system's and the last
	// message's.
	if n := evalIn[int](t, ctx, `Array.from(document.querySelectorAll("#pc-calls tr.pc-call")).pop().querySelectorAll("svg.pc-bar rect.pc-marker").length`); n < 2 {
		t.Fatalf("%d markers drawn on the last call's prefix; want the system's and the last message's", n)
	}
}

// checkTotals checks the panel's thread totals add up its rows.
func checkTotals(t *testing.T, ctx context.Context) {
	t.Helper()
	type sums struct {
		Input, Read, Write, Output, Prompt int
		Cost, Saving                       float64
	}
	rows := evalIn[[]map[string]string](t, ctx, `Array.from(document.querySelectorAll("#pc-calls tr.pc-call")).map(r => ({
		input: r.querySelector(".pc-input").textContent, read: r.querySelector(".pc-read").textContent,
		write: r.querySelector(".pc-write").textContent, output: r.querySelector(".pc-output").textContent,
		cost: r.querySelector(".pc-cost").textContent, saving: r.querySelector(".pc-saving").textContent}))`)
	var s sums
	num := func(v string) int {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("a row shows %q for a token count", v)
		}
		return n
	}
	money := func(v string) float64 {
		f, err := strconv.ParseFloat(strings.Replace(strings.TrimPrefix(v, "$"), "−$", "-", 1), 64)
		if err != nil {
			t.Fatalf("a row shows %q for an amount", v)
		}
		return f
	}
	for _, r := range rows {
		s.Input += num(r["input"])
		s.Read += num(r["read"])
		s.Write += num(r["write"])
		s.Output += num(r["output"])
		s.Cost += money(r["cost"])
		s.Saving += money(r["saving"])
	}
	s.Prompt = s.Input + s.Read + s.Write
	tot := evalIn[map[string]string](t, ctx, `(() => { const q = (c) => document.querySelector("#pc-totals ." + c).textContent; return {
		calls: q("pc-t-calls"), prompt: q("pc-t-prompt"), input: q("pc-t-input"), read: q("pc-t-read"), write: q("pc-t-write"),
		output: q("pc-t-output"), breaks: q("pc-t-breaks"), cost: q("pc-t-cost"), saving: q("pc-t-saving")}; })()`)
	want := map[string]string{
		"calls": strconv.Itoa(len(rows)) + " calls", "breaks": "1 break", "prompt": strconv.Itoa(s.Prompt) + " prompt tokens", "input": strconv.Itoa(s.Input) + " uncached",
		"read": strconv.Itoa(s.Read) + " read", "write": strconv.Itoa(s.Write) + " written", "output": strconv.Itoa(s.Output) + " output",
	}
	for k, w := range want {
		if tot[k] != w {
			t.Errorf("totals: %s reads %q; the rows add up to %q", k, tot[k], w)
		}
	}
	// Amounts are shown to 4 decimals: the rows' sum may differ from the
	// total by their rounding.
	slack := 0.00005*float64(len(rows)) + 1e-9
	if d := math.Abs(money(tot["cost"]) - s.Cost); d > slack {
		t.Errorf("totals: cost %s; the rows add up to %.4f", tot["cost"], s.Cost)
	}
	if d := math.Abs(money(tot["saving"]) - s.Saving); d > slack {
		t.Errorf("totals: saving %s; the rows add up to %.4f", tot["saving"], s.Saving)
	}
	if s.Read == 0 || s.Write == 0 || money(tot["saving"]) <= 0 {
		t.Errorf("totals %v: the calls should have read and written the cache and saved money", tot)
	}
}
