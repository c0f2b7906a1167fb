package handlers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

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
