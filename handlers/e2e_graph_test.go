package handlers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/superstep-dev/superstep/internal/e2e"
	"github.com/superstep-dev/superstep/runs"
)

// A person opens the research assistant's graph, clicks the research
// subgraph node to open it in place, sees its inner nodes under their own
// URL, and closes it again from the subgraph list.
func TestE2EExpandAndCollapseASubgraph(t *testing.T) {
	t.Parallel()
	f := setupGraphs(t)
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/graphs/research"),
		chromedp.WaitReady(chromedp.CSS(`g#n-research.subgraph`)),
	); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitNotPresent(chromedp.CSS(`[id="n-research:plan"]`))); err != nil {
		t.Fatal(err)
	}
	// The closed subgraph node is itself the link that opens it.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`g#n-research a`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the subgraph open, with its inner nodes", `g#n-research.cluster.expanded ~ g[id="n-research:plan"]`)
	for _, id := range []string{"n-research:review", "n-research:summarise", "e-research:plan-research:search"} {
		waitFor(t, ctx, id, `[id="`+id+`"]`)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.HasSuffix(loc, "/graphs/research?expand=research") {
		t.Fatalf("the open view's URL is %q (%v), want its own deep link", loc, err)
	}
	screenshot(t, ctx, "graph-subgraph.png")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("toggle-research"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the subgraph closed again", `g#n-research.subgraph:not(.expanded)`)
	if err := chromedp.Do(ctx, chromedp.WaitNotPresent(chromedp.CSS(`[id="n-research:plan"]`))); err != nil {
		t.Fatal(err)
	}
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || strings.Contains(loc, "expand") {
		t.Fatalf("the closed view's URL is %q (%v)", loc, err)
	}
}

// A graph compiled with breakpoints shows them: a red bar on the nodes and
// fixed, ticked boxes in the start form.
func TestE2ECompiledBreakpointsAreMarked(t *testing.T) {
	t.Parallel()
	f := setupGraphs(t)
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/graphs/breaks"),
		chromedp.WaitReady(chromedp.CSS(`g#n-c.bp-before`)),
		chromedp.WaitReady(chromedp.CSS(`g#n-a.bp-after`)),
	); err != nil {
		t.Fatal(err)
	}
	// The bar is a drop shadow of the node's shape, drawn by the stylesheet.
	for id, dir := range map[string]string{"n-c": "-4px", "n-a": " 4px"} {
		filter, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector("#`+id+` path, #`+id+` polygon")).filter`))
		if err != nil || !strings.Contains(filter, "drop-shadow") || !strings.Contains(filter, dir) {
			t.Errorf("#%s is drawn with filter %q (%v), want a red bar (drop-shadow %s)", id, filter, err, dir)
		}
	}
	if filter, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector("#n-b path, #n-b polygon")).filter`)); err != nil || filter != "none" {
		t.Errorf("#n-b, without a breakpoint, is drawn with filter %q (%v)", filter, err)
	}
	fixed, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const b = document.getElementById("bp-before-c"); return b.checked && b.disabled && !b.name })()`))
	if err != nil || !fixed {
		t.Fatalf("the compiled breakpoint's box is not ticked and fixed (%v)", err)
	}
	screenshot(t, ctx, "graph-breakpoints.png")
}

// A person opens a research thread waiting at review with the research
// subgraph expanded: the inner nodes show what ran (plan done, review
// waiting). When the run is resumed, the nodes inside the open subgraph
// light up live from the subgraph's task events, and the timeline names
// them by their path.
func TestE2ELiveThreadLightsAnExpandedSubgraph(t *testing.T) {
	t.Parallel()
	f := setupGraphs(t)
	ctx := e2e.Browser(t)
	if _, err := f.runs.Start(context.Background(), "research", "e2e-sub", map[string]any{"question": "Compare Postgres and SQLite for a multi-user web app"}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if th := f.wait(t, "e2e-sub"); th.Status != runs.StatusInterrupted {
		t.Fatalf("thread %+v, want it waiting at review", th)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/e2e-sub?expand=research")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the page, live", `body[data-live="1"]`)
	waitFor(t, ctx, "plan done inside the open subgraph", `g[id="n-research:plan"].done`)
	waitFor(t, ctx, "review waiting inside the open subgraph", `g[id="n-research:review"].interrupted`)
	// (chromedp.ID would read the ":" as a pseudo-class.)
	if cls, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`g[id="n-research:summarise"]`), "class")); err != nil || strings.Contains(cls.Value, "done") {
		t.Fatalf("summarise, which has not run, is %q (%v)", cls.Value, err)
	}
	screenshot(t, ctx, "thread-subgraph.png")
	// Someone answers (another tab, the API): this page sees the run go
	// on over its websocket.
	if _, err := f.runs.Resume(context.Background(), "e2e-sub", true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "summarise done, live, in the open subgraph", `g[id="n-research:summarise"].done`)
	waitFor(t, ctx, "the run finished", `body[data-status="idle"]`)
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("#timeline tr.task")).map(r => r.cells[1].textContent + "=" + r.cells[3].textContent).join(" ")`))
	if err != nil || !strings.Contains(rows, "research:summarise=done") {
		t.Fatalf("timeline %q (%v) lacks the subgraph's summarise, done", rows, err)
	}
}
