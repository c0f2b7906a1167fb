package handlers_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/superstep-dev/superstep/examples/transferapproval"
	"github.com/superstep-dev/superstep/internal/e2e"
)

// A person answers the transfer question through its typed form: picks
// edit, types a lower amount, sends; the run pays the edited amount.
func TestE2ETypedApprovalForm(t *testing.T) {
	t.Parallel()
	f, thread, _ := setupTransfer(t)
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/"+thread)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the typed form", `body[data-status="interrupted"] #form-0 select[name="field.action"]`)
	screenshot(t, ctx, "typed-approval.png")
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#form-0 select[name="field.action"]`), `"edit"`),
		chromedp.SetValue(chromedp.CSS(`#form-0 input[name="field.amount"]`), "750.5"),
		chromedp.Click(chromedp.ID("submit-0")),
	); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the confirmation", `#submit-0.confirming`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("submit-0"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the resumed run finished", `body[data-status="idle"][data-live="1"]`)
	f.wait(t, thread)
	v := f.values(t, "transfer", thread)
	if v["status"] != transferapproval.StatusExecuted || v["amount"] != 750.5 {
		t.Fatalf("status %v, amount %v; want executed, 750.5", v["status"], v["amount"])
	}
}
