package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/superstep-dev/superstep/internal/e2e"
)

// screenshot saves a PNG under $STUDIO_SCREENSHOTS (for the README) when
// that is set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("STUDIO_SCREENSHOTS")
	if dir == "" {
		return
	}
	if err := e2e.Screenshot(ctx, filepath.Join(dir, name)); err != nil {
		t.Errorf("screenshot %s: %v", name, err)
	}
}

func waitFor(t *testing.T, ctx context.Context, what string, sel string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(sel))); err != nil {
		html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
		t.Fatalf("waiting for %s (%s): %v\npage: %.3000s", what, sel, err, html)
	}
}

// waitText waits until the element with the given id shows text holding
// want, read in the page as it shows it: never through a node found
// before a navigation ended, which is stale under load ("No node with
// given id found"). It fails the test after 10 s, saying what it shows.
func waitText(t *testing.T, ctx context.Context, id, want string) {
	t.Helper()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Run(pctx, chromedp.Poll[bool](fmt.Sprintf(`(document.getElementById(%q)?.textContent ?? "").includes(%q)`, id, want))); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.getElementById(%q)?.textContent ?? "(no such element)"`, id)))
		t.Fatalf("#%s shows %q, want it to hold %q: %v", id, got, want, err)
	}
}

// A person opens a graph, starts a run from the form, and watches the
// nodes light up: fetch done, slow running while it works, then done, and
// the thread idle.
func TestE2EStartRunAndWatchNodesLightUp(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/graphs/flow"),
		chromedp.WaitReady(chromedp.ID("n-slow")),
		chromedp.SetValue(chromedp.CSS(`input[name="thread"]`), "e2e-run"),
		chromedp.SetValue(chromedp.CSS(`textarea[name="input"]`), `{"log": ["from the browser"]}`),
	); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "graph-page.png")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("start"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the thread page, live", `body[data-thread="e2e-run"][data-live="1"]`)
	waitFor(t, ctx, "fetch done", `g#n-fetch.done`)
	waitFor(t, ctx, "slow running", `g#n-slow.running`)
	if cls, err := e2e.Class(ctx, "cancel-form"); err != nil || strings.Contains(cls, "hidden") {
		t.Fatalf("cancel form class %q, %v", cls, err)
	}
	screenshot(t, ctx, "live-run.png")
	close(f.gate.release)
	waitFor(t, ctx, "the run finished", `body[data-status="idle"]`)
	waitFor(t, ctx, "slow done", `g#n-slow.done`)
	for _, id := range []string{"n-fetch", "n-slow"} {
		cls, err := e2e.Class(ctx, id)
		if err != nil || !strings.Contains(cls, "done") || strings.Contains(cls, "running") {
			t.Errorf("#%s class = %q, %v; want done, not running", id, cls, err)
		}
	}
	ms, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#timeline tr.task.done:last-child td.ms`)))
	if err != nil || ms == "" {
		t.Errorf("the timeline shows no duration for the last task (%q, %v)", ms, err)
	}
	if v := f.values(t, "flow", "e2e-run"); fmt.Sprint(v["log"]) != "[from the browser fetch slow]" {
		t.Fatalf("state = %v", v)
	}
}

// A person answers an interrupt from the approval panel: Approve with a
// click publishes; Reject with the keyboard shortcut ends without
// publishing.
func TestE2EApproveAndRejectAnInterrupt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		pick, confirm chromedp.Action[chromedp.Void]
		picked        string
		wantAnswer    string
		wantPublish   bool
	}{
		// Every answer takes a second, deliberate step (issue 14, item 8).
		{"approve by click", chromedp.Click(chromedp.ID("approve-0")), chromedp.Click(chromedp.ID("approve-0")), "#approve-0.confirming", "true", true},
		{"reject by key r", chromedp.KeyEvent("r"), chromedp.KeyEvent(kb.Enter), "#reject-0.confirming", "false", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			ctx := e2e.Browser(t)
			thread := strings.ReplaceAll(tc.name, " ", "-")
			if err := chromedp.Do(ctx,
				chromedp.Navigate(f.srv.URL+"/graphs/approval"),
				chromedp.WaitReady(chromedp.ID("start")),
				chromedp.SetValue(chromedp.CSS(`input[name="thread"]`), thread),
				chromedp.Click(chromedp.ID("start")),
			); err != nil {
				t.Fatal(err)
			}
			waitFor(t, ctx, "the approval panel", `body[data-status="interrupted"] #approve-0`)
			waitFor(t, ctx, "review interrupted", `g#n-review.interrupted`)
			// The question reads as prose, the rest as a list of text (the
			// JSON is behind the raw toggle).
			text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#approval p.question`)))
			if err != nil || text != "Ship it?" {
				t.Fatalf("the question is not shown as prose: %q, %v", text, err)
			}
			facts, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#approval dl.facts`)))
			if err != nil || !strings.Contains(facts, "<script>alert(1)</script>") {
				t.Fatalf("the interrupt value is not shown as readable text: %q, %v", facts, err)
			}
			screenshot(t, ctx, "approval-panel.png")
			if err := chromedp.Do(ctx, tc.pick); err != nil {
				t.Fatal(err)
			}
			waitFor(t, ctx, "the confirmation", tc.picked)
			if err := chromedp.Do(ctx, tc.confirm); err != nil {
				t.Fatal(err)
			}
			waitFor(t, ctx, "the resumed run finished", `body[data-status="idle"][data-live="1"]`)
			f.wait(t, thread)
			v := f.values(t, "approval", thread)
			if v["answer"] != tc.wantAnswer {
				t.Fatalf("answer = %v, want %s", v["answer"], tc.wantAnswer)
			}
			published := strings.Contains(fmt.Sprint(v["log"]), "published")
			if published != tc.wantPublish {
				t.Fatalf("log = %v, published %v, want %v", v["log"], published, tc.wantPublish)
			}
			if tc.wantPublish {
				waitFor(t, ctx, "publish done", `g#n-publish.done`)
			}
		})
	}
}

// A page on another site that posts a form to the Studio gets 403 and
// starts nothing.
func TestE2ECrossSitePostIsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!DOCTYPE html><form id="f" method="post" action="%s/graphs/flow/runs">
<input name="thread" value="evil"></form><script>document.getElementById("f").submit()</script>`, f.srv.URL)
	}))
	defer evil.Close()
	// 127.0.0.1 (the Studio) and localhost (the attacker) are different
	// sites to the browser.
	evilURL := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(evilURL)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the Studio's refusal", `#error-message`)
	msg, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("error-message")))
	if err != nil || !strings.Contains(msg, "came from another site") {
		t.Fatalf("refusal = %q, %v", msg, err)
	}
	if _, err := f.runs.Thread(context.Background(), "evil"); err == nil {
		t.Fatal("the cross-site post started a run")
	}
}
