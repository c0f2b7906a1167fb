package transferapproval

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
)

// Model is the language model that reads the request: a single prompt in,
// a completion out, the shape a thin OpenAI-compatible chat client (one
// user message, the first choice's content back) satisfies.
type Model interface {
	Complete(ctx context.Context, prompt string) (string, error)
}

// extractPrompt opens the extraction prompt; ScriptedModel recognises it.
const extractPrompt = "Extract the money transfer from the customer's request. " +
	`Reply with JSON only: {"amount": <number>, "recipient": "<name>"}; use 0 and "" for what the request does not say.` + "\n"

// ScriptedModel is a deterministic Model for tests and offline demos: it
// finds the first amount and the capitalised name after "to" or "pay" with
// regular expressions, and counts its calls.
type ScriptedModel struct {
	calls atomic.Int32
}

// NewScriptedModel returns a ScriptedModel with no calls counted.
func NewScriptedModel() *ScriptedModel { return &ScriptedModel{} }

var (
	amountRe    = regexp.MustCompile(`(\d{1,3}(?:,\d{3})+|\d+)(\.\d{1,2})?`)
	recipientRe = regexp.MustCompile(`\b(?:[Tt]o|[Pp]ay)\s+([A-Z][\w'.-]*(?:\s+[A-Z][\w'.-]*)*)`)
)

// Complete implements Model.
func (m *ScriptedModel) Complete(ctx context.Context, prompt string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	m.calls.Add(1)
	request, ok := strings.CutPrefix(prompt, extractPrompt+"Request: ")
	if !ok {
		return "", fmt.Errorf("scripted model: no rule for a prompt starting %q", strings.SplitN(prompt, "\n", 2)[0])
	}
	var out struct {
		Amount    float64 `json:"amount"`
		Recipient string  `json:"recipient"`
	}
	if m := amountRe.FindStringSubmatch(request); m != nil {
		out.Amount, _ = strconv.ParseFloat(strings.ReplaceAll(m[1], ",", "")+m[2], 64)
	}
	if m := recipientRe.FindStringSubmatch(request); m != nil {
		out.Recipient = strings.TrimRight(m[1], ".")
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", err
	}
	// Models like to chat around their JSON; the node copes with that.
	return "Here is the transfer: " + string(b), nil
}

// Calls returns how many prompts the model answered.
func (m *ScriptedModel) Calls() int { return int(m.calls.Load()) }
