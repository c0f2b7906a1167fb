package transferapproval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/store"
)

// DefaultLimit is the largest amount paid without a person's approval.
const DefaultLimit = 1000

// ErrUnclearRequest is returned when the request does not say how much to
// pay to whom.
var ErrUnclearRequest = errors.New("unclear transfer request")

// State is one transfer request on its way to the bank.
type State struct {
	// Request is the customer's message, e.g. "Send 1,500 to Alice Martin".
	Request string `json:"request"`
	// Recipient and Requested are what the model read from it; Amount
	// starts as Requested and is what will be paid (a reviewer may edit
	// it).
	Recipient string  `json:"recipient"`
	Requested float64 `json:"requested"`
	Amount    float64 `json:"amount"`
	// Decision is DecisionAuto, DecisionApproved or DecisionRejected;
	// Reason is the reviewer's reason for a rejection.
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
	// Status is StatusExecuted or StatusRejected at the end; Reference is
	// the bank's reference for an executed payment.
	Status    string `json:"status"`
	Reference string `json:"reference"`
}

// Decisions of the risk check.
const (
	DecisionAuto     = "auto-approved" // within the limit
	DecisionApproved = "approved"      // a person approved (possibly after an edit)
	DecisionRejected = "rejected"      // a person rejected
)

// Final statuses.
const (
	StatusExecuted = "executed"
	StatusRejected = "rejected"
)

// Actions a reviewer may answer with.
const (
	ActionApprove = "approve"
	ActionReject  = "reject"
	ActionEdit    = "edit"
)

// Question is the interrupt payload of the risk check: what to decide,
// the facts to decide on, and the schema of the accepted answers.
type Question struct {
	Question  string  `json:"question"`
	Recipient string  `json:"recipient"`
	Amount    float64 `json:"amount"`
	Limit     float64 `json:"limit"`
	// Problem says why the previous answer was not accepted ("invalid
	// answer: ..." or an edited amount still over the limit); empty on
	// the first ask.
	Problem string `json:"problem,omitempty"`
	// Errors says, per answer field, why the previous answer was not
	// accepted (the Studio's answer-errors convention: its approval form
	// shows each reason next to its field); empty on the first ask.
	Errors map[string]string `json:"errors,omitempty"`
	Schema *Schema           `json:"schema"`
}

// Answer is a reviewer's decision. Resume with an Answer, the same as a
// JSON object ({"action": "edit", "amount": 800}), or the bare strings
// "approve" / "reject".
type Answer struct {
	Action string `json:"action"`
	// Amount is the new amount of an edit (and is ignored otherwise).
	Amount *float64 `json:"amount,omitempty"`
	// Reason explains a rejection to the customer.
	Reason string `json:"reason,omitempty"`
}

// AnswerSchema describes the answers the risk check accepts: an action,
// an amount above zero that an edit must carry, and an optional reason.
func AnswerSchema() *Schema {
	zero, maxReason, closed := 0.0, 500, false
	return &Schema{
		Type:  "object",
		Title: "Transfer review",
		Properties: map[string]*Schema{
			"action": {Type: "string", Enum: []any{ActionApprove, ActionReject, ActionEdit},
				Description: "approve pays the amount shown; reject cancels the transfer; edit changes the amount"},
			"amount": {Type: "number", ExclusiveMinimum: &zero, Description: "the new amount, for edit"},
			"reason": {Type: "string", MaxLength: &maxReason, Description: "why, for reject"},
		},
		Required:             []string{"action"},
		AdditionalProperties: &closed,
		If:                   &Schema{Properties: map[string]*Schema{"action": {Const: ActionEdit}}},
		Then:                 &Schema{Required: []string{"amount"}},
	}
}

// Options configure the graph.
type Options struct {
	// Model reads the request; nil means a new ScriptedModel.
	Model Model
	// Payments executes approved transfers; nil means a new Ledger.
	Payments Payments
	// Limit is the largest amount paid without approval; 0 means
	// DefaultLimit.
	Limit float64
	// Checkpointer, Cache and Store are passed to Compile. Answering the
	// risk check's question needs a Checkpointer: the run stops there and
	// resumes from the saved checkpoint.
	Checkpointer checkpoints.Saver
	Cache        cache.Cache
	Store        store.Store
}

// Node names.
const (
	NodeExtract   = "extract"
	NodeRiskCheck = "risk_check"
	NodeExecute   = "execute"
	NodeReject    = "reject"
)

// Input is the run input for a customer's request.
func Input(request string) engine.Update {
	return engine.Update{"request": request}
}

// New builds the graph: extract reads amount and recipient, risk_check
// passes small amounts and asks a person about large ones, then execute
// pays or reject records the refusal.
func New(opts Options) (*engine.Graph[State], error) {
	model := opts.Model
	if model == nil {
		model = NewScriptedModel()
	}
	pay := opts.Payments
	if pay == nil {
		pay = NewLedger()
	}
	limit := opts.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	if limit < 0 || math.IsNaN(limit) || math.IsInf(limit, 0) {
		return nil, fmt.Errorf("%w: transfer limit %v must be a positive number", engine.ErrInvalidGraph, limit)
	}
	g := engine.NewStateGraph[State]()
	g.AddNode(NodeExtract, func(ctx context.Context, s State) (engine.Output, error) { return extract(ctx, model, s) })
	g.AddNode(NodeRiskCheck, func(ctx context.Context, s State) (engine.Output, error) { return riskCheck(ctx, s, limit) },
		engine.Destinations(NodeExecute, NodeReject))
	g.AddNode(NodeExecute, func(ctx context.Context, s State) (engine.Output, error) {
		ref, err := pay.Pay(ctx, s.Recipient, s.Amount)
		if err != nil {
			return nil, fmt.Errorf("pay %.2f to %s: %w", s.Amount, s.Recipient, err)
		}
		return engine.Update{"status": StatusExecuted, "reference": ref}, nil
	})
	g.AddNode(NodeReject, func(context.Context, State) (engine.Output, error) {
		return engine.Update{"status": StatusRejected}, nil
	})
	g.AddEdge(engine.Start, NodeExtract)
	g.AddEdge(NodeExtract, NodeRiskCheck)
	g.AddEdge(NodeExecute, engine.End)
	g.AddEdge(NodeReject, engine.End)
	return g.Compile(engine.CompileOptions{Name: "transferapproval", Checkpointer: opts.Checkpointer, Cache: opts.Cache, Store: opts.Store})
}

func extract(ctx context.Context, model Model, s State) (engine.Output, error) {
	request := strings.TrimSpace(s.Request)
	if request == "" {
		return nil, engine.Permanent(fmt.Errorf("%w: the request is empty", ErrUnclearRequest))
	}
	reply, err := model.Complete(ctx, extractPrompt+"Request: "+request)
	if err != nil {
		return nil, fmt.Errorf("extract: %w", err)
	}
	// Take the JSON object out of whatever prose surrounds it.
	start, end := strings.Index(reply, "{"), strings.LastIndex(reply, "}")
	if start < 0 || end < start {
		return nil, engine.Permanent(fmt.Errorf("%w: the model's reply %q holds no JSON object", ErrUnclearRequest, reply))
	}
	var t struct {
		Amount    float64 `json:"amount"`
		Recipient string  `json:"recipient"`
	}
	if err := json.Unmarshal([]byte(reply[start:end+1]), &t); err != nil {
		return nil, engine.Permanent(fmt.Errorf("%w: the model's reply %q is not the expected JSON: %v", ErrUnclearRequest, reply, err))
	}
	t.Recipient = strings.TrimSpace(t.Recipient)
	switch {
	case t.Recipient == "":
		return nil, engine.Permanent(fmt.Errorf("%w: no recipient in %q (say who to pay, e.g. \"to Alice Martin\")", ErrUnclearRequest, request))
	case !(t.Amount > 0) || math.IsInf(t.Amount, 0):
		return nil, engine.Permanent(fmt.Errorf("%w: no positive amount in %q", ErrUnclearRequest, request))
	}
	return engine.Update{"recipient": t.Recipient, "requested": t.Amount, "amount": t.Amount}, nil
}

// riskCheck passes amounts within the limit and asks a person about the
// rest. Its loop is replayed on every resume: Interrupt returns the
// answers already given in call order, so an invalid answer or an edit
// still over the limit simply leads to the next question.
func riskCheck(ctx context.Context, s State, limit float64) (engine.Output, error) {
	amount, problem := s.Amount, ""
	var errs map[string]string
	if amount <= limit {
		return route(NodeExecute, engine.Update{"decision": DecisionAuto}), nil
	}
	schema := AnswerSchema()
	for {
		raw, err := engine.Interrupt(ctx, Question{
			Question:  fmt.Sprintf("Pay %.2f to %s? It is over the %.2f limit that is paid without review.", amount, s.Recipient, limit),
			Recipient: s.Recipient, Amount: amount, Limit: limit,
			Problem: problem, Errors: errs, Schema: schema,
		})
		if err != nil {
			return nil, err
		}
		a, err := ParseAnswer(schema, raw)
		if err != nil {
			problem, errs = Refusal(err)
			continue
		}
		switch a.Action {
		case ActionApprove:
			return route(NodeExecute, engine.Update{"decision": DecisionApproved, "amount": amount}), nil
		case ActionReject:
			return route(NodeReject, engine.Update{"decision": DecisionRejected, "reason": a.Reason}), nil
		}
		// An edit: the new amount goes through the limit again.
		if a.Amount == nil { // the schema requires it; stay safe if it changes
			problem = ErrInvalidAnswer.Error() + ": an edit needs an amount"
			errs = map[string]string{"amount": "an edit needs an amount"}
			continue
		}
		amount = *a.Amount
		if amount <= limit {
			return route(NodeExecute, engine.Update{"decision": DecisionApproved, "amount": amount}), nil
		}
		problem = fmt.Sprintf("the edited amount %.2f is still over the %.2f limit", amount, limit)
		errs = map[string]string{"amount": fmt.Sprintf("%.2f is still over the %.2f limit; approve it as it is, or enter at most %.2f", amount, limit, limit)}
	}
}

func route(to string, upd engine.Update) engine.Command {
	return engine.Command{Update: upd, Goto: []any{to}}
}

// ParseAnswer validates a resume value against schema and decodes it. The
// value may be an Answer, anything that encodes to the same JSON (a map
// decoded from a form), a JSON object in a string, or a bare action
// string; it is checked as JSON, as a form would send it. Errors wrap
// ErrInvalidAnswer.
func ParseAnswer(schema *Schema, v any) (Answer, error) {
	if s, ok := v.(string); ok {
		s = strings.TrimSpace(s)
		if strings.HasPrefix(s, "{") {
			var m any
			if err := json.Unmarshal([]byte(s), &m); err != nil {
				return Answer{}, fmt.Errorf("%w: not valid JSON: %v", ErrInvalidAnswer, err)
			}
			v = m
		} else {
			v = map[string]any{"action": strings.ToLower(s)}
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Answer{}, fmt.Errorf("%w: %T cannot be read as JSON: %v", ErrInvalidAnswer, v, err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return Answer{}, fmt.Errorf("%w: %v", ErrInvalidAnswer, err)
	}
	if err := schema.Validate(doc); err != nil {
		return Answer{}, err
	}
	var a Answer
	if err := json.Unmarshal(b, &a); err != nil {
		return Answer{}, fmt.Errorf("%w: %v", ErrInvalidAnswer, err)
	}
	return a, nil
}
