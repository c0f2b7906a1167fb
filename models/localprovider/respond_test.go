package localprovider_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/superstep-dev/superstep/models/localprovider"
)

// TestRespondAnswersBetweenScriptAndOffline checks the order in which a
// request is answered: its scripted turn first, then Config.Respond,
// then (when Respond declines) the offline model; count_tokens never
// reaches Respond.
func TestRespondAnswersBetweenScriptAndOffline(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	respond := func(r localprovider.Request) (localprovider.Turn, bool) {
		calls.Add(1)
		if r.Anthropic == nil || r.Count {
			t.Errorf("Respond got %+v", r)
			return localprovider.Turn{}, false
		}
		last := r.Anthropic.Messages[len(r.Anthropic.Messages)-1].Content[0].Text
		if last != "answer me" {
			return localprovider.Turn{}, false
		}
		return localprovider.Turn{Chunks: []string{"from ", "Respond"}, ToolCalls: []localprovider.ToolCall{{Name: "get_weather", Args: `{"city":"Oslo"}`}}}, true
	}
	s, c := setupAnthropic(t, localprovider.Config{Respond: respond})
	s.Script(localprovider.Turn{Text: "scripted"})

	p := userParams("answer me")
	p.Tools = append(p.Tools, weatherTool)
	msg, err := c.Messages.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "scripted" || calls.Load() != 0 {
		t.Fatalf("a scripted turn must come first: %s (Respond called %d times)", msg.RawJSON(), calls.Load())
	}

	stream := c.Messages.NewStreaming(t.Context(), p)
	var deltas []string
	for stream.Next() {
		if d := stream.Current().Delta; d.Text != "" {
			deltas = append(deltas, d.Text)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(deltas, "|") != "from |Respond" || calls.Load() != 1 {
		t.Fatalf("streamed %q (Respond called %d times)", deltas, calls.Load())
	}
	if msg, err = c.Messages.New(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 2 || msg.Content[1].Name != "get_weather" || string(msg.Content[1].Input) != `{"city":"Oslo"}` || msg.StopReason != "tool_use" {
		t.Fatalf("Respond's tool call = %s", msg.RawJSON())
	}

	if msg, err = c.Messages.New(t.Context(), userParams("something else")); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(msg.Content[0].Text, localprovider.OfflineLabel) || calls.Load() != 3 {
		t.Fatalf("a declined request goes to the offline model: %s (Respond called %d times)", msg.RawJSON(), calls.Load())
	}

	if _, err := c.Messages.CountTokens(t.Context(), anthropic.MessageCountTokensParams{
		Model:    "claude-test",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("answer me"))},
	}); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 3 {
		t.Fatalf("count_tokens reached Respond (%d calls)", calls.Load())
	}
}

// TestRespondSeesOpenAIRequests checks that a responder reads Chat
// Completions requests too (Request.OpenAI).
func TestRespondSeesOpenAIRequests(t *testing.T) {
	t.Parallel()
	_, c := setupOpenAI(t, localprovider.Config{Respond: func(r localprovider.Request) (localprovider.Turn, bool) {
		if r.OpenAI == nil || r.API != localprovider.OpenAI {
			return localprovider.Turn{}, false
		}
		return localprovider.Turn{Text: "seen " + r.OpenAI.Messages[0].Text()}, true
	}})
	res, err := c.Chat.Completions.New(t.Context(), chatParams("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Choices[0].Message.Content; got != "seen hello" {
		t.Fatalf("reply = %q", got)
	}
}
