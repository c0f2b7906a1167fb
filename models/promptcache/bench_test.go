package promptcache

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/anthropic"
)

// BenchmarkRenderRequest100k is what the layer adds to a call of a
// 100k-token conversation (a 6k-token system prompt, 8 tools, 60
// tool-using turns): markers stripped, tools pinned, every block hashed,
// the previous call found and diffed, markers placed. Rendering the SDK
// params is the provider's and is done once, outside the loop.
func BenchmarkRenderRequest100k(b *testing.B) {
	c, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	m, err := anthropic.New(anthropic.Config{APIKey: "sk-bench", Model: "claude-sonnet-4-5"})
	if err != nil {
		b.Fatal(err)
	}
	var tools []models.ToolSpec
	for i := range 8 {
		tools = append(tools, models.ToolSpec{Name: fmt.Sprint("tool_", i), Description: strings.Repeat("Does a thing. ", 20),
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}, "n": map[string]any{"type": "integer"}}}})
	}
	msgs := []models.Message{models.System(strings.Repeat("You are careful. ", 1500))} // ~6k tokens
	for i := range 60 {
		id := fmt.Sprint("toolu_", i)
		msgs = append(msgs,
			models.Human(strings.Repeat(fmt.Sprint("question ", i, " "), 100)),
			models.AIWithToolCalls("Looking.", models.ToolCall{ID: id, Name: "tool_1", Args: map[string]any{"q": fmt.Sprint(i)}}),
			models.ToolResult(id, models.Text(strings.Repeat("result line with some data. ", 200))),
		)
	}
	p, err := m.Render(msgs, &models.CallOptions{Tools: tools})
	if err != nil {
		b.Fatal(err)
	}
	bytes := len(mustJSON(p))
	ctx := WithThread(context.Background(), "bench")
	ts, err := c.thread(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	req := models.NewRequest(m.Info(), msgs, nil, &p, false)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		cl := &call{site: siteOf(ctx), ts: ts, anthropic: true}
		if err := c.prepareAnthropic(ctx, cl, &p, req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(bytes)/4, "tokens/op")
}
