package researchsubgraph

import (
	"context"
	"fmt"
	"strings"
)

// Model is the language model the assistant asks: a single prompt in, a
// completion out, the shape a thin OpenAI-compatible chat client (one user
// message, the first choice's content back) satisfies.
type Model interface {
	Complete(ctx context.Context, prompt string) (string, error)
}

// Prompt openings; the nodes build their prompts with them and
// ScriptedModel recognises them.
const (
	classifyPrompt  = "Decide how to answer the question. Reply with one word: quick when one known fact answers it, research when sources must be found and compared.\n"
	quickPrompt     = "Answer the question in one sentence.\n"
	planPrompt      = "Plan the research: list the search queries that together answer the question, one per line.\n"
	summarisePrompt = "Answer the question from the findings only, citing each source by its id in brackets.\n"
)

// ScriptedModel is a deterministic Model for tests and offline demos. It
// routes questions that compare or weigh things to research, answers a
// few known facts directly, plans one search per product the question
// names, and summarises by quoting the findings with their ids.
type ScriptedModel struct{}

var (
	researchMarkers = []string{"compare", "comparison", "versus", " vs ", "trade-off", "tradeoff", "pros and cons", "should we", "which is better"}
	knownTopics     = []string{"Postgres", "SQLite", "pgvector"}
	quickFacts      = []struct {
		words  []string
		answer string
	}{
		{[]string{"postgres", "port"}, "Postgres listens on port 5432 by default."},
		{[]string{"sqlite", "server"}, "No: SQLite runs inside the application, with no server."},
	}
)

// Complete implements Model.
func (ScriptedModel) Complete(ctx context.Context, prompt string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	question := ""
	for line := range strings.Lines(prompt) {
		if q, ok := strings.CutPrefix(line, "Question: "); ok {
			question = strings.TrimSpace(q)
			break
		}
	}
	lower := " " + strings.ToLower(question) + " "
	switch {
	case strings.HasPrefix(prompt, classifyPrompt):
		for _, m := range researchMarkers {
			if strings.Contains(lower, m) {
				return "research", nil
			}
		}
		return "quick", nil
	case strings.HasPrefix(prompt, quickPrompt):
	facts:
		for _, f := range quickFacts {
			for _, w := range f.words {
				if !strings.Contains(lower, w) {
					continue facts
				}
			}
			return f.answer, nil
		}
		return "I don't know that offhand; ask me to compare the options and I will research it.", nil
	case strings.HasPrefix(prompt, planPrompt):
		var queries []string
		for _, t := range knownTopics {
			if strings.Contains(lower, strings.ToLower(t)) {
				queries = append(queries, t)
			}
		}
		if len(queries) == 0 {
			queries = []string{question}
		}
		return strings.Join(queries, "\n"), nil
	case strings.HasPrefix(prompt, summarisePrompt):
		var parts []string
		inFindings := false
		for line := range strings.Lines(prompt) {
			line = strings.TrimSpace(line)
			if line == "Findings:" {
				inFindings = true
				continue
			}
			if inFindings && strings.HasPrefix(line, "[") {
				if id, text, ok := strings.Cut(line[1:], "] "); ok {
					parts = append(parts, text+" ["+id+"]")
				}
			}
		}
		if len(parts) == 0 {
			return "The findings do not answer the question.", nil
		}
		return strings.Join(parts, " "), nil
	}
	return "", fmt.Errorf("scripted model: no rule for a prompt starting %q", strings.SplitN(prompt, "\n", 2)[0])
}
