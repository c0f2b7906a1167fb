package localprovider_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/superstep-dev/superstep/models/localprovider"
)

// setupOpenAI starts a double and an OpenAI client on it.
func setupOpenAI(t *testing.T, cfg localprovider.Config, opts ...option.RequestOption) (*localprovider.Server, openai.Client) {
	t.Helper()
	s, ts := localprovider.NewTestServer(cfg)
	t.Cleanup(ts.Close)
	base := []option.RequestOption{
		option.WithBaseURL(ts.URL + "/v1/"), option.WithAPIKey(testKey),
		option.WithHTTPClient(ts.Client()), option.WithMaxRetries(0),
	}
	return s, openai.NewClient(append(base, opts...)...)
}

func chatParams(text string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: "gpt-test", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}}
}

var weatherFunction = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name:       "get_weather",
	Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
})

func TestOpenAIInvoke(t *testing.T) {
	t.Parallel()
	s, c := setupOpenAI(t, localprovider.Config{})
	s.Script(localprovider.Turn{Text: "Hello there.", Usage: &localprovider.Usage{InputTokens: 5, CacheReadInputTokens: 1024, OutputTokens: 3}})
	res, err := c.Chat.Completions.New(t.Context(), chatParams("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].Message.Content != "Hello there." || res.Choices[0].FinishReason != "stop" {
		t.Fatalf("completion = %s", res.RawJSON())
	}
	if u := res.Usage; u.PromptTokens != 1029 || u.PromptTokensDetails.CachedTokens != 1024 || u.CompletionTokens != 3 || u.TotalTokens != 1032 {
		t.Fatalf("usage = %s", u.RawJSON())
	}
	r := s.Requests()[0]
	if r.OpenAI == nil || r.OpenAI.Messages[0].Text() != "hi" || r.Header.Get("Authorization") != "[redacted]" {
		t.Fatalf("request = %+v", r)
	}
}

func TestOpenAIStream(t *testing.T) {
	t.Parallel()
	s, c := setupOpenAI(t, localprovider.Config{})
	s.Script(localprovider.Turn{Chunks: []string{"Hel", "lo", "!"}, Usage: &localprovider.Usage{InputTokens: 10, OutputTokens: 7}})
	p := chatParams("hi")
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	st := c.Chat.Completions.NewStreaming(t.Context(), p)
	acc := openai.ChatCompletionAccumulator{}
	var content string
	usageChunks := 0
	for st.Next() {
		ch := st.Current()
		acc.AddChunk(ch)
		if len(ch.Choices) == 0 {
			usageChunks++
		}
		if text, ok := acc.JustFinishedContent(); ok {
			content = text
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if content != "Hello!" || acc.Choices[0].FinishReason != "stop" || usageChunks != 1 || acc.Usage.PromptTokens != 10 || acc.Usage.CompletionTokens != 7 {
		t.Fatalf("accumulated %q, %d usage chunks, completion %s", content, usageChunks, acc.RawJSON())
	}
}

func TestOpenAIToolCalls(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		calls []localprovider.ToolCall
	}{
		{"single", []localprovider.ToolCall{{Name: "get_weather", Args: `{"city":"Paris"}`}}},
		{"parallel", []localprovider.ToolCall{{Name: "get_weather", Args: `{"city":"Paris"}`}, {ID: "call_given", Name: "get_weather", ArgChunks: []string{`{"ci`, `ty":`, `"Rome"}`}}}},
		{"malformed", []localprovider.ToolCall{{Name: "get_weather", Args: `{"city": "Par`}}},
	}
	for _, tc := range cases {
		for _, streamed := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "/json", true: "/stream"}[streamed], func(t *testing.T) {
				t.Parallel()
				s, c := setupOpenAI(t, localprovider.Config{})
				s.Script(localprovider.Turn{ToolCalls: tc.calls})
				p := chatParams("weather?")
				p.Tools = []openai.ChatCompletionToolUnionParam{weatherFunction}
				type call struct{ id, name, args string }
				var got []call
				var finish string
				if streamed {
					st := c.Chat.Completions.NewStreaming(t.Context(), p)
					acc := openai.ChatCompletionAccumulator{}
					for st.Next() {
						acc.AddChunk(st.Current())
						if tc, ok := acc.JustFinishedToolCall(); ok {
							got = append(got, call{tc.ID, tc.Name, tc.Arguments})
						}
					}
					if err := st.Err(); err != nil {
						t.Fatal(err)
					}
					finish = acc.Choices[0].FinishReason
				} else {
					res, err := c.Chat.Completions.New(t.Context(), p)
					if err != nil {
						t.Fatal(err)
					}
					for _, tc := range res.Choices[0].Message.ToolCalls {
						got = append(got, call{tc.ID, tc.Function.Name, tc.Function.Arguments})
					}
					finish = res.Choices[0].FinishReason
				}
				if finish != "tool_calls" || len(got) != len(tc.calls) {
					t.Fatalf("finish %q, calls %+v", finish, got)
				}
				for i, want := range tc.calls {
					args := want.Args
					if args == "" {
						args = strings.Join(want.ArgChunks, "")
					}
					if got[i].name != want.Name || got[i].args != args || got[i].id == "" || (want.ID != "" && got[i].id != want.ID) {
						t.Errorf("call %d = %+v, want %s %s", i, got[i], want.Name, args)
					}
				}
			})
		}
	}
}

func TestOpenAIRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	s, c := setupOpenAI(t, localprovider.Config{}, option.WithMaxRetries(2))
	s.Script(localprovider.Turn{Fault: &localprovider.Fault{Status: 429, RetryAfterMs: "1"}},
		localprovider.Turn{Fault: &localprovider.Fault{Status: 500, RetryAfter: "0"}},
		localprovider.Turn{Text: "ok"})
	res, err := c.Chat.Completions.New(t.Context(), chatParams("hi"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	if res.Choices[0].Message.Content != "ok" || len(reqs) != 3 {
		t.Fatalf("got %q after %d requests", res.Choices[0].Message.Content, len(reqs))
	}
	for i, r := range reqs {
		if want := []string{"0", "1", "2"}[i]; r.RetryCount() != want {
			t.Errorf("request %d: X-Stainless-Retry-Count = %q, want %q", i, r.RetryCount(), want)
		}
	}
}

func TestOpenAILongRetryAfterIsNotCutShort(t *testing.T) {
	t.Parallel()
	// openai-go does not wait longer than its MaxRetryDelay: an hour's
	// retry-after makes it give up with the 429 at once, where ignoring the
	// header would have retried after its 0.5 s backoff.
	s, c := setupOpenAI(t, localprovider.Config{}, option.WithMaxRetries(1))
	s.Script(localprovider.Turn{Fault: &localprovider.Fault{Status: 429, RetryAfter: "3600"}}, localprovider.Turn{Text: "too soon"})
	_, err := c.Chat.Completions.New(t.Context(), chatParams("hi"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || len(s.Requests()) != 1 {
		t.Fatalf("err = %v after %d requests, want the 429 after 1", err, len(s.Requests()))
	}
}

func TestOpenAIErrorStatuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status    int
		typ, code string
	}{{429, "requests", "rate_limit_exceeded"}, {529, "server_error", ""}, {500, "server_error", ""}} {
		s, c := setupOpenAI(t, localprovider.Config{})
		s.Script(localprovider.Turn{Fault: &localprovider.Fault{Status: tc.status}})
		_, err := c.Chat.Completions.New(t.Context(), chatParams("hi"))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status || apiErr.Type != tc.typ || apiErr.Code != tc.code {
			t.Errorf("%d: err = %v", tc.status, err)
		}
	}
}

func TestOpenAIMidStreamError(t *testing.T) {
	t.Parallel()
	s, c := setupOpenAI(t, localprovider.Config{})
	s.Script(localprovider.Turn{Chunks: []string{"one ", "two ", "three"}, Fault: &localprovider.Fault{Midstream: localprovider.ErrorEvent, AfterDeltas: 2}})
	st := c.Chat.Completions.NewStreaming(t.Context(), chatParams("hi"))
	acc := openai.ChatCompletionAccumulator{}
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if st.Err() == nil || !strings.Contains(st.Err().Error(), "server_error") {
		t.Fatalf("stream error = %v", st.Err())
	}
	if got := acc.Choices[0].Message.Content; got != "one two " {
		t.Fatalf("text before the error = %q", got)
	}
}

func TestOpenAIDroppedConnection(t *testing.T) {
	t.Parallel()
	s, c := setupOpenAI(t, localprovider.Config{})
	s.Script(localprovider.Turn{Chunks: []string{"one ", "two"}, Fault: &localprovider.Fault{Midstream: localprovider.DropConnection, AfterDeltas: 1}})
	st := c.Chat.Completions.NewStreaming(t.Context(), chatParams("hi"))
	n := 0
	for st.Next() {
		n++
	}
	if st.Err() == nil || n == 0 {
		t.Fatalf("after %d chunks, err = %v; want a broken stream", n, st.Err())
	}
}

func TestOpenAISlowFirstByteCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	s, c := setupOpenAI(t, localprovider.Config{OnRequest: func(localprovider.Request) { cancel() }})
	s.Script(localprovider.Turn{Text: "late", Fault: &localprovider.Fault{FirstByteDelay: time.Hour}})
	st := c.Chat.Completions.NewStreaming(ctx, chatParams("hi"))
	for st.Next() {
		t.Fatal("a chunk arrived before the first byte was due")
	}
	if !errors.Is(st.Err(), context.Canceled) || len(s.Requests()) != 1 {
		t.Fatalf("err = %v after %d requests", st.Err(), len(s.Requests()))
	}
}

func TestOpenAIValidation(t *testing.T) {
	t.Parallel()
	assistantCall := openai.ChatCompletionMessageParamUnion{OfAssistant: &openai.ChatCompletionAssistantMessageParam{
		ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
			ID: "call_1", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "get_weather", Arguments: `{"city":"Paris"}`},
		}}},
	}}
	cases := []struct {
		name   string
		params func(p *openai.ChatCompletionNewParams)
		opts   []option.RequestOption
		status int
		want   string
	}{
		{"no model", func(p *openai.ChatCompletionNewParams) { p.Model = "" }, nil, 400, "you must provide a model"},
		{"no messages", func(p *openai.ChatCompletionNewParams) { p.Messages = nil }, nil, 400, "too short"},
		{"no key", nil, []option.RequestOption{option.WithHeaderDel("authorization")}, 401, "didn't provide an API key"},
		{"stray tool message", func(p *openai.ChatCompletionNewParams) {
			p.Messages = append(p.Messages, openai.ToolMessage("18C", "call_9"))
		}, nil, 400, "must be a response to a preceeding message"},
		{"unanswered tool call", func(p *openai.ChatCompletionNewParams) {
			p.Messages = append(p.Messages, assistantCall, openai.UserMessage("and?"))
		}, nil, 400, "did not have response messages: call_1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, c := setupOpenAI(t, localprovider.Config{})
			p := chatParams("hi")
			if tc.params != nil {
				tc.params(&p)
			}
			_, err := c.Chat.Completions.New(t.Context(), p, tc.opts...)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status || !strings.Contains(apiErr.Message, tc.want) {
				t.Fatalf("err = %v, want %d with %q", err, tc.status, tc.want)
			}
		})
	}
	t.Run("answered tool call passes", func(t *testing.T) {
		t.Parallel()
		_, c := setupOpenAI(t, localprovider.Config{})
		p := chatParams("weather?")
		p.Messages = append(p.Messages, assistantCall, openai.ToolMessage("18C", "call_1"))
		if _, err := c.Chat.Completions.New(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	})
}

func TestOpenAIOffline(t *testing.T) {
	t.Parallel()
	_, c := setupOpenAI(t, localprovider.Config{})
	p := chatParams(`Please call get_weather for "Paris".`)
	p.Tools = []openai.ChatCompletionToolUnionParam{weatherFunction}
	res, err := c.Chat.Completions.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	msg := res.Choices[0].Message
	if len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "get_weather" || msg.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` {
		t.Fatalf("offline reply = %s", res.RawJSON())
	}
	p.Messages = append(p.Messages, msg.ToParam(), openai.ToolMessage("18C and sunny", msg.ToolCalls[0].ID))
	if res, err = c.Chat.Completions.New(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if text := res.Choices[0].Message.Content; !strings.HasPrefix(text, localprovider.OfflineLabel) || !strings.Contains(text, "18C and sunny") {
		t.Fatalf("offline summary = %q", text)
	}
}
