package agents_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/agents"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/anthropic"
	"github.com/superstep-dev/superstep/models/localprovider"
	"github.com/superstep-dev/superstep/models/openai"
)

// These tests run the agents on the real provider adapters (and so the
// official SDKs) against the local provider double, and assert what the
// model is sent back: the double records every request as it arrived.

const providerTestKey = "sk-test-providers-integration"

// provider is one real adapter, pointed at a double.
type provider struct {
	name string
	new  func(t *testing.T, ts *httptest.Server) models.ChatModel
}

var providers = []provider{
	{"anthropic", func(t *testing.T, ts *httptest.Server) models.ChatModel {
		m, err := anthropic.New(anthropic.Config{APIKey: providerTestKey, BaseURL: ts.URL, Model: "claude-test", HTTPClient: ts.Client()})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}},
	{"openai", func(t *testing.T, ts *httptest.Server) models.ChatModel {
		m, err := openai.New(openai.Config{APIKey: providerTestKey, BaseURL: ts.URL + "/v1/", Model: "gpt-test", HTTPClient: ts.Client()})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}},
}

// newDouble starts a double and the provider's model on it.
func newDouble(t *testing.T, p provider) (*localprovider.Server, models.ChatModel) {
	t.Helper()
	s, ts := localprovider.NewTestServer(localprovider.Config{})
	t.Cleanup(ts.Close)
	return s, p.new(t, ts)
}

// sentResult is a tool result as the model received it.
type sentResult struct {
	ID   string
	Text string
	// IsError is Anthropic's is_error; OpenAI's tool messages have no
	// such flag, so it is always false there.
	IsError bool
}

// resultsSent reads the tool results a request ends with: the last user
// turn's tool_result blocks (Anthropic), or the tool messages after the
// last assistant message (OpenAI).
func resultsSent(t *testing.T, r localprovider.Request) []sentResult {
	t.Helper()
	var out []sentResult
	switch {
	case r.Anthropic != nil:
		msgs := r.Anthropic.Messages
		if len(msgs) == 0 {
			t.Fatalf("request %d has no messages", r.Seq)
		}
		for _, b := range msgs[len(msgs)-1].Content {
			if b.Type == "tool_result" {
				out = append(out, sentResult{ID: b.ToolUseID, Text: b.ResultText(), IsError: b.IsError})
			}
		}
	case r.OpenAI != nil:
		msgs := r.OpenAI.Messages
		i := len(msgs)
		for i > 0 && msgs[i-1].Role == "tool" {
			i--
		}
		for _, m := range msgs[i:] {
			out = append(out, sentResult{ID: m.ToolCallID, Text: m.Text()})
		}
	default:
		t.Fatalf("request %d did not decode: %s", r.Seq, r.Body)
	}
	return out
}

// wantResults checks the results sent in request n (1-based): their ids in
// order, and for each a piece of its text and whether it is an error.
func wantResults(t *testing.T, p provider, reqs []localprovider.Request, n int, want ...sentResult) {
	t.Helper()
	if len(reqs) < n {
		t.Fatalf("%d requests, want at least %d", len(reqs), n)
	}
	got := resultsSent(t, reqs[n-1])
	if len(got) != len(want) {
		t.Fatalf("request %d sent %d tool results, want %d: %+v", n, len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.ID != w.ID || !strings.Contains(g.Text, w.Text) {
			t.Fatalf("request %d, tool result %d: got %s %q, want %s containing %q", n, i, g.ID, g.Text, w.ID, w.Text)
		}
		if p.name == "anthropic" && g.IsError != w.IsError {
			t.Fatalf("request %d, tool result %d (%s): is_error %v, want %v", n, i, g.ID, g.IsError, w.IsError)
		}
	}
}

// agentGraph is a compiled graph over a "messages" key, whatever its state
// type, as a test drives it.
type agentGraph struct {
	invoke func(ctx context.Context, input any, opts *engine.RunOptions) ([]models.Message, error)
	state  func(ctx context.Context, thread string) (*engine.StateSnapshot, error)
}

// graphKind builds one of the graphs the tests run: the prebuilt ReAct
// agent, V2 (a Send per tool call) or V1 (one tools task), which streams
// its model calls through models.Call; or a plain graph of a model node
// that calls Generate, a ToolNode and ToolsRoute.
type graphKind struct {
	name  string
	build func(t *testing.T, model models.ChatModel, tools []agents.Tool, compile engine.CompileOptions) agentGraph
}

var graphKinds = []graphKind{
	{"react", reactGraph(agents.V2)},
	{"react-v1", reactGraph(agents.V1)},
	{"toolnode", buildToolNodeGraph},
}

func reactGraph(v agents.Version) func(t *testing.T, model models.ChatModel, tools []agents.Tool, compile engine.CompileOptions) agentGraph {
	return func(t *testing.T, model models.ChatModel, tools []agents.Tool, compile engine.CompileOptions) agentGraph {
		t.Helper()
		g, err := agents.NewReactAgent(model, tools, &agents.ReactOptions{Version: v, Compile: compile})
		if err != nil {
			t.Fatal(err)
		}
		return agentGraph{
			invoke: func(ctx context.Context, input any, opts *engine.RunOptions) ([]models.Message, error) {
				out, err := g.Invoke(ctx, input, opts)
				return out.Messages, err
			},
			state: func(ctx context.Context, thread string) (*engine.StateSnapshot, error) {
				return g.GetState(ctx, checkpoints.Config{ThreadID: thread})
			},
		}
	}
}

type chatState struct {
	Messages []models.Message `json:"messages" reduce:"add_messages"`
}

func buildToolNodeGraph(t *testing.T, model models.ChatModel, tools []agents.Tool, compile engine.CompileOptions) agentGraph {
	t.Helper()
	var specs []models.ToolSpec
	for _, tool := range tools {
		specs = append(specs, tool.Spec())
	}
	bound := models.WithTools(model, specs...)
	tn, err := agents.NewToolNode(tools, nil)
	if err != nil {
		t.Fatal(err)
	}
	sg := engine.NewStateGraph[chatState]()
	sg.AddNode("model", func(ctx context.Context, s chatState) (engine.Output, error) {
		reply, err := bound.Generate(ctx, s.Messages, nil)
		if err != nil {
			return nil, err
		}
		return engine.Update{"messages": []models.Message{reply}}, nil
	})
	engine.AddNodeFunc(sg, "tools", tn.Run)
	sg.AddEdge(engine.Start, "model")
	sg.AddConditionalEdges("model", agents.ToolsRoute[chatState], map[string]string{"tools": "tools", engine.End: engine.End})
	sg.AddEdge("tools", "model")
	g, err := sg.Compile(compile)
	if err != nil {
		t.Fatal(err)
	}
	return agentGraph{
		invoke: func(ctx context.Context, input any, opts *engine.RunOptions) ([]models.Message, error) {
			out, err := g.Invoke(ctx, input, opts)
			return out.Messages, err
		},
		state: func(ctx context.Context, thread string) (*engine.StateSnapshot, error) {
			return g.GetState(ctx, checkpoints.Config{ThreadID: thread})
		},
	}
}

// stateMessages reads the messages of a thread's latest checkpoint.
func stateMessages(t *testing.T, g agentGraph, thread string) (*engine.StateSnapshot, []models.Message) {
	t.Helper()
	snap, err := g.state(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := models.ToMessages(snap.Values["messages"])
	if err != nil {
		t.Fatal(err)
	}
	return snap, msgs
}

// cityTool is weatherTool with a hook run before it answers.
func cityTool(t *testing.T, before func(ctx context.Context, city string) error) agents.Tool {
	return mustTool(t, "weather", func(ctx context.Context, a weatherArgs) (any, error) {
		if before != nil {
			if err := before(ctx, a.City); err != nil {
				return nil, err
			}
		}
		return "18°C in " + a.City, nil
	})
}

// A tool call, its result and the answer, for every bad call the model
// can make: each goes back to the model as a tool result it can read, and
// the run goes on to the model's next answer.
func TestProviderToolCalls(t *testing.T) {
	t.Parallel()
	final := localprovider.Turn{Text: "Done."}
	cases := []struct {
		name  string
		tools func(t *testing.T) []agents.Tool
		turns []localprovider.Turn
		// check asserts the requests the model received and the history.
		check func(t *testing.T, p provider, reqs []localprovider.Request, msgs []models.Message)
	}{
		{
			name:  "single call",
			tools: func(t *testing.T) []agents.Tool { return []agents.Tool{cityTool(t, nil)} },
			turns: []localprovider.Turn{
				{Text: "Checking.", ToolCalls: []localprovider.ToolCall{{ID: "call_1", Name: "weather", Args: `{"city":"Paris"}`}}},
				{Text: "It is 18°C in Paris."},
			},
			check: func(t *testing.T, p provider, reqs []localprovider.Request, msgs []models.Message) {
				if len(reqs) != 2 {
					t.Fatalf("%d requests, want 2", len(reqs))
				}
				wantResults(t, p, reqs, 2, sentResult{ID: "call_1", Text: "18°C in Paris"})
				if types(msgs) != "human,ai,tool,ai" || msgs[3].Text() != "It is 18°C in Paris." {
					t.Fatalf("history %s: %+v", types(msgs), msgs)
				}
				if msgs[1].ToolCalls[0].Args["city"] != "Paris" || msgs[2].Status != models.StatusSuccess {
					t.Fatalf("call %+v, result %+v", msgs[1].ToolCalls, msgs[2])
				}
			},
		},
		{
			name: "parallel calls",
			tools: func(t *testing.T) []agents.Tool {
				romeStarted := make(chan struct{})
				return []agents.Tool{cityTool(t, func(ctx context.Context, city string) error {
					switch city {
					case "Paris": // the first call finishes last: the order is the calls', not the finishing one
						select {
						case <-romeStarted:
						case <-ctx.Done():
							return ctx.Err()
						}
					case "Rome":
						close(romeStarted)
					}
					return nil
				})}
			},
			turns: []localprovider.Turn{
				{ToolCalls: []localprovider.ToolCall{
					{ID: "call_1", Name: "weather", ArgChunks: []string{`{"ci`, `ty":"Paris"}`}},
					{ID: "call_2", Name: "weather", Args: `{"city":"Oslo"}`},
					{ID: "call_3", Name: "weather", ArgChunks: []string{`{"city"`, `:"Ro`, `me"}`}},
				}},
				{Text: "All 18°C."},
			},
			check: func(t *testing.T, p provider, reqs []localprovider.Request, msgs []models.Message) {
				wantResults(t, p, reqs, 2,
					sentResult{ID: "call_1", Text: "18°C in Paris"},
					sentResult{ID: "call_2", Text: "18°C in Oslo"},
					sentResult{ID: "call_3", Text: "18°C in Rome"})
				if types(msgs) != "human,ai,tool,tool,tool,ai" || msgs[2].ToolCallID != "call_1" || msgs[4].ToolCallID != "call_3" {
					t.Fatalf("history %s: %+v", types(msgs), msgs)
				}
			},
		},
		{
			name:  "malformed arguments",
			tools: func(t *testing.T) []agents.Tool { return []agents.Tool{cityTool(t, nil)} },
			turns: []localprovider.Turn{
				{ToolCalls: []localprovider.ToolCall{{ID: "call_1", Name: "weather", Args: `{"city": "Par`}}},
				{Text: "Sorry, again.", ToolCalls: []localprovider.ToolCall{{ID: "call_2", Name: "weather", Args: `{"city":"Paris"}`}}},
				final,
			},
			check: func(t *testing.T, p provider, reqs []localprovider.Request, msgs []models.Message) {
				wantResults(t, p, reqs, 2, sentResult{ID: "call_1", Text: `Error: the arguments of tool "weather" are not a JSON object`, IsError: true})
				wantResults(t, p, reqs, 3, sentResult{ID: "call_2", Text: "18°C in Paris"})
				if types(msgs) != "human,ai,tool,ai,tool,ai" || len(msgs[1].InvalidToolCalls) != 1 || msgs[2].Status != models.StatusError {
					t.Fatalf("history %s: %+v", types(msgs), msgs)
				}
			},
		},
		{
			name:  "unknown tool",
			tools: func(t *testing.T) []agents.Tool { return []agents.Tool{cityTool(t, nil)} },
			turns: []localprovider.Turn{
				{ToolCalls: []localprovider.ToolCall{{ID: "call_1", Name: "get_forecast", Args: `{"city":"Paris"}`}}},
				{ToolCalls: []localprovider.ToolCall{{ID: "call_2", Name: "weather", Args: `{"city":"Paris"}`}}},
				final,
			},
			check: func(t *testing.T, p provider, reqs []localprovider.Request, msgs []models.Message) {
				wantResults(t, p, reqs, 2, sentResult{ID: "call_1", Text: "Error: get_forecast is not a valid tool, try one of [weather].", IsError: true})
				wantResults(t, p, reqs, 3, sentResult{ID: "call_2", Text: "18°C in Paris"})
				if types(msgs) != "human,ai,tool,ai,tool,ai" {
					t.Fatalf("history %s", types(msgs))
				}
			},
		},
		{
			name:  "arguments failing the schema",
			tools: func(t *testing.T) []agents.Tool { return []agents.Tool{cityTool(t, nil)} },
			turns: []localprovider.Turn{
				{ToolCalls: []localprovider.ToolCall{
					{ID: "call_1", Name: "weather", Args: `{}`},
					{ID: "call_2", Name: "weather", Args: `{"city": 7}`},
					{ID: "call_3", Name: "weather", Args: `{"city":"Paris","country":"FR"}`},
				}},
				{ToolCalls: []localprovider.ToolCall{{ID: "call_4", Name: "weather", Args: `{"city":"Paris"}`}}},
				final,
			},
			check: func(t *testing.T, p provider, reqs []localprovider.Request, msgs []models.Message) {
				wantResults(t, p, reqs, 2,
					sentResult{ID: "call_1", Text: "Error invoking tool 'weather' with kwargs {} with error:\n city: field required", IsError: true},
					sentResult{ID: "call_2", Text: "city: expected string, got number", IsError: true},
					sentResult{ID: "call_3", Text: "country: extra inputs are not permitted", IsError: true})
				wantResults(t, p, reqs, 3, sentResult{ID: "call_4", Text: "18°C in Paris"})
				if types(msgs) != "human,ai,tool,tool,tool,ai,tool,ai" {
					t.Fatalf("history %s", types(msgs))
				}
			},
		},
		{
			name: "oversized result",
			tools: func(t *testing.T) []agents.Tool {
				return []agents.Tool{mustTool(t, "dump", func(context.Context, struct{}) (any, error) {
					return strings.Repeat("x", 100_000), nil
				})}
			},
			turns: []localprovider.Turn{
				{ToolCalls: []localprovider.ToolCall{{ID: "call_1", Name: "dump"}}},
				final,
			},
			check: func(t *testing.T, p provider, reqs []localprovider.Request, msgs []models.Message) {
				marker := "\n[truncated: the result was 100000 bytes; only the first 65536 are shown]"
				want := strings.Repeat("x", agents.DefaultMaxResultBytes) + marker
				got := resultsSent(t, reqs[1])
				if len(got) != 1 {
					t.Fatalf("the model was sent %d results, want 1", len(got))
				}
				if text := got[0].Text; text != want || got[0].IsError {
					t.Fatalf("the model was sent a result of %d bytes ending %q, want %d bytes ending with the marker", len(text), text[max(0, len(text)-80):], len(want))
				}
				if msgs[2].Text() != want {
					t.Fatalf("the stored result is %d bytes, want the truncated %d", len(msgs[2].Text()), len(want))
				}
			},
		},
	}
	for _, p := range providers {
		for _, kind := range graphKinds {
			for _, tc := range cases {
				t.Run(p.name+"/"+kind.name+"/"+tc.name, func(t *testing.T) {
					t.Parallel()
					s, model := newDouble(t, p)
					s.Script(tc.turns...)
					g := kind.build(t, model, tc.tools(t), engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
					out, err := g.invoke(t.Context(), engine.Update{"messages": "What is the weather?"}, &engine.RunOptions{ThreadID: "t"})
					if err != nil {
						t.Fatal(err)
					}
					if s.Pending() != 0 {
						t.Fatalf("%d scripted turns were never asked for", s.Pending())
					}
					reqs := s.Requests()
					if reqs[0].Anthropic == nil && reqs[0].OpenAI == nil {
						t.Fatalf("first request did not decode: %s", reqs[0].Body)
					}
					_, msgs := stateMessages(t, g, "t")
					if types(out) != types(msgs) {
						t.Fatalf("Invoke returned %s, the thread holds %s", types(out), types(msgs))
					}
					tc.check(t, p, reqs, msgs)
				})
			}
		}
	}
}

// A tool that fails, with the default error handling, fails the task with
// an error naming the tool and the call. The thread keeps the state before
// the failing step (the AI message with its calls) and nothing of the
// failed call; a run with no input, once the cause is fixed, runs the
// failed call again and finishes.
//
// What a sibling call that succeeded leaves depends on the graph, as
// upstream: the ReAct agent V2 runs each call as its own task, whose
// result is kept as a pending write (GetState shows it, the resume does
// not run it again); a ToolNode reached by an edge (V1, the plain graph)
// runs every call in one task, which fails as a whole and runs again
// whole.
func TestProviderToolFailureResumes(t *testing.T) {
	t.Parallel()
	want := map[string]struct {
		kept        string // the history GetState shows after the failure
		weatherRuns int32
	}{
		"react":    {"human,ai,tool", 1},
		"react-v1": {"human,ai", 2},
		"toolnode": {"human,ai", 2},
	}
	for _, p := range providers {
		for _, kind := range graphKinds {
			t.Run(p.name+"/"+kind.name, func(t *testing.T) {
				t.Parallel()
				s, model := newDouble(t, p)
				var weatherRuns, bookRuns atomic.Int32
				var broken atomic.Bool
				broken.Store(true)
				weather := cityTool(t, func(context.Context, string) error { weatherRuns.Add(1); return nil })
				type bookArgs struct {
					City string `json:"city"`
				}
				book := mustTool(t, "book", func(_ context.Context, a bookArgs) (any, error) {
					bookRuns.Add(1)
					if broken.Load() {
						return nil, errors.New("booking service unavailable")
					}
					return "booked a table in " + a.City, nil
				})
				s.Script(localprovider.Turn{Text: "On it.", ToolCalls: []localprovider.ToolCall{
					{ID: "call_1", Name: "weather", Args: `{"city":"Paris"}`},
					{ID: "call_2", Name: "book", Args: `{"city":"Paris"}`},
				}})
				g := kind.build(t, model, []agents.Tool{weather, book}, engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
				opts := &engine.RunOptions{ThreadID: "t"}
				_, err := g.invoke(t.Context(), engine.Update{"messages": "Weather in Paris, and book a table?"}, opts)
				if err == nil || !strings.Contains(err.Error(), `tool "book" (call call_2): booking service unavailable`) {
					t.Fatalf("run error %v, want the tool's error naming the tool and its call", err)
				}
				snap, msgs := stateMessages(t, g, "t")
				w := want[kind.name]
				if types(msgs) != w.kept || len(msgs[1].ToolCalls) != 2 || msgs[1].Text() != "On it." {
					t.Fatalf("after the failure the thread holds %s, want %s: %+v", types(msgs), w.kept, msgs)
				}
				for _, m := range msgs[2:] {
					if m.ToolCallID != "call_1" || m.Text() != "18°C in Paris" {
						t.Fatalf("after the failure the thread holds a result other than the successful call's: %+v", m)
					}
				}
				if fmt.Sprint(snap.Next) != "[tools]" {
					t.Fatalf("next %v, want the failed tools task again", snap.Next)
				}
				failed := false
				for _, task := range snap.Tasks {
					failed = failed || strings.Contains(task.Error, "booking service unavailable")
				}
				if !failed {
					t.Fatalf("no task of the head checkpoint records the error: %+v", snap.Tasks)
				}
				if n := len(s.Requests()); n != 1 {
					t.Fatalf("%d model requests, want 1: the model is not called after a failed step", n)
				}

				broken.Store(false)
				s.Script(localprovider.Turn{Text: "Booked; 18°C in Paris."})
				out, err := g.invoke(t.Context(), nil, opts)
				if err != nil {
					t.Fatal(err)
				}
				if types(out) != "human,ai,tool,tool,ai" || out[4].Text() != "Booked; 18°C in Paris." {
					t.Fatalf("after the resume: %s %+v", types(out), out)
				}
				wantResults(t, p, s.Requests(), 2,
					sentResult{ID: "call_1", Text: "18°C in Paris"},
					sentResult{ID: "call_2", Text: "booked a table in Paris"})
				if weatherRuns.Load() != w.weatherRuns || bookRuns.Load() != 2 {
					t.Fatalf("weather ran %d times, book %d: want %d and 2", weatherRuns.Load(), bookRuns.Load(), w.weatherRuns)
				}
			})
		}
	}
}

// events collects a run's retry and failure events.
type events struct {
	mu      sync.Mutex
	retried []engine.TaskRetried
	failed  []engine.TaskFailed
}

func (e *events) listen(ev engine.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch v := ev.(type) {
	case engine.TaskRetried:
		e.retried = append(e.retried, v)
	case engine.TaskFailed:
		e.failed = append(e.failed, v)
	}
}

// A provider fault on the model call after the tools ran is retried by
// the node's retry policy (a TaskRetried event, after the provider's
// retry-after when it gave one) and the loop completes; when the retries
// run out, the run fails with the provider's error and the thread keeps
// the history so far, from which a later run goes on.
func TestProviderFaultsInAgentLoop(t *testing.T) {
	t.Parallel()
	policy := engine.RetryPolicy{MaxAttempts: 3, MaxInterval: 20 * time.Millisecond}
	firstTurn := localprovider.Turn{Text: "Checking.", ToolCalls: []localprovider.ToolCall{{ID: "call_1", Name: "weather", Args: `{"city":"Paris"}`}}}
	cases := []struct {
		name   string
		faults []localprovider.Fault
		// status is the ProviderError's status each fault is, per provider.
		status map[string]int
		// backoff is the wait of the first retry.
		backoff   time.Duration
		midstream bool
	}{
		{name: "429 retry-after-ms", faults: []localprovider.Fault{{Status: 429, RetryAfterMs: "5"}},
			status: map[string]int{"anthropic": 429, "openai": 429}, backoff: 5 * time.Millisecond},
		{name: "429 retry-after seconds, capped by the policy", faults: []localprovider.Fault{{Status: 429, RetryAfter: "30"}},
			status: map[string]int{"anthropic": 429, "openai": 429}, backoff: 20 * time.Millisecond},
		{name: "529 overloaded", faults: []localprovider.Fault{{Status: 529}},
			status: map[string]int{"anthropic": 529, "openai": 529}},
		{name: "mid-stream error", faults: []localprovider.Fault{{Midstream: localprovider.ErrorEvent, AfterDeltas: 1}},
			status: map[string]int{"anthropic": 529, "openai": 500}, midstream: true},
		{name: "retries exhausted", faults: []localprovider.Fault{{Status: 529}, {Status: 529}, {Status: 529}},
			status: map[string]int{"anthropic": 529, "openai": 529}},
	}
	for _, p := range providers {
		for _, tc := range cases {
			t.Run(p.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				s, model := newDouble(t, p)
				s.Script(firstTurn)
				for _, f := range tc.faults {
					s.Script(localprovider.Turn{Chunks: []string{"Partial ", "answer."}, Fault: &f})
				}
				exhausted := len(tc.faults) >= policy.MaxAttempts
				if !exhausted {
					s.Script(localprovider.Turn{Chunks: []string{"It is ", "18°C in Paris."}})
				}
				g := graphKinds[0].build(t, model, []agents.Tool{cityTool(t, nil)}, engine.CompileOptions{
					Checkpointer: checkpoints.NewMemory(), Retry: []engine.RetryPolicy{policy},
				})
				var ev events
				opts := &engine.RunOptions{ThreadID: "t", Listener: ev.listen}
				_, err := g.invoke(t.Context(), engine.Update{"messages": "Weather in Paris?"}, opts)

				ev.mu.Lock()
				retried, failed := ev.retried, ev.failed
				ev.mu.Unlock()
				wantRetries := min(len(tc.faults), policy.MaxAttempts-1)
				if len(retried) != wantRetries {
					t.Fatalf("%d TaskRetried events, want %d (run error: %v)", len(retried), wantRetries, err)
				}
				for i, r := range retried {
					var pe *models.ProviderError
					if r.Task.Name != agents.NodeAgent || r.Attempt != i+1 || !errors.As(r.Err, &pe) {
						t.Fatalf("retry %d: %+v", i, r)
					}
					if pe.Status != tc.status[p.name] || pe.Midstream != tc.midstream || pe.Provider != p.name {
						t.Fatalf("retry %d: provider error %+v, want status %d, midstream %v", i, pe, tc.status[p.name], tc.midstream)
					}
					if strings.Contains(r.Err.Error(), providerTestKey) {
						t.Fatalf("the API key is in the retried error: %v", r.Err)
					}
				}
				if retried[0].Backoff != tc.backoff {
					t.Fatalf("first retry waited %s, want %s", retried[0].Backoff, tc.backoff)
				}

				if exhausted {
					var pe *models.ProviderError
					if !errors.As(err, &pe) || pe.Status != 529 || !strings.Contains(strings.ToLower(err.Error()), "overloaded") {
						t.Fatalf("run error %v, want the provider's 529 overloaded error", err)
					}
					if len(failed) != 1 || failed[0].Attempts != policy.MaxAttempts || failed[0].Task.Name != agents.NodeAgent {
						t.Fatalf("TaskFailed events %+v, want one for agent after %d attempts", failed, policy.MaxAttempts)
					}
					snap, msgs := stateMessages(t, g, "t")
					if types(msgs) != "human,ai,tool" || msgs[2].Text() != "18°C in Paris" {
						t.Fatalf("after the failure the thread holds %s: %+v", types(msgs), msgs)
					}
					if fmt.Sprint(snap.Next) != "[agent]" {
						t.Fatalf("next %v, want [agent]", snap.Next)
					}
					// The provider is back: the run goes on from the history kept.
					s.Script(localprovider.Turn{Text: "It is 18°C in Paris."})
					if _, err = g.invoke(t.Context(), nil, &engine.RunOptions{ThreadID: "t"}); err != nil {
						t.Fatal(err)
					}
				} else if err != nil {
					t.Fatal(err)
				}
				_, msgs := stateMessages(t, g, "t")
				if types(msgs) != "human,ai,tool,ai" || msgs[3].Text() != "It is 18°C in Paris." {
					t.Fatalf("history %s: %+v", types(msgs), msgs)
				}
				if s.Pending() != 0 {
					t.Fatalf("%d scripted turns were never asked for", s.Pending())
				}
				// Every retry sent the same conversation again, the tool result included.
				reqs := s.Requests()
				for n := 2; n <= len(reqs); n++ {
					wantResults(t, p, reqs, n, sentResult{ID: "call_1", Text: "18°C in Paris"})
				}
			})
		}
	}
}
