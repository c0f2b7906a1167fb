package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
)

// A refused answer comes back as the thread page (no script needed): the
// reason in the approval panel, what was typed kept, the 4xx status.
func TestRefusedAnswerComesBackAsTheThreadPage(t *testing.T) {
	t.Parallel()
	t.Run("bad JSON", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		th := startApproval(t, f, "bad")
		res := f.post(t, "/threads/bad/resume", url.Values{"action": {"respond"}, "value": {"yes <b>"}, "interrupt_id": {th.Pending[0].ID}})
		want(t, res, http.StatusBadRequest, `data-thread="bad"`, `id="answer-error-0"`, "response: bad JSON",
			`aria-describedby="answer-error-0"`, `>yes &lt;b&gt;</textarea>`)
	})
	t.Run("a field over its limit", func(t *testing.T) {
		t.Parallel()
		f, thread, iid := setupTransfer(t)
		res := f.post(t, "/threads/"+thread+"/resume", url.Values{"action": {"form"}, "interrupt_id": {iid},
			"field.action": {`"edit"`}, "field.amount": {"0"}, "field.reason": {"too much"}})
		want(t, res, http.StatusBadRequest, `id="form-0"`, `class="field-error"`, "0 must be greater than 0",
			`<option value="&#34;edit&#34;" selected>`, `name="field.amount" value="0"`, `value="too much"`)
		if th, _ := f.runs.Thread(context.Background(), thread); th.Status != runs.StatusInterrupted {
			t.Errorf("the refused answer moved the thread to %s", th.Status)
		}
	})
	t.Run("the thread no longer waits", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		th := startApproval(t, f, "gone")
		if _, err := f.runs.Resume(context.Background(), "gone", true); err != nil {
			t.Fatal(err)
		}
		f.wait(t, "gone")
		res := f.post(t, "/threads/gone/resume", url.Values{"action": {"respond"}, "value": {`"mine"`}, "interrupt_id": {th.Pending[0].ID}})
		want(t, res, http.StatusConflict, `id="refused-answer"`, "no longer waits", `>&#34;mine&#34;</textarea>`)
		if strings.Contains(res.body, `id="approve-0"`) {
			t.Error("a thread that no longer waits still offers Approve")
		}
	})
}

// The state editor at a pause: only changed keys are written, bad JSON or
// no change is refused on the page with the text kept, and a thread that
// is not paused cannot be edited from here.
func TestEditStateAtAPauseRoute(t *testing.T) {
	t.Parallel()
	f := serve(t, map[string]engine.Compiled{"count": editCountGraph(t)})
	if _, err := f.runs.Start(context.Background(), "count", "edit", map[string]any{"n": 1}, runs.StartOptions{InterruptBefore: []string{"report"}}); err != nil {
		t.Fatal(err)
	}
	th := f.wait(t, "edit")
	page := f.get(t, "/threads/edit")
	want(t, page, http.StatusOK, `id="edit-state"`, `name="state.n"`, `value="edit"`)
	for _, tc := range []struct {
		name string
		form url.Values
		want []string
	}{
		{"nothing changed", url.Values{"state.n": {"2"}}, []string{"no state key was changed", `id="edit-error"`}},
		{"bad JSON", url.Values{"state.n": {"forty"}}, []string{`state key &#34;n&#34;: bad JSON`, ">forty</textarea>", `<details class="edit-state" id="edit-state" open>`}},
		{"wrong type", url.Values{"state.n": {`"many"`}}, []string{"n", `>&#34;many&#34;</textarea>`}},
	} {
		tc.form.Set("action", "edit")
		res := f.post(t, "/threads/edit/resume", tc.form)
		want(t, res, http.StatusBadRequest, tc.want...)
		if now, _ := f.runs.Thread(context.Background(), "edit"); now.Status != runs.StatusInterrupted || now.RunID != th.RunID {
			t.Fatalf("%s: a refused edit moved the thread: %+v", tc.name, now)
		}
	}
	// An edit made on a page that showed another pause (the run went on
	// and paused again since) is refused, and nothing moves.
	stale := f.post(t, "/threads/edit/resume", url.Values{"action": {"edit"}, "state.n": {"9"}, "head": {"an-older-checkpoint"}})
	want(t, stale, http.StatusConflict, "moved on since this page showed it")
	if now, _ := f.runs.Thread(context.Background(), "edit"); now.Status != runs.StatusInterrupted || now.RunID != th.RunID {
		t.Fatalf("a stale edit moved the thread: %+v", now)
	}
	if !strings.Contains(page.body, `name="head" value="`) {
		t.Fatalf("the edit form does not carry the head it was made at")
	}
	res := f.post(t, "/threads/edit/resume", url.Values{"action": {"edit"}, "state.n": {"7"}, "state.log": {""}})
	if res.code != http.StatusSeeOther {
		t.Fatalf("edit = %d: %.500s", res.code, res.body)
	}
	f.wait(t, "edit")
	if v := f.values(t, "count", "edit"); v["answer"] != "report saw n=7" {
		t.Fatalf("values %v; want report to see the edited n", v)
	}
	res = f.post(t, "/threads/edit/resume", url.Values{"action": {"edit"}, "state.n": {"8"}})
	want(t, res, http.StatusConflict, "no longer waits", "not paused")
}
