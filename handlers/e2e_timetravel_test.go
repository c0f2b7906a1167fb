package handlers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/superstep-dev/superstep/internal/e2e"
	"github.com/superstep-dev/superstep/runs"
)

// finishedWith runs the flow graph to its end on thread with input.
func finishedWith(t *testing.T, f *fixture, thread string, input map[string]any) {
	t.Helper()
	close(f.gate.release)
	if _, err := f.runs.Start(context.Background(), "flow", thread, input, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, thread)
}

// A person opens an old checkpoint, edits a key, picks the node, forks,
// and lands on the new checkpoint: a branch in the tree, marked head.
func TestE2EEditStateAndSeeTheForkInTheTree(t *testing.T) {
	t.Parallel()
	f := setup(t)
	finishedWith(t, f, "e2e-fork", map[string]any{"n": 1, "answer": "first"})
	old := atStep(t, f.history(t, "flow", "e2e-fork"), 0)
	ctx := e2e.Browser(t)
	// Keys are listed sorted: answer (0), log (1), n (2).
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/threads/e2e-fork/checkpoints/"+old),
		chromedp.WaitReady(chromedp.ID("edit-2")),
		chromedp.SetValue(chromedp.ID("edit-2"), "41"),
		chromedp.SetValue(chromedp.ID("as-node"), "fetch"),
	); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("fork"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the fork selected, on a branch, as head", `#tree tr.ckpt.fork.head.selected.depth-1`)
	// Read in the page: a node looked up from here can be gone by the
	// time its text is asked for, under load.
	waitText(t, ctx, "val-2", "41")
	if v := f.values(t, "flow", "e2e-fork"); v["n"] != 41 {
		t.Fatalf("head n = %v", v["n"])
	}
}

// Re-run from an older checkpoint: the thread page shows slow running
// again and done, and the log keeps one "slow" (the fork starts before it
// wrote).
func TestE2ERerunFromAnOlderCheckpoint(t *testing.T) {
	t.Parallel()
	f := setup(t)
	finishedWith(t, f, "e2e-rerun", nil)
	h := f.history(t, "flow", "e2e-rerun")
	beforeSlow := atStep(t, h, 1)
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/threads/e2e-rerun/checkpoints/"+beforeSlow),
		chromedp.WaitReady(chromedp.ID("rerun")),
	); err != nil {
		t.Fatal(err)
	}
	next, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("next")))
	if err != nil || !strings.Contains(next, "slow") {
		t.Fatalf("next at the checkpoint before slow = %q, %v", next, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("rerun"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the thread page, live and idle", `body[data-thread="e2e-rerun"][data-live="1"][data-status="idle"]`)
	waitFor(t, ctx, "slow done", `g#n-slow.done`)
	f.wait(t, "e2e-rerun")
	if n := len(f.history(t, "flow", "e2e-rerun")); n <= len(h) {
		t.Fatalf("the re-run wrote no checkpoints")
	}
	if v := f.values(t, "flow", "e2e-rerun"); strings.Count(strings.Join(v["log"].([]string), " "), "slow") != 1 {
		t.Fatalf("log = %v; want one slow", v["log"])
	}
}

// A person picks the oldest checkpoint as A and the head as B and sees the
// log's entries added; a large value is cut until expanded.
func TestE2EDiffTwoCheckpointsAndExpandAValue(t *testing.T) {
	t.Parallel()
	f := setup(t)
	finishedWith(t, f, "e2e-diff", map[string]any{"answer": strings.Repeat("long answer ", 500) + "THE END"})
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/threads/e2e-diff/checkpoints"),
		chromedp.WaitReady(chromedp.ID("diff")),
		chromedp.Click(chromedp.CSS(`#tree tbody tr:first-child input[name="a"]`)),
		chromedp.Click(chromedp.CSS(`#tree tbody tr:last-child input[name="b"]`)),
		chromedp.Click(chromedp.ID("diff")),
	); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the diff", `#diff-table tr#diff-log.changed`)
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#diff-log pre`)))
	if err != nil || !strings.Contains(text, `+ log[0]: "fetch"`) || !strings.Contains(text, `+ log[1]: "slow"`) {
		t.Fatalf("diff of log = %q, %v", text, err)
	}
	head := f.history(t, "flow", "e2e-diff")[0].Config.CheckpointID
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/threads/e2e-diff/checkpoints/"+head),
		chromedp.WaitReady(chromedp.ID("expand-0")),
	); err != nil {
		t.Fatal(err)
	}
	cut, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("val-0")))
	if err != nil || strings.Contains(cut, "THE END") {
		t.Fatalf("the large answer is not cut: %d bytes, %v", len(cut), err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("expand-0"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the value expanded", `#val-0[data-expanded="1"]`)
	full, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("val-0")))
	if err != nil || !strings.Contains(full, "THE END") {
		t.Fatalf("expanded value lacks its end: %v", err)
	}
}
