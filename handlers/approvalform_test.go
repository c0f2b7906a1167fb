package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/transferapproval"
	"github.com/superstep-dev/superstep/runs"
)

// setupTransfer serves the Studio over the transfer-approval example and
// starts a transfer over the limit, so the run waits on its schema
// question. It returns the thread and the pending interrupt's id.
func setupTransfer(t *testing.T) (*fixture, string, string) {
	t.Helper()
	g, err := transferapproval.New(transferapproval.Options{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	f := serve(t, map[string]engine.Compiled{"transfer": g})
	th, err := f.runs.Start(context.Background(), "transfer", "", transferapproval.Input("Please send 1,500 to Alice Martin for the March invoice."), runs.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	th = f.wait(t, th.ID)
	if th.Status != runs.StatusInterrupted || len(th.Pending) != 1 {
		t.Fatalf("run is %s with %d interrupts, want interrupted with 1", th.Status, len(th.Pending))
	}
	return f, th.ID, th.Pending[0].ID
}

func TestApprovalPanelRendersASchemaAsATypedForm(t *testing.T) {
	t.Parallel()
	f, thread, _ := setupTransfer(t)
	body := f.get(t, "/threads/"+thread).body
	for _, want := range []string{
		`id="form-0"`,
		`<select name="field.action" required>`,
		`<option value="&#34;approve&#34;">approve</option>`,
		`<option value="&#34;edit&#34;">edit</option>`,
		`<input type="number" name="field.amount"`,
		`<input type="text" name="field.reason"`,
		`class="required-mark"`,
		`value="form"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("thread page lacks %s", want)
		}
	}
	if strings.Contains(body, `id="approve-0"`) {
		t.Error("a schema question still offers the untyped Approve button")
	}
	if strings.Index(body, `data-field="action"`) > strings.Index(body, `data-field="amount"`) {
		t.Error("the required field action is not listed first")
	}
}

func TestPlainInterruptKeepsApproveRejectRespond(t *testing.T) {
	t.Parallel()
	f := setup(t)
	th, err := f.runs.Start(context.Background(), "approval", "", nil, runs.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.wait(t, th.ID)
	body := f.get(t, "/threads/"+th.ID).body
	if !strings.Contains(body, `id="approve-0"`) || !strings.Contains(body, `id="respond-0"`) || strings.Contains(body, `id="form-0"`) {
		t.Error("a question without a schema must keep Approve/Reject/Respond and no typed form")
	}
}

func TestTypedFormAnswersResumeTheRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		fields url.Values
		want   map[string]any
	}{
		{"edit with amount", url.Values{"field.action": {`"edit"`}, "field.amount": {"900"}, "field.reason": {""}},
			map[string]any{"status": transferapproval.StatusExecuted, "amount": 900.0}},
		{"reject with reason", url.Values{"field.action": {`"reject"`}, "field.reason": {"unknown payee"}},
			map[string]any{"status": transferapproval.StatusRejected, "reason": "unknown payee"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, thread, iid := setupTransfer(t)
			form := url.Values{"action": {"form"}, "interrupt_id": {iid}}
			for k, v := range tc.fields {
				form[k] = v
			}
			if res := f.post(t, "/threads/"+thread+"/resume", form); res.code != http.StatusSeeOther {
				t.Fatalf("resume = %d: %s", res.code, res.body)
			}
			if th := f.wait(t, thread); th.Status != runs.StatusIdle {
				t.Fatalf("run is %s (%s) after the answer, want finished", th.Status, th.Error)
			}
			got := f.values(t, "transfer", thread)
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
		})
	}
}

func TestTypedFormRefusesBadFields(t *testing.T) {
	t.Parallel()
	f, thread, iid := setupTransfer(t)
	cases := []struct {
		name string
		form url.Values
		want string
	}{
		{"required missing", url.Values{"interrupt_id": {iid}}, "action is required"},
		{"not a choice", url.Values{"interrupt_id": {iid}, "field.action": {`"pay twice"`}}, "is not one of the choices"},
		{"not a number", url.Values{"interrupt_id": {iid}, "field.action": {`"edit"`}, "field.amount": {"lots"}}, "is not a number"},
		{"no interrupt id", url.Values{"field.action": {`"approve"`}}, "needs interrupt_id"},
		{"unknown interrupt", url.Values{"interrupt_id": {"nope"}, "field.action": {`"approve"`}}, "no pending interrupt"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.form.Set("action", "form")
			res := f.post(t, "/threads/"+thread+"/resume", tc.form)
			if res.code != http.StatusBadRequest || !strings.Contains(res.body, tc.want) {
				t.Errorf("resume = %d, want 400 saying %q; said it: %v", res.code, tc.want, strings.Contains(res.body, tc.want))
			}
		})
	}
	if th, _ := f.runs.Thread(context.Background(), thread); th.Status != runs.StatusInterrupted {
		t.Errorf("refused answers moved the run to %s", th.Status)
	}
}

func TestTypedFormOnAPlainInterruptIsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	th, err := f.runs.Start(context.Background(), "approval", "", nil, runs.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	th = f.wait(t, th.ID)
	res := f.post(t, "/threads/"+th.ID+"/resume", url.Values{"action": {"form"}, "interrupt_id": {th.Pending[0].ID}})
	if res.code != http.StatusBadRequest || !strings.Contains(res.body, "carries no answer schema") {
		t.Errorf("typed answer to a plain question = %d, want 400", res.code)
	}
}
