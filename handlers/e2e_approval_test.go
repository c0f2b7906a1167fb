package handlers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/transferapproval"
	"github.com/superstep-dev/superstep/internal/e2e"
	"github.com/superstep-dev/superstep/runs"
)

// Issue 14, items 5, 6, 8 and 9: approvals are safe. Each test drives the
// approval panel in Chromium the way a person would and asserts what they
// see, and what the run did (or did not do).

// approvalText is the visible text of the first element sel matches.
func approvalText(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	// Read through the page's own DOM at the moment of reading: a node id
	// chromedp resolved a moment before goes stale if the page changes the
	// element in between (seen once in CI as "No node with given id").
	js := fmt.Sprintf(`(() => { const el = document.querySelector(%q); return el ? el.innerText : null; })()`, sel)
	s, err := chromedp.Run(ctx, chromedp.Evaluate[*string](js))
	if err != nil || s == nil {
		url, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText.slice(0, 2000)`))
		t.Fatalf("text of %s: %v (element missing: %v); page %s:\n%s", sel, err, s == nil, url, body)
	}
	return *s
}

// approvalEval runs a JavaScript expression in the page and returns its value.
func approvalEval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

func approvalDo(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
		t.Fatalf("%v\npage: %.3000s", err, html)
	}
}

// stillWaiting fails t unless thread is still interrupted in the same
// run it was in (runID): nothing answered it.
func stillWaiting(t *testing.T, f *fixture, thread, runID, after string) {
	t.Helper()
	th, err := f.runs.Thread(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	if th.Status != runs.StatusInterrupted || th.RunID != runID {
		t.Fatalf("after %s the thread is %s in run %s (was interrupted in %s): something answered it", after, th.Status, th.RunID, runID)
	}
}

// Item 5: the typed form chooses nothing for the person, reads as prose
// with the raw JSON behind a toggle, holds answers to the schema's limits
// in the browser, and shows the reason the graph gave for refusing an
// answer next to the field it concerns.
func TestE2EApprovalFormChoosesNothingAndShowsLimits(t *testing.T) {
	t.Parallel()
	f, thread, iid := setupTransfer(t)
	th, _ := f.runs.Thread(context.Background(), thread)
	ctx := e2e.Browser(t)
	approvalDo(t, ctx, chromedp.Navigate(f.srv.URL+"/threads/"+thread))
	waitFor(t, ctx, "the typed form", `body[data-live="1"] #form-0 select[name="field.action"]`)

	// Nothing is chosen: the select shows its empty choice.
	if v := approvalEval[string](t, ctx, `document.querySelector('#form-0 select[name="field.action"]').value`); v != "" {
		t.Fatalf("the action select starts at %q; nothing may be chosen for the person", v)
	}
	if s := approvalEval[string](t, ctx, `document.querySelector('#form-0 select[name="field.action"]').selectedOptions[0].text`); !strings.Contains(s, "Choose") {
		t.Errorf("the action select shows %q, want a prompt to choose", s)
	}
	// The question is prose; the other members a list; the JSON is raw.
	box := "#interrupt-" + iid
	if q := approvalText(t, ctx, box+" p.question"); !strings.HasPrefix(q, "Pay 1500.00 to Alice Martin?") {
		t.Errorf("the question reads %q", q)
	}
	if dl := approvalText(t, ctx, box+" dl.facts"); !strings.Contains(dl, "recipient") || !strings.Contains(dl, "Alice Martin") || !strings.Contains(dl, "limit") || strings.Contains(dl, "properties") {
		t.Errorf("the facts read %q; want recipient and limit, and no schema", dl)
	}
	if open := approvalEval[bool](t, ctx, `document.querySelector('`+box+` details.raw').open`); open {
		t.Error("the raw JSON is open; it belongs behind its toggle")
	}
	if approvalEval[bool](t, ctx, `document.querySelector('`+box+` details.raw pre').checkVisibility()`) {
		t.Error("the raw JSON is visible while its toggle is closed")
	}
	// The limits are the inputs' own: the browser refuses to send the
	// form unchosen, or with an amount that is not above zero.
	approvalDo(t, ctx, chromedp.Click(chromedp.ID("submit-0")))
	if cls, _ := e2e.Class(ctx, "submit-0"); strings.Contains(cls, "confirming") {
		t.Fatal("an unchosen required action got as far as the confirmation")
	}
	if !approvalEval[bool](t, ctx, `document.querySelector('#form-0 select[name="field.action"]').matches(':invalid')`) {
		t.Error("the browser does not hold the unchosen action to required")
	}
	if got := approvalEval[string](t, ctx, `document.querySelector('#form-0 input[name="field.reason"]').getAttribute('maxlength')`); got != "500" {
		t.Errorf("reason maxlength = %q, want 500 from the schema", got)
	}
	approvalDo(t, ctx,
		chromedp.SetValue(chromedp.CSS(`#form-0 select[name="field.action"]`), `"edit"`),
		chromedp.SendKeys(chromedp.CSS(`#form-0 input[name="field.amount"]`), "0"),
		chromedp.Click(chromedp.ID("submit-0")),
	)
	if !approvalEval[bool](t, ctx, `document.querySelector('#form-0 input[name="field.amount"]').matches(':invalid')`) {
		t.Error("an amount of 0 passes the browser; the schema wants it above 0")
	}
	if cls, _ := e2e.Class(ctx, "submit-0"); strings.Contains(cls, "confirming") {
		t.Fatal("an amount of 0 got as far as the confirmation")
	}
	stillWaiting(t, f, thread, th.RunID, "answers the browser refused")

	// An edit still over the limit: the graph asks again and says why,
	// next to the amount (the answer-errors convention).
	approvalDo(t, ctx,
		chromedp.SetValue(chromedp.CSS(`#form-0 input[name="field.amount"]`), ""),
		chromedp.SendKeys(chromedp.CSS(`#form-0 input[name="field.amount"]`), "2000"),
		chromedp.Click(chromedp.ID("submit-0")),
	)
	waitFor(t, ctx, "the confirmation", `#submit-0.confirming`)
	approvalDo(t, ctx, chromedp.Click(chromedp.ID("submit-0")))
	waitFor(t, ctx, "the question asked again", `body[data-status="interrupted"][data-live="1"] #form-0 label.invalid[data-field="amount"] .field-error`)
	reason := approvalText(t, ctx, `#form-0 label[data-field="amount"] .field-error`)
	if !strings.Contains(reason, "2000.00 is still over the 1000.00 limit") {
		t.Errorf("the reason next to the amount reads %q", reason)
	}
	errID := approvalEval[string](t, ctx, `document.querySelector('#form-0 label[data-field="amount"] .field-error').id`)
	if d := approvalEval[string](t, ctx, `document.querySelector('#form-0 input[name="field.amount"]').getAttribute('aria-describedby')`); d == "" || d != errID {
		t.Errorf("the amount input is described by %q, want the reason's id %q", d, errID)
	}
	if q := approvalText(t, ctx, "#approval p.question"); !strings.Contains(q, "Pay 2000.00") {
		t.Errorf("the question asked again reads %q", q)
	}
	screenshot(t, ctx, "approval-form.png")
}

// Item 6: a refused answer stays on the page, with what was typed: bad
// JSON in Respond, a schema violation in the typed form, and an answer
// to a thread that no longer waits (409), each shown in the approval
// panel of the thread page, at the thread's own address.
func TestE2EApprovalErrorsStayOnThePage(t *testing.T) {
	t.Parallel()
	t.Run("bad JSON in respond", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		th := startApproval(t, f, "bad-json")
		ctx := e2e.Browser(t)
		approvalDo(t, ctx, chromedp.Navigate(f.srv.URL+"/threads/bad-json"))
		waitFor(t, ctx, "the approval panel", `body[data-live="1"] #response-0`)
		approvalDo(t, ctx,
			chromedp.SendKeys(chromedp.ID("response-0"), "yes"),
			chromedp.Click(chromedp.ID("respond-0")),
		)
		waitFor(t, ctx, "the confirmation", `#respond-0.confirming`)
		approvalDo(t, ctx, chromedp.Click(chromedp.ID("respond-0")))
		// data-live: the page's script has run (it restores the address).
		waitFor(t, ctx, "the refusal in the panel", `body[data-live="1"] #approval #answer-error-0`)
		if msg := approvalText(t, ctx, "#answer-error-0"); !strings.Contains(msg, "bad JSON") {
			t.Errorf("the refusal reads %q", msg)
		}
		if v := approvalEval[string](t, ctx, `document.getElementById('response-0').value`); v != "yes" {
			t.Errorf("the response box holds %q after the refusal, want what was typed", v)
		}
		if d := approvalEval[string](t, ctx, `document.getElementById('response-0').getAttribute('aria-describedby')`); d != "answer-error-0" {
			t.Errorf("the response is described by %q", d)
		}
		if loc := approvalEval[string](t, ctx, `location.pathname`); loc != "/threads/bad-json" {
			t.Errorf("the page's address is %s after the refusal, want the thread's", loc)
		}
		if n := approvalEval[int](t, ctx, `document.querySelectorAll('#error-message').length`); n != 0 {
			t.Error("a refused answer led to an error page")
		}
		stillWaiting(t, f, "bad-json", th.RunID, "bad JSON")
		// Correcting it in place answers.
		approvalDo(t, ctx,
			chromedp.SetValue(chromedp.ID("response-0"), `"yes"`),
			chromedp.Click(chromedp.ID("respond-0")),
		)
		waitFor(t, ctx, "the confirmation", `#respond-0.confirming`)
		approvalDo(t, ctx, chromedp.Click(chromedp.ID("respond-0")))
		waitFor(t, ctx, "the run finished", `body[data-status="idle"]`)
		f.wait(t, "bad-json")
		if got := f.values(t, "approval", "bad-json")["answer"]; got != "yes" {
			t.Errorf("answer = %v", got)
		}
	})
	t.Run("schema violation in the typed form", func(t *testing.T) {
		t.Parallel()
		f, thread, _ := setupTransfer(t)
		th, _ := f.runs.Thread(context.Background(), thread)
		ctx := e2e.Browser(t)
		approvalDo(t, ctx, chromedp.Navigate(f.srv.URL+"/threads/"+thread))
		waitFor(t, ctx, "the typed form", `body[data-live="1"] #form-0`)
		// A browser that does not check the limits (an old one, or a
		// hand-made request): only the server stands in the way.
		approvalEval[bool](t, ctx, `document.getElementById('form-0').noValidate = true; document.querySelector('#form-0 input[name="field.amount"]').removeAttribute('data-xmin'); true`)
		approvalDo(t, ctx,
			chromedp.SetValue(chromedp.CSS(`#form-0 select[name="field.action"]`), `"edit"`),
			chromedp.SendKeys(chromedp.CSS(`#form-0 input[name="field.amount"]`), "-5"),
			chromedp.SendKeys(chromedp.CSS(`#form-0 input[name="field.reason"]`), "typo in the invoice"),
			chromedp.Click(chromedp.ID("submit-0")),
		)
		waitFor(t, ctx, "the confirmation", `#submit-0.confirming`)
		approvalDo(t, ctx, chromedp.Click(chromedp.ID("submit-0")))
		waitFor(t, ctx, "the refusal next to the amount", `#form-0 label.invalid[data-field="amount"] .field-error`)
		if msg := approvalText(t, ctx, `#form-0 label[data-field="amount"] .field-error`); msg != "-5 must be greater than 0" {
			t.Errorf("the reason next to the amount reads %q", msg)
		}
		for sel, want := range map[string]string{
			`#form-0 select[name="field.action"]`: `"edit"`,
			`#form-0 input[name="field.amount"]`:  "-5",
			`#form-0 input[name="field.reason"]`:  "typo in the invoice",
		} {
			if v := approvalEval[string](t, ctx, `document.querySelector('`+sel+`').value`); v != want {
				t.Errorf("%s holds %q after the refusal, want %q", sel, v, want)
			}
		}
		stillWaiting(t, f, thread, th.RunID, "a negative amount")
	})
	t.Run("a thread that no longer waits", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		th := startApproval(t, f, "gone")
		ctx := e2e.Browser(t)
		approvalDo(t, ctx, chromedp.Navigate(f.srv.URL+"/threads/gone"))
		waitFor(t, ctx, "the approval panel", `body[data-live="1"] #response-0`)
		// Another tab answers first.
		if _, err := f.runs.Resume(context.Background(), "gone", runs.ByID{th.Pending[0].ID: "from the other tab"}); err != nil {
			t.Fatal(err)
		}
		f.wait(t, "gone")
		// This tab's answer, posted as its form would (the panel may be
		// retired by then; the server must still keep the text).
		approvalEval[bool](t, ctx, fmt.Sprintf(`(() => {
			const f = document.createElement('form'); f.method = 'post'; f.action = '/threads/gone/resume';
			for (const [k, v] of [['action', 'respond'], ['interrupt_id', %q], ['value', '{"note": "my careful answer"}']]) {
				const i = document.createElement('input'); i.type = 'hidden'; i.name = k; i.value = v; f.appendChild(i);
			}
			document.body.appendChild(f); f.submit(); return true })()`, th.Pending[0].ID))
		waitFor(t, ctx, "the refusal", `#approval #refused-answer`)
		if msg := approvalText(t, ctx, "#refused-message"); !strings.Contains(msg, "no longer waits") || !strings.Contains(msg, "is idle") {
			t.Errorf("the refusal reads %q", msg)
		}
		if kept := approvalEval[string](t, ctx, `document.getElementById('refused-kept').value`); kept != `{"note": "my careful answer"}` {
			t.Errorf("the kept answer is %q", kept)
		}
		if n := approvalEval[int](t, ctx, `document.querySelectorAll('#approve-0, #error-message').length`); n != 0 {
			t.Error("the page still offers to answer, or is an error page")
		}
		if got := f.values(t, "approval", "gone")["answer"]; got != "from the other tab" {
			t.Errorf("answer = %v", got)
		}
	})
}

func startApproval(t *testing.T, f *fixture, thread string) runs.Thread {
	t.Helper()
	if _, err := f.runs.Start(context.Background(), "approval", thread, nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	th := f.wait(t, thread)
	if th.Status != runs.StatusInterrupted {
		t.Fatalf("thread %s is %s, want interrupted", thread, th.Status)
	}
	return th
}

// Item 8: no single key, Enter in a field, or double click answers;
// only a confirmed click or a modifier does.
func TestE2EApprovalNeedsADeliberateSecondStep(t *testing.T) {
	t.Parallel()
	t.Run("plain question", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		th := startApproval(t, f, "keys")
		ctx := e2e.Browser(t)
		approvalDo(t, ctx, chromedp.Navigate(f.srv.URL+"/threads/keys"))
		waitFor(t, ctx, "the approval panel", `body[data-live="1"] #approve-0`)
		// A marker that a navigation (any form sent) would wipe.
		approvalEval[bool](t, ctx, `window.stayed = true`)
		approvalDo(t, ctx, chromedp.KeyEvent("a"))
		waitFor(t, ctx, "Approve picked", `#approve-0.confirming`)
		if s := approvalText(t, ctx, "#approve-0"); !strings.HasPrefix(s, "Confirm") {
			t.Errorf("the picked Approve reads %q, want a confirmation", s)
		}
		approvalDo(t, ctx, chromedp.KeyEvent("a"), chromedp.KeyEvent("r"), chromedp.KeyEvent("a"), chromedp.KeyEvent("r"))
		waitFor(t, ctx, "Reject picked instead", `#reject-0.confirming`)
		if cls, _ := e2e.Class(ctx, "approve-0"); strings.Contains(cls, "confirming") {
			t.Error("picking Reject left Approve armed")
		}
		// Enter in the response box; a double click on Respond (a click,
		// then a second with click count 2, as a mouse sends them): the
		// first click only asks, the second is not a deliberate answer.
		approvalDo(t, ctx,
			chromedp.SendKeys(chromedp.ID("response-0"), `true`+kb.Enter),
			chromedp.KeyEvent(kb.Enter),
			chromedp.Click(chromedp.ID("respond-0")),
			chromedp.DoubleClick(chromedp.ID("respond-0")),
		)
		if cls, _ := e2e.Class(ctx, "respond-0"); !strings.Contains(cls, "confirming") {
			t.Errorf("after a double click Respond is %q, want it asking for confirmation", cls)
		}
		if !approvalEval[bool](t, ctx, `window.stayed === true`) {
			t.Fatal("a key or a double click sent the page somewhere")
		}
		stillWaiting(t, f, "keys", th.RunID, "a, r, Enter in a field and a double click")
		// The modifier is deliberate: Ctrl+Enter sends the response.
		approvalDo(t, ctx,
			chromedp.SetValue(chromedp.ID("response-0"), `"deliberate"`),
			chromedp.Focus(chromedp.ID("response-0")),
			chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		)
		waitFor(t, ctx, "the run finished", `body[data-status="idle"]`)
		f.wait(t, "keys")
		if got := f.values(t, "approval", "keys")["answer"]; got != "deliberate" {
			t.Fatalf("answer = %v; an earlier key or click answered before the deliberate one", got)
		}
	})
	t.Run("typed form", func(t *testing.T) {
		t.Parallel()
		f, thread, _ := setupTransfer(t)
		th, _ := f.runs.Thread(context.Background(), thread)
		ctx := e2e.Browser(t)
		approvalDo(t, ctx, chromedp.Navigate(f.srv.URL+"/threads/"+thread))
		waitFor(t, ctx, "the typed form", `body[data-live="1"] #form-0`)
		approvalEval[bool](t, ctx, `window.stayed = true`)
		// A reject typed in full: if any Enter below sent it, the
		// deliberate approval at the end could not pay.
		approvalDo(t, ctx,
			chromedp.SetValue(chromedp.CSS(`#form-0 select[name="field.action"]`), `"reject"`),
			chromedp.SendKeys(chromedp.CSS(`#form-0 input[name="field.reason"]`), "looks wrong"+kb.Enter),
			chromedp.SendKeys(chromedp.CSS(`#form-0 input[name="field.amount"]`), "12"+kb.Enter),
			chromedp.KeyEvent("a"),
			chromedp.KeyEvent(kb.Enter),
		)
		if !approvalEval[bool](t, ctx, `window.stayed === true`) {
			t.Fatal("Enter in a field sent the typed form")
		}
		stillWaiting(t, f, thread, th.RunID, "Enter in the form's fields")
		// One click only asks.
		approvalDo(t, ctx,
			chromedp.SetValue(chromedp.CSS(`#form-0 select[name="field.action"]`), `"approve"`),
			chromedp.Click(chromedp.ID("submit-0")),
		)
		waitFor(t, ctx, "the confirmation", `#submit-0.confirming`)
		if s := approvalText(t, ctx, "#submit-0"); !strings.Contains(s, "Confirm") || !strings.Contains(s, "action approve") {
			t.Errorf("the confirmation reads %q; want what will be sent", s)
		}
		stillWaiting(t, f, thread, th.RunID, "one click")
		approvalDo(t, ctx, chromedp.KeyEvent(kb.Enter)) // on the armed, focused button: the second step
		waitFor(t, ctx, "the run finished", `body[data-status="idle"]`)
		f.wait(t, thread)
		if v := f.values(t, "transfer", thread); v["status"] != transferapproval.StatusExecuted || v["amount"] != 1500.0 {
			t.Fatalf("values %v; want the 1500 paid as approved", v)
		}
	})
}

// Item 9: at a pause (a breakpoint, or an interrupt) the person edits
// state in the approval panel and the run goes on with it: the graph
// sees the edited value.
func TestE2EEditStateAtAPause(t *testing.T) {
	t.Parallel()
	t.Run("breakpoint", func(t *testing.T) {
		t.Parallel()
		f := serve(t, map[string]engine.Compiled{"count": editCountGraph(t)})
		if _, err := f.runs.Start(context.Background(), "count", "bp", map[string]any{"n": 1}, runs.StartOptions{InterruptBefore: []string{"report"}}); err != nil {
			t.Fatal(err)
		}
		if th := f.wait(t, "bp"); th.Status != runs.StatusInterrupted {
			t.Fatalf("thread is %s, want paused before report", th.Status)
		}
		ctx := e2e.Browser(t)
		approvalDo(t, ctx, chromedp.Navigate(f.srv.URL+"/threads/bp"))
		waitFor(t, ctx, "the editor", `body[data-live="1"] #approval #edit-state`)
		approvalDo(t, ctx, chromedp.Click(chromedp.CSS("#edit-state > summary")))
		waitFor(t, ctx, "the state key n", `#edit-form textarea[name="state.n"]`)
		if v := approvalEval[string](t, ctx, `document.querySelector('#edit-form textarea[name="state.n"]').value`); v != "2" {
			t.Errorf("the editor shows n = %q, want the paused state's 2", v)
		}
		approvalDo(t, ctx,
			chromedp.SetValue(chromedp.CSS(`#edit-form textarea[name="state.n"]`), "42"),
			chromedp.Click(chromedp.ID("edit-continue")),
		)
		waitFor(t, ctx, "the confirmation", `#edit-continue.confirming`)
		screenshot(t, ctx, "edit-state.png")
		approvalDo(t, ctx, chromedp.Click(chromedp.ID("edit-continue")))
		waitFor(t, ctx, "the run finished", `body[data-status="idle"][data-live="1"]`)
		f.wait(t, "bp")
		if got := f.values(t, "count", "bp")["answer"]; got != "report saw n=42" {
			t.Fatalf("answer = %v; the node after the breakpoint did not see the edit", got)
		}
		waitFor(t, ctx, "the values panel shows it", `#vp-answer`)
		if s := approvalText(t, ctx, "#vp-answer"); !strings.Contains(s, "report saw n=42") {
			t.Errorf("the values panel shows %q", s)
		}
	})
	t.Run("interrupt", func(t *testing.T) {
		t.Parallel()
		f, thread, iid := setupTransfer(t)
		ctx := e2e.Browser(t)
		approvalDo(t, ctx, chromedp.Navigate(f.srv.URL+"/threads/"+thread))
		waitFor(t, ctx, "the editor", `body[data-live="1"] #approval #edit-state`)
		approvalDo(t, ctx,
			chromedp.Click(chromedp.CSS("#edit-state > summary")),
			chromedp.SetValue(chromedp.CSS(`#edit-form textarea[name="state.amount"]`), "2500"),
			chromedp.SetValue(chromedp.CSS(`#edit-form textarea[name="state.recipient"]`), `"Bob Stone"`),
			chromedp.Click(chromedp.ID("edit-continue")),
		)
		waitFor(t, ctx, "the confirmation", `#edit-continue.confirming`)
		approvalDo(t, ctx, chromedp.Click(chromedp.ID("edit-continue")))
		// The paused node ran again on the edit and asks about it (a new
		// interrupt: the edit is a new checkpoint).
		waitFor(t, ctx, "the question asked again", `body[data-status="interrupted"][data-live="1"] .interrupt:not(#interrupt-`+iid+`) #form-0`)
		if q := approvalText(t, ctx, "#approval p.question"); !strings.HasPrefix(q, "Pay 2500.00 to Bob Stone?") {
			t.Fatalf("the question after the edit reads %q", q)
		}
	})
}

// editCountGraph is START → count → report → END: count adds one to n,
// report says what n it saw.
func editCountGraph(t testing.TB) engine.Compiled {
	t.Helper()
	sg := engine.NewStateGraph[flowState]()
	sg.AddNode("count", func(_ context.Context, s flowState) (engine.Output, error) {
		return engine.Update{"n": s.N + 1}, nil
	})
	sg.AddNode("report", func(_ context.Context, s flowState) (engine.Output, error) {
		return engine.Update{"answer": fmt.Sprintf("report saw n=%d", s.N)}, nil
	})
	sg.AddEdge(engine.Start, "count").AddEdge("count", "report").AddEdge("report", engine.End)
	return compileFlow(t, sg)
}
