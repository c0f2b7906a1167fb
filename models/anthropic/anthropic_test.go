package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/anthropic"
	"github.com/superstep-dev/superstep/models/localprovider"
)

const testKey = "sk-ant-api03-SECRET-do-not-leak"

// setup starts a double and a model on it.
func setup(t *testing.T, cfg localprovider.Config, hooks models.Hooks) (*localprovider.Server, *anthropic.Model) {
	t.Helper()
	s, ts := localprovider.NewTestServer(cfg)
	t.Cleanup(ts.Close)
	m, err := anthropic.New(anthropic.Config{APIKey: testKey, BaseURL: ts.URL, Model: "claude-test", HTTPClient: ts.Client(), Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	return s, m
}

var weather = models.ToolSpec{Name: "get_weather", Description: "Weather in a city.", Parameters: map[string]any{
	"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"},
}}

// comparable drops what differs between two calls for the same answer:
// the message id and the request id.
func comparable(m models.Message) models.Message {
	m.ID = ""
	md := map[string]any{}
	for k, v := range m.ResponseMetadata {
		if k != "id" && k != "request_id" {
			md[k] = v
		}
	}
	m.ResponseMetadata = md
	return m
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	var seen *models.Request
	var got *models.Response
	s, m := setup(t, localprovider.Config{}, models.Hooks{
		BeforeCall: func(_ context.Context, r *models.Request) error { seen = r; return nil },
		AfterCall:  func(_ context.Context, _ *models.Request, r *models.Response) { got = r },
	})
	s.Script(localprovider.Turn{Text: "Hello there.", Usage: &localprovider.Usage{InputTokens: 5, OutputTokens: 3, CacheReadInputTokens: 100, CacheCreationInputTokens: 20}})
	temp := 0.2
	reply, err := m.Generate(t.Context(), []models.Message{models.System("Be brief."), models.Human("hi")}, &models.CallOptions{Temperature: &temp, MaxTokens: 99, Stop: []string{"END"}})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Type != models.TypeAI || reply.Text() != "Hello there." || reply.ID != "msg_local_000001" {
		t.Fatalf("reply %+v", reply)
	}
	u := reply.Usage
	if u == nil || u.InputTokens != 125 || u.OutputTokens != 3 || u.TotalTokens != 128 || *u.InputTokenDetails.CacheRead != 100 || *u.InputTokenDetails.CacheCreation != 20 {
		t.Fatalf("usage %+v", u)
	}
	md := reply.ResponseMetadata
	if md["model_name"] != "claude-test" || md["stop_reason"] != "end_turn" || md["request_id"] != "req_local_000001" {
		t.Fatalf("response metadata %v", md)
	}
	req := s.Requests()[0].Anthropic
	if req.System[0].Text != "Be brief." || *req.MaxTokens != 99 || len(req.Messages) != 1 {
		t.Fatalf("request %+v", req)
	}
	var body map[string]any
	if err := json.Unmarshal(s.Requests()[0].Body, &body); err != nil || body["temperature"] != 0.2 || fmt.Sprint(body["stop_sequences"]) != "[END]" {
		t.Fatalf("body %s", s.Requests()[0].Body)
	}
	if _, ok := seen.Params.(*sdk.MessageNewParams); !ok || seen.Stream || got.RequestID != "req_local_000001" || got.Usage != reply.Usage || got.Err != nil {
		t.Fatalf("hooks saw %+v and %+v", seen, got)
	}
}

// A hook changes the rendered request before it is sent, or refuses it.
func TestHooksChangeOrRefuse(t *testing.T) {
	t.Parallel()
	refuse := errors.New("budget exceeded")
	s, m := setup(t, localprovider.Config{}, models.Hooks{BeforeCall: func(_ context.Context, r *models.Request) error {
		if r.Options.MaxTokens == 1 {
			return refuse
		}
		r.Params.(*sdk.MessageNewParams).System = []sdk.TextBlockParam{{Text: "added by a hook"}}
		return nil
	}})
	if _, err := m.Generate(t.Context(), []models.Message{models.Human("hi")}, &models.CallOptions{MaxTokens: 1}); !errors.Is(err, refuse) || len(s.Requests()) != 0 {
		t.Fatalf("refused call: %v, %d requests", err, len(s.Requests()))
	}
	if _, err := m.Generate(t.Context(), []models.Message{models.Human("hi")}, nil); err != nil || s.Requests()[0].Anthropic.System[0].Text != "added by a hook" {
		t.Fatalf("changed call: %v", err)
	}
}

// Stream sends the deltas in order, and returns what Generate returns
// for the same answer; merging the chunks gives it too.
func TestStreamMatchesGenerate(t *testing.T) {
	t.Parallel()
	calls := []localprovider.ToolCall{
		{ID: "toolu_1", Name: "get_weather", ArgChunks: []string{`{"ci`, `ty": "Pa`, `ris"}`}},
		{ID: "toolu_2", Name: "get_weather", Args: `{"city": 7}`},
	}
	turn := localprovider.Turn{Chunks: []string{"Let ", "me ", "check."}, ToolCalls: calls, Usage: &localprovider.Usage{InputTokens: 10, OutputTokens: 7}}
	s, m := setup(t, localprovider.Config{}, models.Hooks{})
	s.Script(turn, turn)
	history := []models.Message{models.Human("weather in Paris and 7?")}
	opts := &models.CallOptions{Tools: []models.ToolSpec{weather}}
	whole, err := m.Generate(t.Context(), history, opts)
	if err != nil {
		t.Fatal(err)
	}
	var chunks []models.Message
	streamed, err := m.Stream(t.Context(), history, opts, func(c models.Message) error { chunks = append(chunks, c); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(comparable(whole), comparable(streamed)) {
		t.Fatalf("streamed reply\n%+v\nwant Generate's\n%+v", streamed, whole)
	}
	if len(whole.ToolCalls) != 2 || whole.ToolCalls[0].Args["city"] != "Paris" || whole.ToolCalls[1].Args["city"] != json.Number("7") {
		t.Fatalf("tool calls %+v", whole.ToolCalls)
	}
	var texts []string
	merged := chunks[0]
	for i, c := range chunks {
		texts = append(texts, c.Text())
		if c.ID != streamed.ID {
			t.Fatalf("chunk %d id %q, want %q", i, c.ID, streamed.ID)
		}
		if i > 0 {
			if merged, err = models.MergeChunks(merged, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The text deltas, then for each tool call its start, two fragments
	// and its whole tool_use block, then the last chunk.
	if got := strings.Join(texts, "|"); got != "Let |me |check.||||||||||" {
		t.Fatalf("chunk texts %q", got)
	}
	if chunks[len(chunks)-1].ChunkPosition != "last" || chunks[len(chunks)-1].Usage == nil {
		t.Fatalf("last chunk %+v", chunks[len(chunks)-1])
	}
	if m := models.ToMessage(merged); !reflect.DeepEqual(comparable(m), comparable(streamed)) {
		t.Fatalf("merged chunks\n%+v\nwant\n%+v", m, streamed)
	}
}

func TestToolCalls(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		calls   []localprovider.ToolCall
		valid   int
		invalid string // the invalid call's args
	}{
		{"single", []localprovider.ToolCall{{Name: "get_weather", Args: `{"city":"Paris"}`}}, 1, ""},
		{"parallel", []localprovider.ToolCall{{Name: "get_weather", Args: `{"city":"Paris"}`}, {Name: "get_weather", ArgChunks: []string{`{"ci`, `ty":`, `"Rome"}`}}}, 2, ""},
		{"malformed", []localprovider.ToolCall{{Name: "get_weather", Args: `{"city":"Oslo"}`}, {Name: "get_weather", Args: `{"city": "Par`}}, 1, `{"city": "Par`},
	}
	for _, tc := range cases {
		for _, streamed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, streamed), func(t *testing.T) {
				t.Parallel()
				s, m := setup(t, localprovider.Config{}, models.Hooks{})
				s.Script(localprovider.Turn{Text: "Checking.", ToolCalls: tc.calls})
				history := []models.Message{models.Human("weather?")}
				opts := &models.CallOptions{Tools: []models.ToolSpec{weather}, ToolChoice: models.ToolChoiceAny}
				var reply models.Message
				var err error
				if streamed {
					reply, err = m.Stream(t.Context(), history, opts, nil)
				} else {
					reply, err = m.Generate(t.Context(), history, opts)
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(reply.ToolCalls) != tc.valid || reply.ResponseMetadata["stop_reason"] != "tool_use" {
					t.Fatalf("reply %+v", reply)
				}
				if tc.invalid != "" && (len(reply.InvalidToolCalls) != 1 || reply.InvalidToolCalls[0].Args != tc.invalid || reply.InvalidToolCalls[0].Error == "") {
					t.Fatalf("invalid tool calls %+v", reply.InvalidToolCalls)
				}
				// The reply and answers to every call go back as one
				// valid history: tool_use blocks, then one user turn of
				// tool_result blocks (the double checks the pairing).
				history = append(history, reply)
				for _, c := range reply.ToolCalls {
					history = append(history, models.ToolResult(c.ID, models.Text("18°C")))
				}
				for _, c := range reply.InvalidToolCalls {
					r := models.ToolResult(c.ID, models.Text("Error: "+c.Error))
					r.Status = models.StatusError
					history = append(history, r)
				}
				s.Script(localprovider.Turn{Text: "Done."})
				if _, err := m.Generate(t.Context(), history, opts); err != nil {
					t.Fatalf("sending the tool results back: %v", err)
				}
				sent := s.Requests()[1].Anthropic
				if len(sent.Messages) != 3 || len(sent.Messages[2].Content) != len(tc.calls) || sent.Messages[2].Content[0].Type != "tool_result" {
					t.Fatalf("second request %s", s.Requests()[1].Body)
				}
				if sent.ToolChoice == nil {
					t.Fatalf("tool_choice not sent: %s", s.Requests()[1].Body)
				}
			})
		}
	}
}

// recorder collects a run's events.
type recorder struct {
	mu     sync.Mutex
	events []engine.Event
}

func (r *recorder) listen(e engine.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) retries() []engine.TaskRetried {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []engine.TaskRetried
	for _, e := range r.events {
		if tr, ok := e.(engine.TaskRetried); ok {
			out = append(out, tr)
		}
	}
	return out
}

// agentGraph is a model node over MessagesState with a retry policy
// whose own backoff is long: a test passing quickly shows the
// provider's retry-after was used.
func agentGraph(t *testing.T, m models.ChatModel) *engine.Graph[models.MessagesState] {
	t.Helper()
	g := engine.NewStateGraph[models.MessagesState]()
	g.AddNode("agent", func(ctx context.Context, s models.MessagesState) (engine.Output, error) {
		reply, err := models.Call(ctx, m, s.Messages, nil)
		if err != nil {
			return nil, err
		}
		return engine.Update{"messages": reply}, nil
	}, engine.WithRetry(engine.RetryPolicy{InitialInterval: time.Millisecond, MaxAttempts: 3}))
	g.AddEdge(engine.Start, "agent")
	graph, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return graph
}

func finalMessages(t *testing.T, out any) []models.Message {
	t.Helper()
	switch v := out.(type) {
	case models.MessagesState:
		return v.Messages
	case map[string]any: // a "values" stream part
		if msgs, ok := v["messages"].([]models.Message); ok {
			return msgs
		}
	}
	t.Fatalf("output %T %v", out, out)
	return nil
}

// Injected faults are ProviderErrors the node's retry policy retries,
// waiting the provider's retry-after, each retry a TaskRetried event.
func TestFaultsRetriedByTheEngine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		fault  localprovider.Fault
		status int
		wait   time.Duration
	}{
		{"429 retry-after-ms", localprovider.Fault{Status: 429, RetryAfterMs: "20"}, 429, 20 * time.Millisecond},
		{"429 retry-after", localprovider.Fault{Status: 429, RetryAfter: "0.03"}, 429, 30 * time.Millisecond},
		{"529", localprovider.Fault{Status: 529}, 529, time.Millisecond},
		{"500", localprovider.Fault{Status: 500}, 500, time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, m := setup(t, localprovider.Config{}, models.Hooks{})
			s.Script(localprovider.Turn{Fault: &tc.fault}, localprovider.Turn{Text: "Recovered."})
			rec := &recorder{}
			out, err := agentGraph(t, m).Invoke(t.Context(), engine.Update{"messages": "hi"}, &engine.RunOptions{Listener: rec.listen})
			if err != nil {
				t.Fatal(err)
			}
			if msgs := finalMessages(t, out); len(msgs) != 2 || msgs[1].Text() != "Recovered." {
				t.Fatalf("messages %+v", msgs)
			}
			retries := rec.retries()
			var pe *models.ProviderError
			if len(retries) != 1 || !errors.As(retries[0].Err, &pe) || pe.Status != tc.status || retries[0].Backoff != tc.wait {
				t.Fatalf("retries %+v", retries)
			}
			if pe.RequestID == "" || pe.Type == "" || pe.Provider != "anthropic" {
				t.Fatalf("provider error %+v", pe)
			}
			if reqs := s.Requests(); len(reqs) != 2 || reqs[1].RetryCount() != "0" {
				t.Fatalf("the SDK retried on its own: %d requests", len(reqs))
			}
		})
	}
}

// A 400 is not retried: the task fails with the provider's message.
func TestBadRequestIsATaskError(t *testing.T) {
	t.Parallel()
	s, m := setup(t, localprovider.Config{}, models.Hooks{})
	s.Script(localprovider.Turn{Fault: &localprovider.Fault{Status: 400, Message: "messages: text content blocks must be non-empty"}})
	rec := &recorder{}
	_, err := agentGraph(t, m).Invoke(t.Context(), engine.Update{"messages": "hi"}, &engine.RunOptions{Listener: rec.listen})
	var pe *models.ProviderError
	if !errors.As(err, &pe) || pe.Status != 400 || !strings.Contains(err.Error(), "must be non-empty") || len(rec.retries()) != 0 {
		t.Fatalf("err %v, retries %d", err, len(rec.retries()))
	}
}

// An error event mid-stream fails the attempt; the retry streams a reply
// under a new message id, which is the one kept in state.
func TestMidstreamErrorThenRetry(t *testing.T) {
	t.Parallel()
	s, m := setup(t, localprovider.Config{}, models.Hooks{})
	s.Script(
		localprovider.Turn{Chunks: []string{"Partial ", "answer ", "lost"}, Fault: &localprovider.Fault{Midstream: localprovider.ErrorEvent, AfterDeltas: 2}},
		localprovider.Turn{Chunks: []string{"Whole ", "answer."}},
	)
	rec := &recorder{}
	var ids, texts []string
	var final any
	for part, err := range agentGraph(t, m).Stream(t.Context(), engine.Update{"messages": "hi"}, &engine.RunOptions{Listener: rec.listen}, engine.StreamMessages, engine.StreamValues) {
		if err != nil {
			t.Fatal(err)
		}
		if part.Mode == engine.StreamValues {
			final = part.Data
			continue
		}
		c := part.Data.([]any)[0].(models.Message)
		ids, texts = append(ids, c.ID), append(texts, c.Text())
	}
	retries := rec.retries()
	var pe *models.ProviderError
	if len(retries) != 1 || !errors.As(retries[0].Err, &pe) || !pe.Midstream || pe.Status != 529 || pe.Type != "overloaded_error" {
		t.Fatalf("retries %+v", retries)
	}
	if strings.Join(texts, "") != "Partial answer Whole answer." || ids[0] != "msg_local_000001" || ids[len(ids)-1] != "msg_local_000002" {
		t.Fatalf("chunks %q with ids %q", texts, ids)
	}
	msgs := finalMessages(t, final)
	if len(msgs) != 2 || msgs[1].ID != "msg_local_000002" || msgs[1].Text() != "Whole answer." {
		t.Fatalf("state %+v", msgs)
	}
}

// A connection dropped mid-stream is a retried provider error too.
func TestDroppedConnectionThenRetry(t *testing.T) {
	t.Parallel()
	s, m := setup(t, localprovider.Config{}, models.Hooks{})
	s.Script(
		localprovider.Turn{Chunks: []string{"a", "b"}, Fault: &localprovider.Fault{Midstream: localprovider.DropConnection, AfterDeltas: 1}},
		localprovider.Turn{Text: "ok"},
	)
	rec := &recorder{}
	out, err := agentGraph(t, m).Invoke(t.Context(), engine.Update{"messages": "hi"}, &engine.RunOptions{Listener: rec.listen})
	if err != nil {
		t.Fatal(err)
	}
	if msgs := finalMessages(t, out); msgs[1].Text() != "ok" || len(rec.retries()) != 1 {
		t.Fatalf("messages %+v, retries %+v", msgs, rec.retries())
	}
}

type stuckClock struct{}

func (stuckClock) Now() time.Time                       { return time.Now() }
func (stuckClock) After(time.Duration) <-chan time.Time { return nil }

// Cancelling the run while the provider holds its first byte cancels the
// HTTP request: the double's handler sees the client go (its clock never
// fires, so nothing else could end the wait).
func TestRunCancelCancelsTheRequest(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	s := localprovider.New(localprovider.Config{Clock: stuckClock{}, OnRequest: func(localprovider.Request) { cancel() }})
	handlerDone := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(handlerDone)
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	m, err := anthropic.New(anthropic.Config{APIKey: testKey, BaseURL: ts.URL, Model: "claude-test", HTTPClient: ts.Client()})
	if err != nil {
		t.Fatal(err)
	}
	s.Script(localprovider.Turn{Text: "never sent", Fault: &localprovider.Fault{FirstByteDelay: time.Hour}})
	_, err = agentGraph(t, m).Invoke(ctx, engine.Update{"messages": "hi"}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	select {
	case <-handlerDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the provider's request was not cancelled")
	}
}

// A model node streams its tokens through Stream(..., StreamMessages)
// with upstream's metadata, and the reply is not streamed again when the
// node returns it.
func TestModelNodeStreamsMessages(t *testing.T) {
	t.Parallel()
	s, m := setup(t, localprovider.Config{}, models.Hooks{})
	s.Script(localprovider.Turn{Chunks: []string{"To", "ken", "s"}})
	var texts []string
	var ids []string
	var md map[string]any
	graph := agentGraph(t, m)
	for part, err := range graph.Stream(t.Context(), engine.Update{"messages": "hi"}, &engine.RunOptions{ThreadID: "t1"}, engine.StreamMessages) {
		if err != nil {
			t.Fatal(err)
		}
		pair := part.Data.([]any)
		c := pair[0].(models.Message)
		texts, ids, md = append(texts, c.Text()), append(ids, c.ID), pair[1].(map[string]any)
	}
	if strings.Join(texts, "|") != "To|ken|s|" {
		t.Fatalf("messages parts %q", texts)
	}
	for _, id := range ids {
		if id != "msg_local_000001" {
			t.Fatalf("chunk ids %q", ids)
		}
	}
	if md["ls_provider"] != "anthropic" || md["ls_model_name"] != "claude-test" || md["ls_model_type"] != "chat" || md["langgraph_node"] != "agent" || md["thread_id"] != "t1" {
		t.Fatalf("metadata %v", md)
	}
}

// The API key is in no error text, event or stream part, even when the
// provider echoes it.
func TestNoSecretLeaks(t *testing.T) {
	t.Parallel()
	s, m := setup(t, localprovider.Config{}, models.Hooks{})
	s.Script(
		localprovider.Turn{Fault: &localprovider.Fault{Status: 429, RetryAfterMs: "1", Message: "slow down, " + testKey}},
		localprovider.Turn{Chunks: []string{"a", "b"}, Fault: &localprovider.Fault{Midstream: localprovider.ErrorEvent, AfterDeltas: 1, Message: "overloaded for key " + testKey}},
		localprovider.Turn{Fault: &localprovider.Fault{Status: 401, ErrorType: "authentication_error", Message: "invalid x-api-key " + testKey}},
	)
	rec := &recorder{}
	var seen strings.Builder
	for part, err := range agentGraph(t, m).Stream(t.Context(), engine.Update{"messages": "hi"}, &engine.RunOptions{Listener: rec.listen}, engine.StreamMessages, engine.StreamDebug, engine.StreamUpdates) {
		if err != nil {
			fmt.Fprintf(&seen, "%v %+v %#v\n", err, err, err)
			continue
		}
		b, _ := json.Marshal(part.Data)
		fmt.Fprintf(&seen, "%s %+v\n", b, part)
	}
	for _, e := range rec.events {
		fmt.Fprintf(&seen, "%+v %#v\n", e, e)
		b, _ := json.Marshal(e)
		seen.Write(b)
	}
	if len(rec.retries()) != 2 || !strings.Contains(seen.String(), "[redacted]") {
		t.Fatalf("retries %d; seen:\n%s", len(rec.retries()), seen.String())
	}
	if strings.Contains(seen.String(), testKey) || strings.Contains(seen.String(), "SECRET") {
		t.Fatalf("the API key leaked:\n%s", seen.String())
	}
}

func TestNewNeedsAKey(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	if _, err := anthropic.New(anthropic.Config{Model: "m"}); !errors.Is(err, models.ErrNoAPIKey) {
		t.Fatalf("err %v", err)
	}
}

// An error answer is retried as the SDK's own policy decides: 409 is,
// and the provider's x-should-retry header overrides the status.
func TestRetryClassification(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		fault localprovider.Fault
		retry bool
	}{
		{"429", localprovider.Fault{Status: 429}, true},
		{"409 conflict", localprovider.Fault{Status: 409}, true},
		{"400", localprovider.Fault{Status: 400}, false},
		{"400 with x-should-retry true", localprovider.Fault{Status: 400, ShouldRetry: "true"}, true},
		{"529 with x-should-retry false", localprovider.Fault{Status: 529, ShouldRetry: "false"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, m := setup(t, localprovider.Config{}, models.Hooks{})
			s.Script(localprovider.Turn{Fault: &tc.fault})
			_, err := m.Generate(t.Context(), []models.Message{models.Human("hi")}, nil)
			var pe *models.ProviderError
			if !errors.As(err, &pe) || pe.Status != tc.fault.Status {
				t.Fatalf("err %v", err)
			}
			if pe.Retryable() != tc.retry || engine.DefaultRetryOn(err) != tc.retry {
				t.Fatalf("%v: Retryable %v, DefaultRetryOn %v, want %v", err, pe.Retryable(), engine.DefaultRetryOn(err), tc.retry)
			}
		})
	}
}

// The API key is printed by no verb and logged by no slog handler.
func TestModelPrintsNoKey(t *testing.T) {
	t.Parallel()
	_, m := setup(t, localprovider.Config{}, models.Hooks{})
	var b strings.Builder
	fmt.Fprintf(&b, "%v %+v %#v %s %v %#v\n", m, m, m, m, *m, *m)
	slog.New(slog.NewJSONHandler(&b, nil)).Info("model", "m", m, "v", *m)
	slog.New(slog.NewTextHandler(&b, nil)).Info("model", "m", m)
	if strings.Contains(b.String(), testKey) || strings.Contains(b.String(), "SECRET") || !strings.Contains(b.String(), "claude-test") {
		t.Fatalf("printed:\n%s", b.String())
	}
}

// Histories where a human message comes between an AI message's tool
// calls and their results are sent as one valid user turn, tool results
// first (the double refuses them otherwise, as the API does).
func TestToolResultsComeFirst(t *testing.T) {
	t.Parallel()
	call := func(id string) models.ToolCall {
		return models.ToolCall{ID: id, Name: "get_weather", Args: map[string]any{"city": "Paris"}}
	}
	result := func(id string) models.Message { return models.ToolResult(id, models.Text("18°C")) }
	cases := []struct {
		name    string
		history []models.Message
		turn    []string // the block types of the last user turn sent
	}{
		{"ai, human, tool", []models.Message{models.Human("weather?"), models.AIWithToolCalls("", call("toolu_1")), models.Human("quick please"), result("toolu_1")}, []string{"tool_result", "text"}},
		{"ai, tool, human, tool", []models.Message{models.Human("weather?"), models.AIWithToolCalls("", call("toolu_1"), call("toolu_2")), result("toolu_1"), models.Human("and?"), result("toolu_2")}, []string{"tool_result", "tool_result", "text"}},
		{"ai, tool, human", []models.Message{models.Human("weather?"), models.AIWithToolCalls("", call("toolu_1")), result("toolu_1"), models.Human("thanks")}, []string{"tool_result"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, m := setup(t, localprovider.Config{}, models.Hooks{})
			s.Script(localprovider.Turn{Text: "Done."})
			if _, err := m.Generate(t.Context(), tc.history, &models.CallOptions{Tools: []models.ToolSpec{weather}}); err != nil {
				t.Fatal(err)
			}
			sent := s.Requests()[0].Anthropic.Messages
			var types []string
			for _, b := range sent[2].Content {
				types = append(types, b.Type)
			}
			if !reflect.DeepEqual(types, tc.turn) {
				t.Fatalf("user turn after the tool calls holds %v, want %v: %s", types, tc.turn, s.Requests()[0].Body)
			}
		})
	}
}

// A reply is a string only when it is a single text block; otherwise its
// blocks in the API's order, tool_use and thinking included, as
// langchain-anthropic keeps them. Streamed, the merged chunks are the
// same reply, and sent back it is a valid history with each tool_use once.
func TestReplyContent(t *testing.T) {
	t.Parallel()
	call := localprovider.ToolCall{ID: "toolu_1", Name: "get_weather", ArgChunks: []string{`{"city":`, ` "Paris"}`}}
	text := func(s string) models.Block { return models.TextBlock(s) }
	thinking := models.Block{"type": "thinking", "thinking": "The user wants weather.", "signature": localprovider.ThinkingSignature}
	use := models.Block{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": map[string]any{"city": "Paris"}}
	cases := []struct {
		name string
		turn localprovider.Turn
		want models.Content
	}{
		{"text", localprovider.Turn{Chunks: []string{"Hel", "lo."}}, models.Text("Hello.")},
		{"text and tool_use", localprovider.Turn{Text: "Checking.", ToolCalls: []localprovider.ToolCall{call}}, models.Blocks(text("Checking."), use)},
		{"tool_use alone", localprovider.Turn{ToolCalls: []localprovider.ToolCall{call}}, models.Blocks(use)},
		{"thinking and text", localprovider.Turn{Thinking: thinking["thinking"].(string), Chunks: []string{"It is ", "sunny."}}, models.Blocks(thinking, text("It is sunny."))},
		{"thinking, text, tool_use, text", localprovider.Turn{Thinking: thinking["thinking"].(string), Text: "Checking.", ToolCalls: []localprovider.ToolCall{call}, TextAfterTools: "One moment."},
			models.Blocks(thinking, text("Checking."), use, text("One moment."))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, m := setup(t, localprovider.Config{}, models.Hooks{})
			s.Script(tc.turn, tc.turn)
			history := []models.Message{models.Human("weather in Paris?")}
			opts := &models.CallOptions{Tools: []models.ToolSpec{weather}}
			whole, err := m.Generate(t.Context(), history, opts)
			if err != nil {
				t.Fatal(err)
			}
			wantJSON, _ := json.Marshal(tc.want)
			if got, _ := json.Marshal(whole.Content); string(got) != string(wantJSON) {
				t.Fatalf("content %s\nwant %s", got, wantJSON)
			}
			var merged models.Message
			streamed, err := m.Stream(t.Context(), history, opts, func(c models.Message) error {
				if merged.Type == "" {
					merged = c
					return nil
				}
				merged, err = models.MergeChunks(merged, c)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(comparable(whole), comparable(streamed)) {
				t.Fatalf("streamed reply\n%+v\nwant Generate's\n%+v", streamed, whole)
			}
			if got := models.ToMessage(merged); !reflect.DeepEqual(comparable(got), comparable(streamed)) {
				t.Fatalf("merged chunks\n%+v\nwant the reply\n%+v", got, streamed)
			}
			history = append(history, streamed)
			for _, c := range streamed.ToolCalls {
				history = append(history, models.ToolResult(c.ID, models.Text("18°C")))
			}
			history = append(history, models.Human("thanks"))
			s.Script(localprovider.Turn{Text: "Bye."})
			if _, err := m.Generate(t.Context(), history, opts); err != nil {
				t.Fatalf("sending the reply back: %v", err)
			}
			var types []string
			for _, b := range s.Requests()[2].Anthropic.Messages[1].Content {
				types = append(types, b.Type)
			}
			var want []string
			if tc.want.IsList() {
				for _, b := range tc.want.Blocks {
					want = append(want, b.Type())
				}
			} else {
				want = []string{"text"}
			}
			if !reflect.DeepEqual(types, want) {
				t.Fatalf("assistant turn sent as %v, want %v: %s", types, want, s.Requests()[2].Body)
			}
		})
	}
}

// Content that holds tool_use blocks and tool_calls of the same ids is
// sent with each tool_use once, the tool call's arguments winning; a
// tool_use no tool message answers is left out.
func TestRenderToolUseOnce(t *testing.T) {
	t.Parallel()
	_, m := setup(t, localprovider.Config{}, models.Hooks{})
	ai := models.Message{
		Type: models.TypeAI,
		Content: models.Blocks(
			models.TextBlock("Checking."),
			models.Block{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": map[string]any{"city": "Paris"}},
			models.Block{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": map[string]any{"city": "Paris"}},
			models.Block{"type": "tool_use", "id": "toolu_bad", "name": "get_weather", "input": `{"city": "Par`},
			models.Block{"type": "tool_use", "id": "toolu_gone", "name": "get_weather", "input": map[string]any{}},
		),
		ToolCalls:        []models.ToolCall{{ID: "toolu_1", Name: "get_weather", Args: map[string]any{"city": "Rome"}}},
		InvalidToolCalls: []models.InvalidToolCall{{ID: "toolu_bad", Name: "get_weather", Args: `{"city": "Par`}},
	}
	bad := models.ToolResult("toolu_bad", models.Text("Error: bad arguments"))
	bad.Status = models.StatusError
	p, err := m.Render([]models.Message{models.Human("weather?"), ai, models.ToolResult("toolu_1", models.Text("18°C")), bad}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(p.Messages[1])
	want := `{"content":[{"text":"Checking.","type":"text"},{"id":"toolu_1","input":{"city":"Rome"},"name":"get_weather","type":"tool_use"},{"id":"toolu_bad","input":{},"name":"get_weather","type":"tool_use"}],"role":"assistant"}`
	if string(got) != want {
		t.Fatalf("assistant turn\n%s\nwant\n%s", got, want)
	}
}

// A response schema is sent as output_config.format, its objects closed
// (additionalProperties: false), which the API requires; the caller's
// schema is not changed. An object that says otherwise is refused.
func TestStructuredOutput(t *testing.T) {
	t.Parallel()
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"city":  map[string]any{"type": "string"},
			"days":  map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{"t": map[string]any{"type": "number"}}}},
			"where": map[string]any{"anyOf": []any{map[string]any{"type": "object", "properties": map[string]any{}}, map[string]any{"type": "null"}}},
		},
		"required": []any{"city"},
	}
	s, m := setup(t, localprovider.Config{}, models.Hooks{})
	s.Script(localprovider.Turn{Text: `{"city":"Paris"}`})
	reply, err := m.Generate(t.Context(), []models.Message{models.Human("weather?")}, &models.CallOptions{Response: &models.ResponseSchema{Name: "forecast", Schema: schema}})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text() != `{"city":"Paris"}` {
		t.Fatalf("reply %+v", reply)
	}
	var body struct {
		OutputConfig struct {
			Format struct {
				Type   string         `json:"type"`
				Schema map[string]any `json:"schema"`
			} `json:"format"`
		} `json:"output_config"`
	}
	if err := json.Unmarshal(s.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	f := body.OutputConfig.Format
	days := f.Schema["properties"].(map[string]any)["days"].(map[string]any)["items"].(map[string]any)
	where := f.Schema["properties"].(map[string]any)["where"].(map[string]any)["anyOf"].([]any)[0].(map[string]any)
	if f.Type != "json_schema" || f.Schema["additionalProperties"] != false || days["additionalProperties"] != false || where["additionalProperties"] != false {
		t.Fatalf("output_config %s", s.Requests()[0].Body)
	}
	if _, changed := schema["additionalProperties"]; changed {
		t.Fatal("the caller's schema was changed")
	}

	open := map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": true}
	_, err = m.Generate(t.Context(), []models.Message{models.Human("weather?")}, &models.CallOptions{Response: &models.ResponseSchema{Schema: open}})
	var pe *models.ProviderError
	if !errors.As(err, &pe) || pe.Status != 400 || !strings.Contains(pe.Message, "additionalProperties") {
		t.Fatalf("an open object schema: %v", err)
	}
}

// A hook's headers are sent with the request, and FirstByte runs once, as
// the reply begins: before the first streamed chunk, before AfterCall.
func TestHooksSendHeadersAndSeeTheFirstByte(t *testing.T) {
	t.Parallel()
	var order []string
	var mu sync.Mutex
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	s, m := setup(t, localprovider.Config{}, models.Hooks{
		BeforeCall: func(_ context.Context, r *models.Request) error {
			r.Headers = map[string]string{"X-Test-Beta": "cache-v1"}
			return nil
		},
		FirstByte: func(context.Context, *models.Request) { note("first byte") },
		AfterCall: func(context.Context, *models.Request, *models.Response) { note("after") },
	})
	s.Script(localprovider.Turn{Chunks: []string{"a", "b"}}, localprovider.Turn{Text: "c"})
	if _, err := m.Stream(t.Context(), []models.Message{models.Human("hi")}, nil, func(models.Message) error { note("chunk"); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(t.Context(), []models.Message{models.Human("hi")}, nil); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(order, ",")
	if !strings.HasPrefix(got, "first byte,chunk,") || !strings.HasSuffix(got, ",after,first byte,after") || strings.Count(got, "first byte") != 2 {
		t.Fatalf("hook order %s: want first byte once per call, before any chunk and before after", got)
	}
	for _, r := range s.Requests() {
		if r.Header.Get("X-Test-Beta") != "cache-v1" {
			t.Fatalf("request %d headers %v: the hook's header was not sent", r.Seq, r.Header)
		}
	}
}
