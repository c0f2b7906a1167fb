package models_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/anthropic"
	"github.com/superstep-dev/superstep/models/localprovider"
	"github.com/superstep-dev/superstep/models/openai"
)

// history200 is a 200-message conversation: a system prompt, then
// human questions, AI replies with a tool call, and tool results.
func history200() []models.Message {
	msgs := []models.Message{models.System("You are a careful assistant. Answer with the facts the tools return.")}
	for i := 0; len(msgs) < 199; i++ {
		id := fmt.Sprintf("call_%03d", i)
		msgs = append(msgs,
			models.Human(fmt.Sprintf("What is the weather in city number %d today, and should I take an umbrella?", i)),
			models.AIWithToolCalls("Let me look that up.", models.ToolCall{ID: id, Name: "get_weather", Args: map[string]any{"city": fmt.Sprintf("city-%d", i)}}),
			models.ToolResult(id, models.Text(`{"temperature_c": 18, "conditions": "light rain", "wind_kph": 12}`)),
			models.AI("It is 18°C with light rain: take an umbrella."),
		)
	}
	msgs = append(msgs, models.Human("And tomorrow?"))
	for i := range msgs {
		msgs[i].ID = fmt.Sprintf("m%03d", i)
	}
	return msgs[:200]
}

// stubTransport answers every request with one canned body: the
// provider's exchange without a network or a server.
type stubTransport struct{ body, requestIDHeader string }

func (s stubTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	h := http.Header{"Content-Type": {"application/json"}, s.requestIDHeader: {"req_stub"}}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(s.body)), Request: r}, nil
}

const (
	anthropicBody = `{"id":"msg_stub","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"Tomorrow looks dry: 21°C and sunny."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":9000,"output_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`
	openaiBody    = `{"id":"chatcmpl-stub","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"Tomorrow looks dry: 21°C and sunny."},"finish_reason":"stop"}],"usage":{"prompt_tokens":9000,"completion_tokens":12,"total_tokens":9012,"prompt_tokens_details":{"cached_tokens":0}}}`
)

// BenchmarkModelNode200 measures what a model node costs around a
// provider call for a 200-message history: render, the SDK's exchange,
// parse, and the state update (AddMessages into MessagesState) in a
// one-node graph. "localprovider" answers over HTTP from an in-process
// double; "stub" answers from a canned body in the transport, to isolate
// our overhead (and the SDK's) from the HTTP exchange.
func BenchmarkModelNode200(b *testing.B) {
	_, ts := localprovider.NewTestServer(localprovider.Config{})
	b.Cleanup(ts.Close)
	type variant struct {
		name  string
		model func() (models.ChatModel, error)
	}
	variants := []variant{
		{"anthropic/localprovider", func() (models.ChatModel, error) {
			return anthropic.New(anthropic.Config{APIKey: "k", BaseURL: ts.URL, Model: "claude-test", HTTPClient: ts.Client()})
		}},
		{"anthropic/stub", func() (models.ChatModel, error) {
			return anthropic.New(anthropic.Config{APIKey: "k", BaseURL: "http://stub/", Model: "claude-test", HTTPClient: &http.Client{Transport: stubTransport{anthropicBody, "Request-Id"}}})
		}},
		{"openai/localprovider", func() (models.ChatModel, error) {
			return openai.New(openai.Config{APIKey: "k", BaseURL: ts.URL + "/v1/", Model: "gpt-test", HTTPClient: ts.Client()})
		}},
		{"openai/stub", func() (models.ChatModel, error) {
			return openai.New(openai.Config{APIKey: "k", BaseURL: "http://stub/v1/", Model: "gpt-test", HTTPClient: &http.Client{Transport: stubTransport{openaiBody, "X-Request-Id"}}})
		}},
	}
	history := history200()
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			m, err := v.model()
			if err != nil {
				b.Fatal(err)
			}
			g := engine.NewStateGraph[models.MessagesState]()
			g.AddNode("agent", func(ctx context.Context, s models.MessagesState) (engine.Output, error) {
				reply, err := m.Generate(ctx, s.Messages, nil)
				if err != nil {
					return nil, err
				}
				return engine.Update{"messages": reply}, nil
			})
			g.AddEdge(engine.Start, "agent")
			graph, err := g.Compile(engine.CompileOptions{})
			if err != nil {
				b.Fatal(err)
			}
			in := engine.Update{"messages": history}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				out, err := graph.Invoke(context.Background(), in, nil)
				if err != nil {
					b.Fatal(err)
				}
				if len(out.Messages) != 201 {
					b.Fatalf("%d messages", len(out.Messages))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/call")
		})
	}
}
