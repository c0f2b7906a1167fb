package transferapproval_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/transferapproval"
)

const bigRequest = "Please send 1,500 to Alice Martin for the March invoice."

type setup struct {
	ledger *transferapproval.Ledger
	graph  *engine.Graph[transferapproval.State]
}

func newSetup(t *testing.T) *setup {
	t.Helper()
	s := &setup{ledger: transferapproval.NewLedger()}
	var err error
	s.graph, err = transferapproval.New(transferapproval.Options{Payments: s.ledger, Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// step is what one run (start or resume) ended with: the final state, or
// the pending question.
type step struct {
	out      transferapproval.State
	question *transferapproval.Question
	intr     engine.Interruption
}

func (s *setup) run(t *testing.T, thread string, input any) step {
	t.Helper()
	out, err := s.graph.Invoke(context.Background(), input, &engine.RunOptions{ThreadID: thread})
	var intr *engine.Interrupted
	if errors.As(err, &intr) {
		if len(intr.Interrupts) != 1 {
			t.Fatalf("%d interrupts pending, want 1: %+v", len(intr.Interrupts), intr.Interrupts)
		}
		q := decodeQuestion(t, intr.Interrupts[0].Value)
		return step{out: out, question: &q, intr: intr.Interrupts[0]}
	}
	if err != nil {
		t.Fatalf("run %v: %v", input, err)
	}
	return step{out: out}
}

func (s *setup) resume(t *testing.T, thread string, answer any) step {
	t.Helper()
	return s.run(t, thread, engine.Command{Resume: answer})
}

// decodeQuestion reads an interrupt payload as a tool would: from JSON.
func decodeQuestion(t *testing.T, v any) transferapproval.Question {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var q transferapproval.Question
	if err := json.Unmarshal(b, &q); err != nil {
		t.Fatalf("interrupt payload %s is not a Question: %v", b, err)
	}
	return q
}

func amount(f float64) *float64 { return &f }

func TestSmallAmountsExecuteWithoutReview(t *testing.T) {
	t.Parallel()
	cases := []struct {
		request   string
		recipient string
		amount    float64
	}{
		{"Send 250 to Bob Lee, thanks", "Bob Lee", 250},
		{"Pay Carol Diaz 1,000.00 for the rent.", "Carol Diaz", 1000}, // the limit itself passes
		{"Transfer 12.5 to O'Brien Ltd.", "O'Brien Ltd", 12.5},
	}
	for _, tc := range cases {
		t.Run(tc.request, func(t *testing.T) {
			t.Parallel()
			s := newSetup(t)
			got := s.run(t, "t1", transferapproval.Input(tc.request))
			if got.question != nil {
				t.Fatalf("a %v transfer asked %q", tc.amount, got.question.Question)
			}
			want := transferapproval.State{
				Request: tc.request, Recipient: tc.recipient, Requested: tc.amount, Amount: tc.amount,
				Decision: transferapproval.DecisionAuto, Status: transferapproval.StatusExecuted, Reference: "TX-0001",
			}
			if got.out != want {
				t.Fatalf("state = %+v\nwant    %+v", got.out, want)
			}
			if p := s.ledger.Payments(); len(p) != 1 || p[0].Amount != tc.amount || p[0].Recipient != tc.recipient {
				t.Fatalf("payments = %+v", p)
			}
		})
	}
}

// Without a checkpointer a small transfer still runs end to end.
func TestRunsWithoutCheckpointer(t *testing.T) {
	t.Parallel()
	g, err := transferapproval.New(transferapproval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := g.Invoke(context.Background(), transferapproval.Input("Send 40 to Bob Lee"), nil)
	if err != nil || out.Status != transferapproval.StatusExecuted {
		t.Fatalf("run = %+v, %v", out, err)
	}
}

func TestReviewerAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		answer   any
		status   string
		decision string
		paid     float64 // 0: nothing paid
		reason   string
	}{
		{"approve as Answer", transferapproval.Answer{Action: "approve"}, transferapproval.StatusExecuted, transferapproval.DecisionApproved, 1500, ""},
		{"approve as a bare string", "Approve", transferapproval.StatusExecuted, transferapproval.DecisionApproved, 1500, ""},
		{"approve as a form map", map[string]any{"action": "approve"}, transferapproval.StatusExecuted, transferapproval.DecisionApproved, 1500, ""},
		{"reject with a reason", transferapproval.Answer{Action: "reject", Reason: "invoice already paid"}, transferapproval.StatusRejected, transferapproval.DecisionRejected, 0, "invoice already paid"},
		{"reject as JSON text", `{"action": "reject"}`, transferapproval.StatusRejected, transferapproval.DecisionRejected, 0, ""},
		{"edit below the limit", transferapproval.Answer{Action: "edit", Amount: amount(800)}, transferapproval.StatusExecuted, transferapproval.DecisionApproved, 800, ""},
		{"edit to the limit", map[string]any{"action": "edit", "amount": 1000}, transferapproval.StatusExecuted, transferapproval.DecisionApproved, 1000, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSetup(t)
			first := s.run(t, "t1", transferapproval.Input(bigRequest))
			if first.question == nil {
				t.Fatal("a 1500 transfer ran without review")
			}
			if q := first.question; q.Amount != 1500 || q.Recipient != "Alice Martin" || q.Limit != transferapproval.DefaultLimit || q.Problem != "" || q.Schema == nil {
				t.Fatalf("question = %+v", q)
			}
			if p := s.ledger.Payments(); len(p) != 0 {
				t.Fatalf("paid before the review: %+v", p)
			}

			got := s.resume(t, "t1", tc.answer)
			if got.question != nil {
				t.Fatalf("asked again: %+v", got.question)
			}
			if got.out.Status != tc.status || got.out.Decision != tc.decision || got.out.Reason != tc.reason || got.out.Requested != 1500 {
				t.Fatalf("state = %+v", got.out)
			}
			p := s.ledger.Payments()
			if tc.paid == 0 {
				if len(p) != 0 {
					t.Fatalf("a rejected transfer paid %+v", p)
				}
				return
			}
			if len(p) != 1 || p[0].Amount != tc.paid || got.out.Amount != tc.paid || got.out.Reference != p[0].Reference {
				t.Fatalf("paid %+v with state %+v, want one payment of %v", p, got.out, tc.paid)
			}
		})
	}
}

// An edit that stays over the limit is reviewed again, with the new amount
// and the reason; a second edit or an approval then settles it.
func TestEditOverTheLimitAsksAgain(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	first := s.run(t, "t1", transferapproval.Input("Send 5000 to Dana Wu"))
	second := s.resume(t, "t1", transferapproval.Answer{Action: "edit", Amount: amount(2000)})
	if second.question == nil {
		t.Fatalf("an edit to 2000 was not reviewed: %+v", second.out)
	}
	if q := second.question; q.Amount != 2000 || !strings.Contains(q.Problem, "still over") || !strings.Contains(q.Question, "2000.00") {
		t.Fatalf("second question = %+v", q)
	}
	// The reason names the field it concerns, for a form to show next to it.
	if e := second.question.Errors; len(e) != 1 || !strings.HasPrefix(e["amount"], "2000.00 is still over the 1000.00 limit") {
		t.Fatalf("second question's errors = %v, want the amount's reason", e)
	}
	if first.question.Errors != nil {
		t.Fatalf("the first question has errors %v", first.question.Errors)
	}
	if second.intr.ID == first.intr.ID {
		t.Fatal("the second question reuses the first one's interrupt id")
	}
	third := s.resume(t, "t1", transferapproval.Answer{Action: "edit", Amount: amount(3000)})
	if third.question == nil || third.question.Amount != 3000 {
		t.Fatalf("an edit to 3000 = %+v", third)
	}
	done := s.resume(t, "t1", "approve")
	if done.question != nil || done.out.Amount != 3000 || done.out.Status != transferapproval.StatusExecuted {
		t.Fatalf("approval after two edits = %+v", done)
	}
	if p := s.ledger.Payments(); len(p) != 1 || p[0].Amount != 3000 {
		t.Fatalf("payments = %+v, want one of 3000", p)
	}
}

// A wrong answer is not a crash: the node asks again and says why, and a
// valid answer afterwards completes the transfer.
func TestInvalidAnswerAsksAgainWithTheReason(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		answer any
		reason string
		// field is the answer field Question.Errors names ("" for none).
		field string
	}{
		{"unknown action", map[string]any{"action": "maybe"}, `action: must be one of "approve", "reject", "edit", got the string "maybe"`, "action"},
		{"unknown bare word", "later", `action: must be one of "approve", "reject", "edit", got the string "later"`, "action"},
		{"edit without amount", map[string]any{"action": "edit"}, `"amount" is required`, "amount"},
		{"negative amount", map[string]any{"action": "edit", "amount": -5}, "amount: must be greater than 0, got -5", "amount"},
		{"amount as text", map[string]any{"action": "edit", "amount": "900"}, `amount: want a number, got the string "900"`, "amount"},
		{"unknown field", map[string]any{"action": "approve", "note": "ok"}, `unknown field "note" (allowed: action, amount, reason)`, ""},
		{"missing action", map[string]any{"amount": 10}, `"action" is required`, "action"},
		{"a number", 42, "want an object, got the number 42", ""},
		{"broken JSON", `{"action": `, "not valid JSON", ""},
		{"long reason", map[string]any{"action": "reject", "reason": strings.Repeat("x", 501)}, "reason: must be at most 500 characters, got 501", "reason"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSetup(t)
			s.run(t, "t1", transferapproval.Input(bigRequest))
			again := s.resume(t, "t1", tc.answer)
			if again.question == nil {
				t.Fatalf("answer %v was accepted: %+v", tc.answer, again.out)
			}
			if p := again.question.Problem; !strings.HasPrefix(p, "invalid answer: ") || !strings.Contains(p, tc.reason) {
				t.Fatalf("problem = %q, want invalid answer: …%s", p, tc.reason)
			}
			if e := again.question.Errors; (tc.field == "" && e != nil) || (tc.field != "" && (len(e) != 1 || !strings.Contains(tc.reason, e[tc.field]))) {
				t.Fatalf("errors = %v, want the reason under %q", e, tc.field)
			}
			if again.question.Amount != 1500 || again.question.Schema == nil {
				t.Fatalf("question after an invalid answer = %+v", again.question)
			}
			if p := s.ledger.Payments(); len(p) != 0 {
				t.Fatalf("an invalid answer paid %+v", p)
			}
			done := s.resume(t, "t1", transferapproval.Answer{Action: "approve"})
			if done.question != nil || done.out.Status != transferapproval.StatusExecuted {
				t.Fatalf("approve after an invalid answer = %+v", done)
			}
		})
	}
}

func TestResumeByInterruptID(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	first := s.run(t, "t1", transferapproval.Input(bigRequest))
	if len(first.intr.ID) != 32 || first.intr.Node != transferapproval.NodeRiskCheck {
		t.Fatalf("interrupt = %+v", first.intr)
	}
	_, err := s.graph.Invoke(context.Background(), engine.Command{Resume: map[string]any{strings.Repeat("0", 32): "approve"}}, &engine.RunOptions{ThreadID: "t1"})
	if !errors.Is(err, engine.ErrInvalidUpdate) {
		t.Fatalf("resume with an unknown id: %v, want ErrInvalidUpdate", err)
	}
	done := s.resume(t, "t1", map[string]any{first.intr.ID: map[string]any{"action": "edit", "amount": 999.99}})
	if done.question != nil || done.out.Amount != 999.99 || done.out.Status != transferapproval.StatusExecuted {
		t.Fatalf("resume by id = %+v", done)
	}
}

// An approval screen reads the pending question from the thread's state.
func TestGetStateShowsThePendingQuestion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSetup(t)
	first := s.run(t, "t1", transferapproval.Input(bigRequest))
	st, err := s.graph.GetState(ctx, checkpoints.Config{ThreadID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Next, []string{transferapproval.NodeRiskCheck}) || len(st.Interrupts) != 1 {
		t.Fatalf("next %v, interrupts %+v", st.Next, st.Interrupts)
	}
	if st.Interrupts[0].ID != first.intr.ID || st.Values["amount"] != 1500.0 || st.Values["recipient"] != "Alice Martin" {
		t.Fatalf("state = %+v", st)
	}
	// The payload as stored: plain JSON with the schema of the answers.
	payload, ok := st.Interrupts[0].Value.(map[string]any)
	if !ok {
		t.Fatalf("payload is %T", st.Interrupts[0].Value)
	}
	if q, _ := payload["question"].(string); !strings.Contains(q, "1500.00") || !strings.Contains(q, "Alice Martin") {
		t.Fatalf("question = %q", payload["question"])
	}
	b, err := json.Marshal(payload["schema"])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"enum":["approve","reject","edit"]`, `"required":["action"]`, `"exclusiveMinimum":0,"type":"number"`, `"then":{"required":["amount"]}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("schema %s lacks %s", b, want)
		}
	}
	var schema transferapproval.Schema
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	// The stored schema still validates: a tool can check an answer
	// before resuming.
	if err := schema.Validate(map[string]any{"action": "edit"}); !errors.Is(err, transferapproval.ErrInvalidAnswer) {
		t.Fatalf("stored schema accepted an edit without amount: %v", err)
	}
	if err := schema.Validate(map[string]any{"action": "edit", "amount": 10.0}); err != nil {
		t.Fatalf("stored schema refused a valid edit: %v", err)
	}
}

func TestUnclearRequestIsAClearError(t *testing.T) {
	t.Parallel()
	cases := []struct{ request, want string }{
		{"", "the request is empty"},
		{"Send some money to Bob Lee", "no positive amount"},
		{"Send 300 dollars please", "no recipient"},
		{"Send 0 to Bob Lee", "no positive amount"},
	}
	for _, tc := range cases {
		t.Run(tc.request, func(t *testing.T) {
			t.Parallel()
			s := newSetup(t)
			_, err := s.graph.Invoke(context.Background(), transferapproval.Input(tc.request), &engine.RunOptions{ThreadID: "t1"})
			if !errors.Is(err, transferapproval.ErrUnclearRequest) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrUnclearRequest saying %q", err, tc.want)
			}
			if p := s.ledger.Payments(); len(p) != 0 {
				t.Fatalf("paid %+v", p)
			}
		})
	}
}

// A model that answers in prose without JSON is reported, not guessed at.
type proseModel struct{}

func (proseModel) Complete(context.Context, string) (string, error) {
	return "Sure! I'd send it to Bob.", nil
}

func TestModelWithoutJSON(t *testing.T) {
	t.Parallel()
	g, err := transferapproval.New(transferapproval.Options{Model: proseModel{}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Invoke(context.Background(), transferapproval.Input("Send 5 to Bob"), nil)
	if !errors.Is(err, transferapproval.ErrUnclearRequest) || !strings.Contains(err.Error(), "holds no JSON object") {
		t.Fatalf("error %v", err)
	}
}

func TestLimitOption(t *testing.T) {
	t.Parallel()
	for _, limit := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := transferapproval.New(transferapproval.Options{Limit: limit}); !errors.Is(err, engine.ErrInvalidGraph) {
			t.Fatalf("limit %v: error %v, want ErrInvalidGraph", limit, err)
		}
	}
	g, err := transferapproval.New(transferapproval.Options{Limit: 100, Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Invoke(context.Background(), transferapproval.Input("Send 250 to Bob Lee"), &engine.RunOptions{ThreadID: "t"})
	var intr *engine.Interrupted
	if !errors.As(err, &intr) {
		t.Fatalf("250 over a limit of 100: %v, want a review", err)
	}
	if q := decodeQuestion(t, intr.Interrupts[0].Value); q.Limit != 100 || !strings.Contains(q.Question, "100.00 limit") {
		t.Fatalf("question %+v does not name the limit", q)
	}
}
