package cveassessment

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Model is the language model the agent asks for prose and vectors. The
// shape is a single prompt in, a completion out, so a thin OpenAI-compatible
// chat client (one user message, the first choice's content back)
// satisfies it.
type Model interface {
	Complete(ctx context.Context, prompt string) (string, error)
}

// ScriptedModel is a deterministic Model for tests and offline demos: it
// answers the agent's two kinds of prompt by rule and records every prompt
// it was given, so tests can count model calls.
type ScriptedModel struct {
	mu      sync.Mutex
	prompts []string
}

// NewScriptedModel returns a ScriptedModel with no recorded prompts.
func NewScriptedModel() *ScriptedModel { return &ScriptedModel{} }

// Prompt openings the scripted model recognises; the graph's nodes build
// their prompts with them.
const (
	attackSurfacePrompt = "Describe the attack surface of "
	vectorPrompt        = "Write the CVSS v3.1 base vector for "
)

var evidenceVector = regexp.MustCompile(`(?m)^(database|vendor) vector[^:]*: (CVSS:\S+)`)

// Complete implements Model.
func (m *ScriptedModel) Complete(ctx context.Context, prompt string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	m.mu.Lock()
	m.prompts = append(m.prompts, prompt)
	m.mu.Unlock()
	switch {
	case strings.HasPrefix(prompt, attackSurfacePrompt):
		products := "the affected products"
		for line := range strings.Lines(prompt) {
			if p, ok := strings.CutPrefix(line, "Products: "); ok {
				products = strings.TrimSpace(p)
			}
		}
		return "Anyone who can get input to " + products + " over the network can reach the flaw; internet-facing deployments are exposed first.", nil
	case strings.HasPrefix(prompt, vectorPrompt):
		// A vendor's statement knows the product's defaults better than
		// the database, so the script prefers it, as an analyst would.
		var chosen string
		for _, m := range evidenceVector.FindAllStringSubmatch(prompt, -1) {
			if chosen == "" || m[1] == "vendor" {
				chosen = m[2]
			}
		}
		if chosen == "" {
			return "I cannot assess this without a reference vector.", nil
		}
		return "Considering the evidence, the base vector is " + chosen + ".", nil
	}
	return "", fmt.Errorf("scripted model: no rule for prompt %q", firstLine(prompt))
}

// Prompts returns the prompts received so far, in order.
func (m *ScriptedModel) Prompts() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.prompts...)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
