package mapreduce

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
)

// Model is the language model that summarises a section: one prompt in,
// one completion out, the shape a thin OpenAI-compatible chat client
// satisfies.
type Model interface {
	Complete(ctx context.Context, prompt string) (string, error)
}

// summarisePrompt opens every summarise prompt; ScriptedModel recognises
// it.
const summarisePrompt = "Summarise this section in one sentence.\n"

// ScriptedModel is a deterministic Model: its "summary" is the first
// sentence of the section's text. It is safe for concurrent use, as the
// workers call it in parallel.
type ScriptedModel struct {
	calls atomic.Int64
}

// NewScriptedModel returns a ScriptedModel.
func NewScriptedModel() *ScriptedModel { return &ScriptedModel{} }

// Complete implements Model.
func (m *ScriptedModel) Complete(ctx context.Context, prompt string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	m.calls.Add(1)
	body, ok := strings.CutPrefix(prompt, summarisePrompt)
	if !ok {
		return "", fmt.Errorf("scripted model: no rule for a prompt starting %q", strings.SplitN(prompt, "\n", 2)[0])
	}
	_, text, _ := strings.Cut(body, "\n\n")
	text = strings.Join(strings.Fields(text), " ")
	if end := strings.IndexAny(text, ".!?"); end >= 0 {
		text = text[:end+1]
	}
	return text, nil
}

// Calls reports how many prompts the model has answered.
func (m *ScriptedModel) Calls() int { return int(m.calls.Load()) }
