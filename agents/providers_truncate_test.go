package agents_test

// A tool's result in list form is cut like a string result: above
// MaxResultBytes its text blocks are cut with the marker, on both
// providers (the model's next request shows it).

import (
	"context"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/agents"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/localprovider"
)

func TestProviderOversizedBlockResultIsCut(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			s, model := newDouble(t, p)
			s.Script(localprovider.Turn{ToolCalls: []localprovider.ToolCall{{ID: "call_1", Name: "dump"}}}, localprovider.Turn{Text: "Done."})
			dump := mustTool(t, "dump", func(context.Context, struct{}) (any, error) {
				return models.Blocks(models.TextBlock(strings.Repeat("y", 100_000))), nil
			})
			g := graphKinds[0].build(t, model, []agents.Tool{dump}, engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
			if _, err := g.invoke(t.Context(), engine.Update{"messages": "Dump it."}, &engine.RunOptions{ThreadID: "t"}); err != nil {
				t.Fatal(err)
			}
			got := resultsSent(t, s.Requests()[1])
			marker := "[truncated: the result was 100000 bytes; only the first 65536 are shown]"
			if len(got) != 1 || len(got[0].Text) > agents.DefaultMaxResultBytes+len(marker)+1 || !strings.Contains(got[0].Text, marker) {
				t.Fatalf("the model was sent a block result of %d bytes, ending %q; want it cut to %d bytes with the marker",
					len(got[0].Text), got[0].Text[max(0, len(got[0].Text)-40):], agents.DefaultMaxResultBytes)
			}
		})
	}
}
