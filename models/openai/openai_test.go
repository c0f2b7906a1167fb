package openai_test

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

	sdk "github.com/openai/openai-go/v3"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/localprovider"
	"github.com/superstep-dev/superstep/models/openai"
)

const testKey = "sk-proj-SECRET-do-not-leak"

func setup(t *testing.T, cfg localprovider.Config, hooks models.Hooks) (*localprovider.Server, *openai.Model) {
	t.Helper()
	s, ts := localprovider.NewTestServer(cfg)
	t.Cleanup(ts.Close)
	m, err := openai.New(openai.Config{APIKey: testKey, BaseURL: ts.URL + "/v1/", Model: "gpt-test", HTTPClient: ts.Client(), Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	return s, m
}

var weather = models.ToolSpec{Name: "get_weather", Description: "Weather in a city.", Parameters: map[string]any{
	"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"},
}}

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
	s, m := setup(t, localprovider.Config{}, models.Hooks{BeforeCall: func(_ context.Context, r *models.Request) error { seen = r; return nil }})
	s.Script(localprovider.Turn{Text: "Hello there.", Usage: &localprovider.Usage{InputTokens: 5, OutputTokens: 3, CacheReadInputTokens: 100}})
	temp := 0.2
	reply, err := m.Generate(t.Context(), []models.Message{models.System("Be brief."), models.Human("hi")}, &models.CallOptions{Temperature: &temp, MaxTokens: 99})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Type != models.TypeAI || reply.Text() != "Hello there." || reply.ID != "chatcmpl-local-000001" {
		t.Fatalf("reply %+v", reply)
	}
	if u := reply.Usage; u == nil || u.InputTokens != 105 || u.OutputTokens != 3 || *u.InputTokenDetails.CacheRead != 100 {
		t.Fatalf("usage %+v", reply.Usage)
	}
	if md := reply.ResponseMetadata; md["model_name"] != "gpt-test" || md["finish_reason"] != "stop" || md["request_id"] == nil {
		t.Fatalf("response metadata %v", md)
	}
	req := s.Requests()[0].OpenAI
	if req.Messages[0].Role != "system" || *req.MaxCompletionTokens != 99 || req.StreamOptions != nil {
		t.Fatalf("request %s", s.Requests()[0].Body)
	}
	if _, ok := seen.Params.(*sdk.ChatCompletionNewParams); !ok {
		t.Fatalf("hook saw %T", seen.Params)
	}
}

func TestStreamMatchesGenerate(t *testing.T) {
	t.Parallel()
	calls := []localprovider.ToolCall{
		{ID: "call_1", Name: "get_weather", ArgChunks: []string{`{"ci`, `ty": "Pa`, `ris"}`}},
		{ID: "call_2", Name: "get_weather", Args: `{"city": 7}`},
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
		ws, _ := json.Marshal(whole.Usage)
		ss, _ := json.Marshal(streamed.Usage)
		t.Fatalf("streamed reply\n%+v %s\nwant Generate's\n%+v %s", streamed, ss, whole, ws)
	}
	if len(whole.ToolCalls) != 2 || whole.ToolCalls[0].Args["city"] != "Paris" {
		t.Fatalf("tool calls %+v", whole.ToolCalls)
	}
	merged := chunks[0]
	var texts []string
	for i, c := range chunks {
		texts = append(texts, c.Text())
		if c.ID != streamed.ID {
			t.Fatalf("chunk %d id %q", i, c.ID)
		}
		if i > 0 {
			if merged, err = models.MergeChunks(merged, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !strings.HasPrefix(strings.Join(texts, "|"), "Let |me |check.|") || chunks[len(chunks)-1].ChunkPosition != "last" {
		t.Fatalf("chunk texts %q", texts)
	}
	if got := models.ToMessage(merged); !reflect.DeepEqual(comparable(got), comparable(streamed)) {
		t.Fatalf("merged chunks\n%+v\nwant\n%+v", got, streamed)
	}
	if r := s.Requests()[1].OpenAI; r.StreamOptions == nil || !r.StreamOptions.IncludeUsage {
		t.Fatalf("stream request %s", s.Requests()[1].Body)
	}
}

func TestToolCalls(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		calls   []localprovider.ToolCall
		valid   int
		invalid string
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
				if len(reply.ToolCalls) != tc.valid || reply.ResponseMetadata["finish_reason"] != "tool_calls" {
					t.Fatalf("reply %+v", reply)
				}
				if tc.invalid != "" && (len(reply.InvalidToolCalls) != 1 || reply.InvalidToolCalls[0].Args != tc.invalid) {
					t.Fatalf("invalid tool calls %+v", reply.InvalidToolCalls)
				}
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
				sent := s.Requests()[1].OpenAI
				if len(sent.Messages) != 2+len(tc.calls) || len(sent.Messages[1].ToolCalls) != len(tc.calls) || string(sent.ToolChoice) != `"required"` {
					t.Fatalf("second request %s", s.Requests()[1].Body)
				}
			})
		}
	}
}

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
		{"503", localprovider.Fault{Status: 503}, 503, time.Millisecond},
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
			if msgs := out.Messages; len(msgs) != 2 || msgs[1].Text() != "Recovered." {
				t.Fatalf("messages %+v", msgs)
			}
			retries := rec.retries()
			var pe *models.ProviderError
			if len(retries) != 1 || !errors.As(retries[0].Err, &pe) || pe.Status != tc.status || retries[0].Backoff != tc.wait || pe.RequestID == "" {
				t.Fatalf("retries %+v", retries)
			}
			if len(s.Requests()) != 2 {
				t.Fatalf("the SDK retried on its own: %d requests", len(s.Requests()))
			}
		})
	}
}

func TestMidstreamErrorThenRetry(t *testing.T) {
	t.Parallel()
	s, m := setup(t, localprovider.Config{}, models.Hooks{})
	s.Script(
		localprovider.Turn{Chunks: []string{"Partial ", "answer ", "lost"}, Fault: &localprovider.Fault{Midstream: localprovider.ErrorEvent, AfterDeltas: 2}},
		localprovider.Turn{Chunks: []string{"Whole ", "answer."}},
	)
	rec := &recorder{}
	var ids, texts []string
	for part, err := range agentGraph(t, m).Stream(t.Context(), engine.Update{"messages": "hi"}, &engine.RunOptions{Listener: rec.listen}, engine.StreamMessages) {
		if err != nil {
			t.Fatal(err)
		}
		c := part.Data.([]any)[0].(models.Message)
		ids, texts = append(ids, c.ID), append(texts, c.Text())
	}
	retries := rec.retries()
	var pe *models.ProviderError
	if len(retries) != 1 || !errors.As(retries[0].Err, &pe) || !pe.Midstream || pe.Status != 500 || pe.Type != "server_error" {
		t.Fatalf("retries %+v", retries)
	}
	if strings.Join(texts, "") != "Partial answer Whole answer." || ids[0] != "chatcmpl-local-000001" || ids[len(ids)-1] != "chatcmpl-local-000002" {
		t.Fatalf("chunks %q with ids %q", texts, ids)
	}
}

type stuckClock struct{}

func (stuckClock) Now() time.Time                       { return time.Now() }
func (stuckClock) After(time.Duration) <-chan time.Time { return nil }

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
	m, err := openai.New(openai.Config{APIKey: testKey, BaseURL: ts.URL + "/v1/", Model: "gpt-test", HTTPClient: ts.Client()})
	if err != nil {
		t.Fatal(err)
	}
	s.Script(localprovider.Turn{Text: "never sent", Fault: &localprovider.Fault{FirstByteDelay: time.Hour}})
	if _, err := agentGraph(t, m).Invoke(ctx, engine.Update{"messages": "hi"}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	select {
	case <-handlerDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the provider's request was not cancelled")
	}
}

func TestNoSecretLeaks(t *testing.T) {
	t.Parallel()
	s, m := setup(t, localprovider.Config{}, models.Hooks{})
	s.Script(
		localprovider.Turn{Fault: &localprovider.Fault{Status: 429, RetryAfterMs: "1", Message: "slow down, " + testKey}},
		localprovider.Turn{Chunks: []string{"a", "b"}, Fault: &localprovider.Fault{Midstream: localprovider.ErrorEvent, AfterDeltas: 1, Message: "overloaded for key " + testKey}},
		localprovider.Turn{Fault: &localprovider.Fault{Status: 401, Message: "Incorrect API key provided: " + testKey}},
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

// An error answer is retried as the SDK's own policy decides, except
// insufficient_quota: a 429 that waiting cannot fix. x-should-retry
// overrides the status.
func TestRetryClassification(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		fault localprovider.Fault
		retry bool
	}{
		{"429 rate limit", localprovider.Fault{Status: 429}, true},
		{"429 insufficient_quota", localprovider.Fault{Status: 429, ErrorType: "insufficient_quota", Code: "insufficient_quota", Message: "You exceeded your current quota."}, false},
		{"409 conflict", localprovider.Fault{Status: 409}, true},
		{"400 with x-should-retry true", localprovider.Fault{Status: 400, ShouldRetry: "true"}, true},
		{"500 with x-should-retry false", localprovider.Fault{Status: 500, ShouldRetry: "false"}, false},
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

// roundTripFunc records what would go to api.openai.com.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// OPENAI_ORG_ID, OPENAI_PROJECT_ID and OPENAI_CUSTOM_HEADERS go to
// OpenAI's own API only: a compatible server (Ollama, vLLM) gets the
// organization and project only when Config sets them. (Not parallel:
// it sets the environment.)
func TestEnvironmentHeadersStayWithOpenAI(t *testing.T) {
	t.Setenv("OPENAI_ORG_ID", "org-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Team: secret-team")
	s, ts := localprovider.NewTestServer(localprovider.Config{})
	t.Cleanup(ts.Close)
	for i, cfg := range []openai.Config{{}, {Organization: "org-cfg", Project: "proj-cfg"}} {
		cfg.APIKey, cfg.BaseURL, cfg.Model, cfg.HTTPClient = testKey, ts.URL+"/v1/", "llama3", ts.Client()
		m, err := openai.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Generate(t.Context(), []models.Message{models.Human("hi")}, nil); err != nil {
			t.Fatal(err)
		}
		h := s.Requests()[i].Header
		if h.Get("X-Team") != "" || h.Get("OpenAI-Organization") != cfg.Organization || h.Get("OpenAI-Project") != cfg.Project {
			t.Fatalf("config %d sent organization %q, project %q, x-team %q", i, h.Get("OpenAI-Organization"), h.Get("OpenAI-Project"), h.Get("X-Team"))
		}
	}
	var sent http.Header
	m, err := openai.New(openai.Config{APIKey: testKey, BaseURL: "https://api.openai.com/v1/", Model: "gpt-test", HTTPClient: &http.Client{
		Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			sent = r.Header.Clone()
			return nil, errors.New("offline")
		}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = m.Generate(t.Context(), []models.Message{models.Human("hi")}, nil)
	if sent.Get("OpenAI-Organization") != "org-env" || sent.Get("OpenAI-Project") != "proj-env" {
		t.Fatalf("api.openai.com got headers %v", sent)
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
	if strings.Contains(b.String(), testKey) || strings.Contains(b.String(), "SECRET") || !strings.Contains(b.String(), "gpt-test") {
		t.Fatalf("printed:\n%s", b.String())
	}
}

// A response schema is response_format json_schema with strict false, or
// the schema's own "strict" (as langchain-openai); a strict schema must
// close its objects and require every property, as the API checks.
func TestStructuredOutput(t *testing.T) {
	t.Parallel()
	props := map[string]any{"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string"}}
	cases := []struct {
		name   string
		schema map[string]any
		strict bool
		err    string
	}{
		{"not strict", map[string]any{"type": "object", "properties": props, "required": []any{"city"}}, false, ""},
		{"strict", map[string]any{"type": "object", "properties": props, "required": []any{"city", "unit"}, "additionalProperties": false, "strict": true}, true, ""},
		{"strict, open object", map[string]any{"type": "object", "properties": props, "required": []any{"city", "unit"}, "strict": true}, true, "'additionalProperties' is required to be supplied and to be false"},
		{"strict, optional property", map[string]any{"type": "object", "properties": props, "required": []any{"city"}, "additionalProperties": false, "strict": true}, true, "Missing 'unit'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, m := setup(t, localprovider.Config{}, models.Hooks{})
			s.Script(localprovider.Turn{Text: `{"city":"Paris","unit":"C"}`})
			_, err := m.Generate(t.Context(), []models.Message{models.Human("weather?")}, &models.CallOptions{Response: &models.ResponseSchema{Name: "forecast", Schema: tc.schema}})
			if tc.err != "" {
				var pe *models.ProviderError
				if !errors.As(err, &pe) || pe.Status != 400 || !strings.Contains(pe.Message, tc.err) {
					t.Fatalf("err %v, want a 400 with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rf := s.Requests()[0].OpenAI.ResponseFormat
			if rf == nil || rf.Type != "json_schema" || rf.JSONSchema.Name != "forecast" || rf.JSONSchema.Strict == nil || *rf.JSONSchema.Strict != tc.strict {
				t.Fatalf("response_format %s", s.Requests()[0].Body)
			}
			if _, ok := rf.JSONSchema.Schema["strict"]; ok {
				t.Fatalf("strict left in the schema: %s", s.Requests()[0].Body)
			}
		})
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
