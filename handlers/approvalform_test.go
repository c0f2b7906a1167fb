package handlers_test

import (
	"context"
	"encoding/json"
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

// Item 5 on the server: a typed answer is held to the schema's limits
// even when it never went through the browser; the 400 names the field
// and the limit, and nothing resumes.
func TestTypedAnswerIsHeldToTheSchemasLimits(t *testing.T) {
	t.Parallel()
	f := serve(t, map[string]engine.Compiled{"limits": limitsGraph(t)})
	th, err := f.runs.Start(context.Background(), "limits", "limits", nil, runs.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	th = f.wait(t, th.ID)
	iid := th.Pending[0].ID
	valid := url.Values{"field.code": {"AB-12"}, "field.count": {"3"}, "field.share": {"0.5"}, "field.color": {`"red"`}, "field.urgent": {"true"}}
	for _, tc := range []struct {
		name, field, value, want string
	}{
		{"required missing", "field.code", "", "code is required"},
		{"enum not a choice", "field.color", `"mauve"`, `color: "\"mauve\"" is not one of the choices (red, green)`},
		{"boolean unchosen", "field.urgent", "", "urgent is required: choose one of yes (true), no (false)"},
		{"boolean not a choice", "field.urgent", "on", `urgent: "on" is not one of the choices`},
		{"below minimum", "field.count", "0", "count: 0 is below the minimum 1"},
		{"above maximum", "field.count", "11", "count: 11 is above the maximum 10"},
		{"not whole", "field.count", "2.5", `count: "2.5" is not a whole number`},
		{"exclusive minimum", "field.share", "0", "share: 0 must be greater than 0"},
		{"exclusive maximum", "field.share", "1", "share: 1 must be less than 1"},
		{"pattern", "field.code", "ab-12", `code: "ab-12" does not match the pattern ^[A-Z]{2}-[0-9]+$`},
		{"too short", "field.code", "A", "code: 1 characters is shorter than the minimum length 3"},
		{"too long", "field.code", "AB-1234567", "code: 10 characters is longer than the maximum length 8"},
	} {
		form := url.Values{"action": {"form"}, "interrupt_id": {iid}}
		for k, v := range valid {
			form[k] = v
		}
		form.Set(tc.field, tc.value)
		res := f.post(t, "/threads/limits/resume", form)
		if res.code != 400 || !strings.Contains(res.body, escapedHTML(tc.want)) {
			t.Errorf("%s: %d, want 400 saying %q", tc.name, res.code, tc.want)
		}
	}
	if now, _ := f.runs.Thread(context.Background(), "limits"); now.Status != runs.StatusInterrupted || now.RunID != th.RunID {
		t.Fatalf("refused answers moved the thread: %+v", now)
	}
	form := url.Values{"action": {"form"}, "interrupt_id": {iid}}
	for k, v := range valid {
		form[k] = v
	}
	if res := f.post(t, "/threads/limits/resume", form); res.code != 303 {
		t.Fatalf("a valid answer = %d: %.500s", res.code, res.body)
	}
	f.wait(t, "limits")
	if got := f.values(t, "limits", "limits")["answer"]; got != `{"code":"AB-12","color":"red","count":3,"share":0.5,"urgent":true}` {
		t.Errorf("the graph got %v", got)
	}
}

// escapedHTML is s as templ escapes it in a page.
func escapedHTML(s string) string {
	return strings.NewReplacer(`"`, "&#34;", "<", "&lt;", ">", "&gt;", "&", "&amp;").Replace(s)
}

// limitsGraph asks one question whose schema uses every limit the typed
// form knows, and records the answer as JSON.
func limitsGraph(t testing.TB) engine.Compiled {
	t.Helper()
	sg := engine.NewStateGraph[flowState]()
	sg.AddNode("ask", func(ctx context.Context, _ flowState) (engine.Output, error) {
		a, err := engine.Interrupt(ctx, map[string]any{"question": "Fill it in", "schema": map[string]any{
			"type": "object", "required": []string{"code", "count", "share", "color", "urgent"},
			"properties": map[string]any{
				"code":   map[string]any{"type": "string", "pattern": "^[A-Z]{2}-[0-9]+$", "minLength": 3, "maxLength": 8},
				"count":  map[string]any{"type": "integer", "minimum": 1, "maximum": 10},
				"share":  map[string]any{"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
				"color":  map[string]any{"enum": []string{"red", "green"}},
				"urgent": map[string]any{"type": "boolean"},
			},
		}})
		if err != nil {
			return nil, err
		}
		return engine.Update{"answer": answerJSON(t, a)}, nil
	})
	sg.AddEdge(engine.Start, "ask").AddEdge("ask", engine.End)
	return compileFlow(t, sg)
}

func answerJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
