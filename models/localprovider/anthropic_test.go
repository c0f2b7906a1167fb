package localprovider_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/superstep-dev/superstep/models/localprovider"
)

const testKey = "sk-ant-test-secret"

// setupAnthropic starts a double and an Anthropic client on it.
func setupAnthropic(t *testing.T, cfg localprovider.Config, opts ...option.RequestOption) (*localprovider.Server, anthropic.Client) {
	t.Helper()
	s, ts := localprovider.NewTestServer(cfg)
	t.Cleanup(ts.Close)
	base := []option.RequestOption{
		option.WithoutEnvironmentDefaults(), option.WithBaseURL(ts.URL), option.WithAPIKey(testKey),
		option.WithHTTPClient(ts.Client()), option.WithMaxRetries(0),
	}
	return s, anthropic.NewClient(append(base, opts...)...)
}

func userParams(text string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model: "claude-test", MaxTokens: 256,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))},
	}
}

var weatherTool = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
	Name:        "get_weather",
	InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"}},
}}

func TestAnthropicInvoke(t *testing.T) {
	t.Parallel()
	s, c := setupAnthropic(t, localprovider.Config{})
	s.Script(localprovider.Turn{Text: "Hello there."})
	msg, err := c.Messages.New(t.Context(), userParams("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "Hello there." || msg.StopReason != anthropic.StopReasonEndTurn {
		t.Fatalf("message = %s", msg.RawJSON())
	}
	if msg.Usage.InputTokens == 0 || msg.Usage.OutputTokens != 3 || !msg.Usage.JSON.CacheReadInputTokens.Valid() {
		t.Fatalf("usage = %s", msg.Usage.RawJSON())
	}
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Anthropic == nil || reqs[0].Anthropic.Messages[0].Content[0].Text != "hi" {
		t.Fatalf("requests = %+v", reqs)
	}
	if reqs[0].Key != localprovider.Fingerprint(testKey) {
		t.Fatalf("key recorded as %q", reqs[0].Key)
	}
	for name, values := range reqs[0].Header {
		if strings.Contains(strings.Join(values, " "), testKey) {
			t.Fatalf("header %s keeps the API key", name)
		}
	}
	if strings.Contains(string(msg.RawJSON()), testKey) {
		t.Fatal("the API key is echoed")
	}
}

func TestAnthropicStream(t *testing.T) {
	t.Parallel()
	s, c := setupAnthropic(t, localprovider.Config{})
	s.Script(localprovider.Turn{Chunks: []string{"Hel", "lo", "!"}, Usage: &localprovider.Usage{InputTokens: 10, OutputTokens: 7}})
	stream := c.Messages.NewStreaming(t.Context(), userParams("hi"))
	var acc anthropic.Message
	var types []string
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		if err := acc.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	want := "message_start content_block_start content_block_delta content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(types, " "); got != want {
		t.Fatalf("events = %s, want %s", got, want)
	}
	if acc.Content[0].Text != "Hello!" || acc.StopReason != anthropic.StopReasonEndTurn || acc.Usage.InputTokens != 10 || acc.Usage.OutputTokens != 7 {
		t.Fatalf("accumulated = %s", acc.RawJSON())
	}
}

func TestAnthropicToolCalls(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		calls []localprovider.ToolCall
	}{
		{"single", []localprovider.ToolCall{{Name: "get_weather", Args: `{"city":"Paris"}`}}},
		{"parallel", []localprovider.ToolCall{{Name: "get_weather", Args: `{"city":"Paris"}`}, {ID: "toolu_given", Name: "get_weather", ArgChunks: []string{`{"ci`, `ty":`, `"Rome"}`}}}},
		{"malformed", []localprovider.ToolCall{{Name: "get_weather", Args: `{"city": "Par`}}},
	}
	for _, tc := range cases {
		for _, streamed := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "/json", true: "/stream"}[streamed], func(t *testing.T) {
				t.Parallel()
				s, c := setupAnthropic(t, localprovider.Config{})
				s.Script(localprovider.Turn{Text: "Checking.", ToolCalls: tc.calls})
				p := userParams("weather?")
				p.Tools = []anthropic.ToolUnionParam{weatherTool}
				var msg *anthropic.Message
				fragments := map[int64]string{} // partial_json by block index, as sent
				if streamed {
					msg = &anthropic.Message{}
					st := c.Messages.NewStreaming(t.Context(), p)
					for st.Next() {
						ev := st.Current()
						if d, ok := ev.AsAny().(anthropic.ContentBlockDeltaEvent); ok {
							fragments[ev.Index] += d.Delta.PartialJSON
						}
						if err := msg.Accumulate(ev); err != nil {
							t.Fatal(err)
						}
					}
					if err := st.Err(); err != nil {
						t.Fatal(err)
					}
				} else {
					var err error
					if msg, err = c.Messages.New(t.Context(), p); err != nil {
						t.Fatal(err)
					}
				}
				if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 1+len(tc.calls) {
					t.Fatalf("message = %s", msg.RawJSON())
				}
				for i, call := range tc.calls {
					use := msg.Content[i+1].AsToolUse()
					args := call.Args
					if args == "" {
						args = strings.Join(call.ArgChunks, "")
					}
					if streamed && fragments[int64(i+1)] != args {
						t.Errorf("tool_use %d: partial_json = %s, want %s", i, fragments[int64(i+1)], args)
					}
					switch {
					case !json.Valid([]byte(args)) && streamed:
						// The SDK's accumulator empties input that is not JSON
						// at content_block_stop; the fragments above carry it.
						args = "{}"
					case !json.Valid([]byte(args)):
						// A JSON body must stay JSON: malformed input comes as a string.
						b, _ := json.Marshal(args)
						args = string(b)
					}
					if use.Name != call.Name || string(use.Input) != args || use.ID == "" || (call.ID != "" && use.ID != call.ID) {
						t.Errorf("tool_use %d = %s %s %s, want %s", i, use.ID, use.Name, use.Input, args)
					}
				}
			})
		}
	}
}

func TestAnthropicRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	s, c := setupAnthropic(t, localprovider.Config{}, option.WithMaxRetries(2))
	s.Script(localprovider.Turn{Fault: &localprovider.Fault{Status: 429, RetryAfterMs: "1"}},
		localprovider.Turn{Fault: &localprovider.Fault{Status: 529, RetryAfter: "0"}},
		localprovider.Turn{Text: "ok"})
	msg, err := c.Messages.New(t.Context(), userParams("hi"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	if msg.Content[0].Text != "ok" || len(reqs) != 3 {
		t.Fatalf("got %q after %d requests", msg.Content[0].Text, len(reqs))
	}
	for i, r := range reqs {
		if want := []string{"0", "1", "2"}[i]; r.RetryCount() != want {
			t.Errorf("request %d: X-Stainless-Retry-Count = %q, want %q", i, r.RetryCount(), want)
		}
	}
}

func TestAnthropicLongRetryAfterHoldsTheRetry(t *testing.T) {
	t.Parallel()
	// Without the header the SDK would retry after at most 0.5 s; an hour's
	// retry-after keeps it waiting until the caller's deadline.
	s, c := setupAnthropic(t, localprovider.Config{}, option.WithMaxRetries(1))
	s.Script(localprovider.Turn{Fault: &localprovider.Fault{Status: 429, RetryAfter: "3600"}}, localprovider.Turn{Text: "too soon"})
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	_, err := c.Messages.New(ctx, userParams("hi"))
	if !errors.Is(err, context.DeadlineExceeded) || len(s.Requests()) != 1 {
		t.Fatalf("err = %v after %d requests, want the deadline after 1", err, len(s.Requests()))
	}
}

func TestAnthropicErrorStatuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		typ    string
	}{{429, "rate_limit_error"}, {529, "overloaded_error"}, {500, "api_error"}} {
		s, c := setupAnthropic(t, localprovider.Config{})
		s.Script(localprovider.Turn{Fault: &localprovider.Fault{Status: tc.status, RetryAfter: "1"}})
		_, err := c.Messages.New(t.Context(), userParams("hi"))
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status || string(apiErr.Type()) != tc.typ || apiErr.RequestID == "" {
			t.Errorf("%d: err = %v", tc.status, err)
		}
	}
}

func TestAnthropicMidStreamError(t *testing.T) {
	t.Parallel()
	s, c := setupAnthropic(t, localprovider.Config{})
	s.Script(localprovider.Turn{Chunks: []string{"one ", "two ", "three"}, Fault: &localprovider.Fault{Midstream: localprovider.ErrorEvent, AfterDeltas: 2}})
	st := c.Messages.NewStreaming(t.Context(), userParams("hi"))
	var acc anthropic.Message
	for st.Next() {
		_ = acc.Accumulate(st.Current())
	}
	var apiErr *anthropic.Error
	if !errors.As(st.Err(), &apiErr) || string(apiErr.Type()) != "overloaded_error" {
		t.Fatalf("stream error = %v", st.Err())
	}
	if acc.Content[0].Text != "one two " {
		t.Fatalf("text before the error = %q", acc.Content[0].Text)
	}
}

func TestAnthropicDroppedConnection(t *testing.T) {
	t.Parallel()
	s, c := setupAnthropic(t, localprovider.Config{})
	s.Script(localprovider.Turn{Chunks: []string{"one ", "two"}, Fault: &localprovider.Fault{Midstream: localprovider.DropConnection, AfterDeltas: 1}})
	st := c.Messages.NewStreaming(t.Context(), userParams("hi"))
	n := 0
	for st.Next() {
		n++
	}
	if st.Err() == nil || n == 0 {
		t.Fatalf("after %d events, err = %v; want a broken stream", n, st.Err())
	}
}

func TestAnthropicSlowFirstByteCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	s, c := setupAnthropic(t, localprovider.Config{OnRequest: func(localprovider.Request) { cancel() }})
	s.Script(localprovider.Turn{Text: "late", Fault: &localprovider.Fault{FirstByteDelay: time.Hour}})
	_, err := c.Messages.New(ctx, userParams("hi"))
	if !errors.Is(err, context.Canceled) || len(s.Requests()) != 1 {
		t.Fatalf("err = %v after %d requests", err, len(s.Requests()))
	}
}

func TestAnthropicValidation(t *testing.T) {
	t.Parallel()
	use := anthropic.NewToolUseBlock("toolu_1", map[string]any{"city": "Paris"}, "get_weather")
	result := anthropic.NewToolResultBlock("toolu_2", "18C", false)
	marked := func(text string) anthropic.ContentBlockParamUnion {
		return anthropic.ContentBlockParamUnion{OfText: &anthropic.TextBlockParam{Text: text, CacheControl: anthropic.NewCacheControlEphemeralParam()}}
	}
	cases := []struct {
		name   string
		params func(p *anthropic.MessageNewParams)
		opts   []option.RequestOption
		status int
		want   string
	}{
		{"no max_tokens", nil, []option.RequestOption{option.WithJSONDel("max_tokens")}, 400, "max_tokens: Field required"},
		{"no model", func(p *anthropic.MessageNewParams) { p.Model = "" }, nil, 400, "model: Field required"},
		{"no messages", func(p *anthropic.MessageNewParams) { p.Messages = nil }, nil, 400, "at least one message"},
		{"no version", nil, []option.RequestOption{option.WithHeaderDel("anthropic-version")}, 400, "anthropic-version"},
		{"unknown version", nil, []option.RequestOption{option.WithHeader("anthropic-version", "1999-01-01")}, 400, "invalid version"},
		{"no key", nil, []option.RequestOption{option.WithHeaderDel("x-api-key"), option.WithHeaderDel("authorization")}, 401, "x-api-key"},
		{"unmatched tool_result", func(p *anthropic.MessageNewParams) {
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(use), anthropic.NewUserMessage(result))
		}, nil, 400, "unexpected `tool_use_id`"},
		{"unanswered tool_use", func(p *anthropic.MessageNewParams) {
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(use), anthropic.NewUserMessage(anthropic.NewTextBlock("and?")))
		}, nil, 400, "without `tool_result`"},
		{"text before tool_result", func(p *anthropic.MessageNewParams) {
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(use), anthropic.NewUserMessage(anthropic.NewTextBlock("also:"), anthropic.NewToolResultBlock("toolu_1", "18C", false)))
		}, nil, 400, "`tool_result` blocks must come first"},
		{"text before tool_result in a merged turn", func(p *anthropic.MessageNewParams) {
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(use), anthropic.NewUserMessage(anthropic.NewTextBlock("also:")), anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_1", "18C", false)))
		}, nil, 400, "messages.3.content.0: `tool_result` blocks must come first"},
		{"five markers", func(p *anthropic.MessageNewParams) {
			p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(marked("a"), marked("b"), marked("c"), marked("d"), marked("e"))}
		}, nil, 400, "A maximum of 4 blocks with cache_control"},
		{"four markers and automatic", func(p *anthropic.MessageNewParams) {
			p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(marked("a"), marked("b"), marked("c"), marked("d"))}
			p.CacheControl = anthropic.NewCacheControlEphemeralParam()
		}, nil, 400, "Found 5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, c := setupAnthropic(t, localprovider.Config{})
			p := userParams("hi")
			if tc.params != nil {
				tc.params(&p)
			}
			_, err := c.Messages.New(t.Context(), p, tc.opts...)
			var apiErr *anthropic.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status || !strings.Contains(apiErr.Error(), tc.want) {
				t.Fatalf("err = %v, want %d with %q", err, tc.status, tc.want)
			}
		})
	}
	t.Run("matched tool_result passes", func(t *testing.T) {
		t.Parallel()
		_, c := setupAnthropic(t, localprovider.Config{})
		p := userParams("weather?")
		p.Messages = append(p.Messages, anthropic.NewAssistantMessage(use), anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_1", "18C", false)), anthropic.NewUserMessage(anthropic.NewTextBlock("thanks")))
		if _, err := c.Messages.New(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	})
}

func TestAnthropicCountTokens(t *testing.T) {
	t.Parallel()
	s, c := setupAnthropic(t, localprovider.Config{Tokens: func(b []byte) int { return len(b) }})
	res, err := c.Messages.CountTokens(t.Context(), anthropic.MessageCountTokensParams{
		Model:    "claude-test",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(`{"text":"hi","type":"text"}`); res.InputTokens != int64(want) {
		t.Fatalf("input_tokens = %d, want %d (the block's bytes)", res.InputTokens, want)
	}
	if r := s.Requests()[0]; !r.Count {
		t.Fatalf("request not marked as a count: %+v", r)
	}
}

func TestAnthropicScriptPerKey(t *testing.T) {
	t.Parallel()
	s, a := setupAnthropic(t, localprovider.Config{})
	s.ScriptKey(testKey, localprovider.Turn{Text: "for a"})
	s.ScriptKey("other-key", localprovider.Turn{Text: "for b"})
	got, err := a.Messages.New(t.Context(), userParams("hi"), option.WithAPIKey("other-key"))
	if err != nil || got.Content[0].Text != "for b" {
		t.Fatalf("other key got %v, %v", got, err)
	}
	if got, err = a.Messages.New(t.Context(), userParams("hi")); err != nil || got.Content[0].Text != "for a" {
		t.Fatalf("test key got %v, %v", got, err)
	}
}

func TestAnthropicOffline(t *testing.T) {
	t.Parallel()
	_, c := setupAnthropic(t, localprovider.Config{})
	p := userParams(`Please call get_weather for "Paris".`)
	p.Tools = []anthropic.ToolUnionParam{weatherTool}
	msg, err := c.Messages.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	use := msg.Content[len(msg.Content)-1].AsToolUse()
	if msg.StopReason != anthropic.StopReasonToolUse || use.Name != "get_weather" || string(use.Input) != `{"city":"Paris"}` {
		t.Fatalf("offline reply = %s", msg.RawJSON())
	}
	p.Messages = append(p.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "18C and sunny", false)))
	msg, err = c.Messages.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if text := msg.Content[0].Text; !strings.HasPrefix(text, localprovider.OfflineLabel) || !strings.Contains(text, "18C and sunny") {
		t.Fatalf("offline summary = %q", text)
	}
	msg, err = c.Messages.New(t.Context(), userParams("just chatting"))
	if err != nil || !strings.Contains(msg.Content[0].Text, `"just chatting"`) {
		t.Fatalf("offline echo = %v, %v", msg, err)
	}
}

// manualClock is a Clock whose timers fire when the test says so.
type manualClock struct{ fire chan time.Time }

func (c manualClock) Now() time.Time                       { return time.Unix(1_700_000_000, 0) }
func (c manualClock) After(time.Duration) <-chan time.Time { return c.fire }

func TestAnthropicSlowFirstByteOnTheInjectedClock(t *testing.T) {
	t.Parallel()
	clock := manualClock{fire: make(chan time.Time, 1)}
	s, c := setupAnthropic(t, localprovider.Config{Clock: clock, OnRequest: func(localprovider.Request) { clock.fire <- clock.Now() }})
	s.Script(localprovider.Turn{Text: "on time", Fault: &localprovider.Fault{FirstByteDelay: time.Hour}})
	msg, err := c.Messages.New(t.Context(), userParams("hi"))
	if err != nil || msg.Content[0].Text != "on time" {
		t.Fatalf("got %v, %v", msg, err)
	}
	if got := s.Requests()[0].Time; !got.Equal(clock.Now()) {
		t.Fatalf("request time = %v, want the injected clock's", got)
	}
}
