package handlers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/e2e"
	"github.com/superstep-dev/superstep/runs"
)

// rowText is what a tree row says happened (its "what happened" cell).
func rowText(t *testing.T, ctx context.Context, id string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('tr[id="ck-`+id+`"] td.source').innerText`))
	if err != nil {
		t.Fatalf("row %s: %v", id, err)
	}
	return strings.Join(strings.Fields(s), " ")
}

// checkpointAt is the id of the checkpoint of h (newest first) that
// matches, the oldest such.
func checkpointAt(t *testing.T, h []*engine.StateSnapshot, match func(*engine.StateSnapshot) bool) string {
	t.Helper()
	for i := len(h) - 1; i >= 0; i-- {
		if match(h[i]) {
			return h[i].Config.CheckpointID
		}
	}
	t.Fatal("no such checkpoint")
	return ""
}

// Item 13: a thread asked, answered, edited on a branch and re-run from
// the question reads as a history: every row says what happened, in
// words, and the branches sit one lane to the right of their parents.
func TestE2ETreeRowsSayWhatHappenedAndForksIndent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx0 := context.Background()
	const th = "e2e-labels"
	if _, err := f.runs.Start(ctx0, "approval", th, nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, th)
	if _, err := f.runs.Resume(ctx0, th, "true"); err != nil {
		t.Fatal(err)
	}
	f.wait(t, th)
	h := f.history(t, "approval", th)
	input := atStep(t, h, -1)
	afterStart := atStep(t, h, 0)
	asked := atStep(t, h, 1)
	answered := atStep(t, h, 2)
	edit, err := f.runs.UpdateState(ctx0, th, afterStart, map[string]any{"answer": "edited"}, "draft")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.runs.RunFrom(ctx0, th, asked); err != nil {
		t.Fatal(err)
	}
	f.wait(t, th) // the re-run asks again
	rerun := checkpointAt(t, f.history(t, "approval", th), func(s *engine.StateSnapshot) bool {
		return s.ParentConfig != nil && s.ParentConfig.CheckpointID == asked && s.Metadata.Source == "fork"
	})

	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/"+th+"/checkpoints/"+edit)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the tree with the edit selected", `#tree tr.ckpt.selected.fork`)
	for id, want := range map[string]string{
		input:      "input",
		afterStart: "step 0: __start__",
		asked:      "step 1: draft interrupt (review)",
		answered:   `answer "true" step 2: review`,
		edit:       "edit of answer as draft",
		rerun:      "re-run from …" + asked[len(asked)-12:] + " interrupt (review)",
	} {
		if got := rowText(t, ctx, id); !strings.Contains(got, want) {
			t.Errorf("row %s says %q, want %q", id, got, want)
		}
	}
	if got, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("happened"))); err != nil || !strings.Contains(got, "edit of answer as draft") {
		t.Errorf("the selected checkpoint's page says %q, %v; want what its row says", got, err)
	}
	// Geometry: a branch's first mark (↳) starts right of where its
	// parent's lane starts; before the lanes indented both sat at 0 px.
	for _, fork := range []struct{ row, parent string }{{edit, afterStart}, {rerun, asked}} {
		off, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => {
			const x = (sel) => document.querySelector(sel).getBoundingClientRect().left;
			return x('tr[id="ck-`+fork.row+`"] td.lane .branch') - x('tr[id="ck-`+fork.parent+`"] td.lane a');
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		if off < 10 {
			t.Errorf("the branch %s starts %.1f px right of its parent's lane; want it indented (≥ 10 px)", fork.row, off)
		}
	}
	screenshot(t, ctx, "checkpoint-tree.png")
}

// Item 14: from a row, one click diffs a checkpoint with its parent; from
// its page, one click diffs it with the head. Both are deep links, and
// the lines name paths as code does (log[0], answer).
func TestE2EDiffWithParentAndWithHeadInOneClick(t *testing.T) {
	t.Parallel()
	f := setup(t)
	const th = "e2e-diff1"
	finishedWith(t, f, th, map[string]any{"answer": "first"})
	if _, err := f.runs.UpdateState(context.Background(), th, "", map[string]any{"answer": "second"}, "slow"); err != nil {
		t.Fatal(err)
	}
	h := f.history(t, "flow", th)
	head, afterFetch := h[0].Config.CheckpointID, atStep(t, h, 1)
	parent := atStep(t, h, 0)
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/threads/"+th+"/checkpoints"),
		chromedp.WaitReady(chromedp.CSS(`tr[id="ck-`+afterFetch+`"] a.diff-parent`)),
		chromedp.Click(chromedp.CSS(`tr[id="ck-`+afterFetch+`"] a.diff-parent`)),
	); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the diff with the parent", `#diff-table`)
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.HasSuffix(loc, "/threads/"+th+"/diff?a="+parent+"&b="+afterFetch) {
		t.Fatalf("diff with parent at %q (%v); want a deep link from the parent to the checkpoint", loc, err)
	}
	waitText(t, ctx, "diff-table", `+ log[0]: "fetch"`)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/threads/"+th+"/checkpoints/"+afterFetch),
		chromedp.WaitReady(chromedp.ID("diff-head")),
		chromedp.Click(chromedp.ID("diff-head")),
	); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the diff with the head", `#diff-table tr#diff-answer.changed`)
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || !strings.HasSuffix(loc, "/diff?a="+afterFetch+"&b="+head) {
		t.Fatalf("diff with head at %q (%v)", loc, err)
	}
	waitText(t, ctx, "diff-table", `~ answer: "first" → "second"`)
	waitText(t, ctx, "diff-table", `+ log[1]: "slow"`)
}

// Item 15: at a finished head, Resume from head is disabled and says why;
// one fork changes a key and adds one the state does not hold yet, and
// the new head (with a task to run again) can be resumed.
func TestE2EEditSeveralKeysAtOnceAndResumeOnlyWhatCanRun(t *testing.T) {
	t.Parallel()
	f := setup(t)
	const th = "e2e-multi"
	finishedWith(t, f, th, map[string]any{"answer": "first"})
	head := f.history(t, "flow", th)[0].Config.CheckpointID
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/threads/"+th+"/checkpoints/"+head),
		chromedp.WaitReady(chromedp.ID("edit-state")),
	); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "resume disabled", `#resume-head[disabled]`)
	reason, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("resume-reason")))
	if err != nil || reason != "nothing to run: the head has no next tasks" {
		t.Fatalf("the reason next to Resume from head = %q, %v", reason, err)
	}
	// Keys are listed sorted: answer (0), log (1); n has no value yet.
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("edit-0"), `"second"`),
		chromedp.SetValue(chromedp.ID("add-key"), "n"),
		chromedp.SetValue(chromedp.ID("add-value"), "7"),
		chromedp.SetValue(chromedp.ID("as-node"), "fetch"),
		chromedp.Click(chromedp.ID("fork")),
	); err != nil {
		t.Fatal(err)
	}
	// The old head was selected and the head too: wait for the new page,
	// whose selected head is another checkpoint.
	waitFor(t, ctx, "the edit, selected as the head", `#tree tr.ckpt.head.selected:not([id="ck-`+head+`"])`)
	for id, want := range map[string]string{"val-0": `"second"`, "val-1": `"fetch",`, "val-2": "7"} {
		waitText(t, ctx, id, want)
	}
	sel, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("selected").dataset.checkpoint`))
	if err != nil {
		t.Fatal(err)
	}
	if got := rowText(t, ctx, sel); got != "edit of answer, n as fetch" {
		t.Errorf("the edit's row says %q", got)
	}
	// As fetch: slow runs next, so there is something to resume.
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#resume-head[disabled], #resume-reason").length`)); err != nil || n != 0 {
		t.Fatalf("Resume from head still disabled after an edit with a task to run (%d, %v)", n, err)
	}
	if v := f.values(t, "flow", th); v["answer"] != "second" || v["n"] != 7 {
		t.Fatalf("head values = %v", v)
	}
}
