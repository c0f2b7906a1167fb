package memoryagent

import (
	"context"
	"fmt"
	"strings"
)

// Model is the language model that answers: one prompt in, one completion
// out, the shape a thin OpenAI-compatible chat client satisfies.
type Model interface {
	Complete(ctx context.Context, prompt string) (string, error)
}

// answerPrompt opens the answer prompt; ScriptedModel recognises it.
const answerPrompt = "Answer the user's question from their memories. Say so if they do not contain the answer.\n"

// ScriptedModel is a deterministic Model that trusts retrieval: it
// answers with the most relevant memory, or says it does not know.
type ScriptedModel struct{}

// Complete implements Model.
func (ScriptedModel) Complete(ctx context.Context, prompt string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if !strings.HasPrefix(prompt, answerPrompt) {
		return "", fmt.Errorf("scripted model: no rule for a prompt starting %q", strings.SplitN(prompt, "\n", 2)[0])
	}
	for line := range strings.Lines(prompt) {
		if fact, ok := strings.CutPrefix(line, "1. "); ok {
			return "You told me: " + strings.TrimSpace(fact), nil
		}
	}
	return "I don't know yet; you haven't told me anything about that.", nil
}
