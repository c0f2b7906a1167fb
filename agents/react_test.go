package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/agents"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models"
)

func ai(id, text string, calls ...models.ToolCall) models.Message {
	m := models.AIWithToolCalls(text, calls...)
	m.ID = id
	return m
}

func compileAgent(t *testing.T, model models.ChatModel, tools []agents.Tool, opts *agents.ReactOptions) *engine.Graph[agents.AgentState] {
	t.Helper()
	if opts == nil {
		opts = &agents.ReactOptions{}
	}
	opts.Compile.Checkpointer = checkpoints.NewMemory()
	g, err := agents.NewReactAgent(model, tools, opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func cfg(thread string) checkpoints.Config { return checkpoints.Config{ThreadID: thread} }

func types(msgs []models.Message) string {
	var s []string
	for _, m := range msgs {
		s = append(s, m.Type)
	}
	return strings.Join(s, ",")
}

func TestReactAgentLoop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	model := newScripted(
		ai("a1", "Checking.", toolCall("c1", "weather", map[string]any{"city": "Paris"}), toolCall("c2", "weather", map[string]any{"city": "Oslo"})),
		ai("a2", "Paris 18°C, Oslo 18°C."),
	)
	g := compileAgent(t, model, []agents.Tool{weatherTool(t)}, &agents.ReactOptions{Name: "forecaster", Prompt: "You are terse."})
	opts := &engine.RunOptions{ThreadID: "t1"}
	var chunks []string
	for part, err := range g.Stream(ctx, engine.Update{"messages": "Weather in Paris and Oslo?"}, opts, engine.StreamMessages) {
		if err != nil {
			t.Fatal(err)
		}
		pair := part.Data.([]any) // [chunk, metadata], as upstream
		md, _ := pair[1].(map[string]any)
		if m, ok := pair[0].(models.Message); ok && md["langgraph_node"] == "agent" && m.Type == models.TypeAIChunk {
			chunks = append(chunks, m.Text())
		}
	}
	if got := strings.Join(chunks, "|"); got != "Chec|king.|Paris 18°C,| Oslo 18°C." {
		t.Fatalf("streamed chunks %q", got)
	}
	snap, err := g.GetState(ctx, cfg("t1"))
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := models.ToMessages(snap.Values["messages"])
	if err != nil {
		t.Fatal(err)
	}
	if types(msgs) != "human,ai,tool,tool,ai" || msgs[2].ToolCallID != "c1" || msgs[3].ToolCallID != "c2" {
		t.Fatalf("history %s: %+v", types(msgs), msgs)
	}
	if msgs[1].Name != "forecaster" || msgs[4].Name != "forecaster" {
		t.Fatalf("AI messages without the agent's name: %+v", msgs[4])
	}
	calls := model.recorded()
	if len(calls) != 2 || calls[0].Messages[0].Text() != "You are terse." || len(calls[0].Options.Tools) != 1 {
		t.Fatalf("model calls: %+v", calls)
	}
	if types(calls[1].Messages) != "system,human,ai,tool,tool" {
		t.Fatalf("second call saw %s", types(calls[1].Messages))
	}
	// The stored messages read as LangChain's JSON.
	b, _ := json.Marshal(msgs[2])
	want := `{"content":"18°C in Paris","additional_kwargs":{},"response_metadata":{},"type":"tool","name":"weather","id":` + mustJSON(msgs[2].ID) + `,"tool_call_id":"c1","artifact":null,"status":"success"}`
	if string(b) != want {
		t.Fatalf("tool message JSON\n got %s\nwant %s", b, want)
	}
	hist, err := g.GetStateHistory(ctx, cfg("t1"), engine.HistoryOptions{})
	if err != nil || len(hist) < 4 {
		t.Fatalf("history: %d checkpoints, %v", len(hist), err)
	}
	if _, ok := snap.Values["remaining_steps"]; ok {
		t.Fatalf("remaining_steps was saved: %v", snap.Values["remaining_steps"])
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestReactAgentV1(t *testing.T) {
	t.Parallel()
	model := newScripted(ai("a1", "", toolCall("c1", "weather", map[string]any{"city": "Rome"})), ai("a2", "done"))
	g := compileAgent(t, model, []agents.Tool{weatherTool(t)}, &agents.ReactOptions{Version: agents.V1})
	out, err := g.Invoke(context.Background(), engine.Update{"messages": "Rome?"}, &engine.RunOptions{ThreadID: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	if types(out.Messages) != "human,ai,tool,ai" || out.Messages[2].Text() != "18°C in Rome" {
		t.Fatalf("v1 history %s", types(out.Messages))
	}
}

func TestReactAgentInterruptInTool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ran := 0
	approve := mustTool(t, "publish", func(ctx context.Context, a struct {
		Severity float64 `json:"severity"`
	}) (any, error) {
		ran++
		ok, err := engine.Interrupt(ctx, map[string]any{"publish severity": a.Severity})
		if err != nil {
			return nil, err
		}
		return "published: " + ok.(string), nil
	})
	model := newScripted(ai("a1", "", toolCall("c1", "publish", map[string]any{"severity": 9.8})), ai("a2", "Published."))
	// HandleAllErrors must not swallow the interrupt.
	g := compileAgent(t, model, []agents.Tool{approve}, &agents.ReactOptions{ToolNode: &agents.ToolNodeOptions{HandleErrors: agents.HandleAllErrors}})
	opts := &engine.RunOptions{ThreadID: "hitl"}
	_, err := g.Invoke(ctx, engine.Update{"messages": "publish it"}, opts)
	var intr *engine.Interrupted
	if !errors.As(err, &intr) || len(intr.Interrupts) != 1 || intr.Interrupts[0].Node != "tools" {
		t.Fatalf("want an interrupt from the tools node, got %v", err)
	}
	snap, _ := g.GetState(ctx, cfg("hitl"))
	if msgs, _ := models.ToMessages(snap.Values["messages"]); types(msgs) != "human,ai" {
		t.Fatalf("state at the interrupt: %s", types(msgs))
	}
	out, err := g.Invoke(ctx, engine.Command{Resume: "yes"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if types(out.Messages) != "human,ai,tool,ai" || out.Messages[2].Text() != "published: yes" || ran != 2 {
		t.Fatalf("after resume: %s %q (tool ran %d times)", types(out.Messages), out.Messages[2].Text(), ran)
	}
}

func TestReactAgentToolFailureKeepsState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	model := newScripted(ai("a1", "", toolCall("c1", "weather", map[string]any{"city": "Atlantis"})))
	g := compileAgent(t, model, []agents.Tool{weatherTool(t)}, nil)
	_, err := g.Invoke(ctx, engine.Update{"messages": "Atlantis?"}, &engine.RunOptions{ThreadID: "fail"})
	if err == nil || !strings.Contains(err.Error(), "no station in Atlantis") {
		t.Fatalf("want the tool's error, got %v", err)
	}
	snap, err := g.GetState(ctx, cfg("fail"))
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := models.ToMessages(snap.Values["messages"])
	if types(msgs) != "human,ai" || msgs[1].ToolCalls[0].ID != "c1" || len(snap.Next) != 1 || snap.Next[0] != "tools" {
		t.Fatalf("state after the failed step: %s, next %v", types(msgs), snap.Next)
	}
}

func TestReactAgentBadCallsGoBackToModel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	malformed := models.Message{Type: models.TypeAI, ID: "a1", Content: models.Blocks(),
		ToolCalls:        []models.ToolCall{toolCall("c1", "nope", nil), toolCall("c2", "weather", map[string]any{"city": 3})},
		InvalidToolCalls: []models.InvalidToolCall{{ID: "c3", Name: "weather", Args: "{", Error: "bad JSON"}}}
	model := newScripted(malformed, ai("a2", "Sorry."))
	g := compileAgent(t, model, []agents.Tool{weatherTool(t)}, nil)
	out, err := g.Invoke(ctx, engine.Update{"messages": "?"}, &engine.RunOptions{ThreadID: "bad"})
	if err != nil {
		t.Fatal(err)
	}
	if types(out.Messages) != "human,ai,tool,tool,tool,ai" {
		t.Fatalf("history %s", types(out.Messages))
	}
	for _, m := range out.Messages[2:5] {
		if m.Status != models.StatusError {
			t.Fatalf("not an error: %+v", m)
		}
	}
}

func TestReactAgentNeedsMoreSteps(t *testing.T) {
	t.Parallel()
	model := newScripted(
		ai("a1", "", toolCall("c1", "weather", map[string]any{"city": "Paris"})),
		ai("a2", "", toolCall("c2", "weather", map[string]any{"city": "Oslo"})),
	)
	// With a limit of 4 the first model call has two supersteps after
	// it (tools, agent); the second has none left for its tool call.
	g := compileAgent(t, model, []agents.Tool{weatherTool(t)}, nil)
	out, err := g.Invoke(context.Background(), engine.Update{"messages": "?"}, &engine.RunOptions{ThreadID: "steps", RecursionLimit: 4})
	if err != nil {
		t.Fatal(err)
	}
	last := out.Messages[len(out.Messages)-1]
	if types(out.Messages) != "human,ai,tool,ai" || last.Text() != agents.NeedMoreSteps || last.ID != "a2" || len(last.ToolCalls) != 0 {
		t.Fatalf("history %s, last %+v", types(out.Messages), last)
	}
	// A second run on the thread has its full budget again: its first
	// tool call runs. (At the next model call no step is left, and, as
	// upstream, a reply without tool calls is replaced too.)
	model.replies = []models.Message{ai("a3", "", toolCall("c3", "weather", map[string]any{"city": "Rome"})), ai("a4", "Rome.")}
	out, err = g.Invoke(context.Background(), engine.Update{"messages": "Rome?"}, &engine.RunOptions{ThreadID: "steps", RecursionLimit: 4})
	if err != nil {
		t.Fatal(err)
	}
	if types(out.Messages[4:]) != "human,ai,tool,ai" || out.Messages[6].Text() != "18°C in Rome" {
		t.Fatalf("second run: %s", types(out.Messages))
	}
}

func TestReactAgentStructuredResponse(t *testing.T) {
	t.Parallel()
	model := newScripted(ai("a1", "It is sunny."), ai("s1", `{"sky":"sunny"}`))
	schema := &models.ResponseSchema{Name: "weather", Schema: map[string]any{"type": "object", "properties": map[string]any{"sky": map[string]any{"type": "string"}}}}
	g := compileAgent(t, model, []agents.Tool{weatherTool(t)}, &agents.ReactOptions{ResponseFormat: schema, ResponsePrompt: "Answer in JSON."})
	out, err := g.Invoke(context.Background(), engine.Update{"messages": "sky?"}, &engine.RunOptions{ThreadID: "so"})
	if err != nil {
		t.Fatal(err)
	}
	if out.StructuredResponse["sky"] != "sunny" || types(out.Messages) != "human,ai" {
		t.Fatalf("structured %v, history %s", out.StructuredResponse, types(out.Messages))
	}
	calls := model.recorded()
	if c := calls[1]; c.Options.Response != schema || len(c.Options.Tools) != 0 || c.Messages[0].Text() != "Answer in JSON." {
		t.Fatalf("structured call: %+v", c)
	}

	bad := newScripted(ai("a1", "hi"), ai("s1", "not json"))
	g = compileAgent(t, bad, nil, &agents.ReactOptions{ResponseFormat: schema})
	if _, err := g.Invoke(context.Background(), engine.Update{"messages": "?"}, &engine.RunOptions{ThreadID: "so"}); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Fatalf("a reply that is not JSON: %v", err)
	}
	snap, _ := g.GetState(context.Background(), cfg("so"))
	if msgs, _ := models.ToMessages(snap.Values["messages"]); types(msgs) != "human,ai" {
		t.Fatalf("state after the failed structured call: %s", types(msgs))
	}
}

func TestReactAgentHooks(t *testing.T) {
	t.Parallel()
	model := newScripted(ai("a1", "", toolCall("c1", "weather", map[string]any{"city": "Lima"})), ai("a2", "Lima is warm."))
	var post []string
	g := compileAgent(t, model, []agents.Tool{weatherTool(t)}, &agents.ReactOptions{
		PreModelHook: func(_ context.Context, s agents.AgentState) (engine.Output, error) {
			// Keep only the last message for the model; store nothing.
			return engine.Update{"llm_input_messages": s.Messages[len(s.Messages)-1:]}, nil
		},
		PostModelHook: func(_ context.Context, s agents.AgentState) (engine.Output, error) {
			post = append(post, s.Messages[len(s.Messages)-1].ID)
			return nil, nil
		},
	})
	out, err := g.Invoke(context.Background(), engine.Update{"messages": []models.Message{models.Human("old"), models.Human("Lima?")}}, &engine.RunOptions{ThreadID: "hooks"})
	if err != nil {
		t.Fatal(err)
	}
	if types(out.Messages) != "human,human,ai,tool,ai" || len(out.LLMInputMessages) != 0 {
		t.Fatalf("history %s, llm input %v", types(out.Messages), out.LLMInputMessages)
	}
	calls := model.recorded()
	if types(calls[0].Messages) != "human" || calls[0].Messages[0].Text() != "Lima?" || types(calls[1].Messages) != "tool" {
		t.Fatalf("model saw %s then %s", types(calls[0].Messages), types(calls[1].Messages))
	}
	if strings.Join(post, ",") != "a1,a2" {
		t.Fatalf("post hook saw %v", post)
	}

	// A pre-model hook may overwrite the history with RemoveAll.
	model = newScripted(ai("b1", "ok"))
	g = compileAgent(t, model, nil, &agents.ReactOptions{
		PreModelHook: func(_ context.Context, s agents.AgentState) (engine.Output, error) {
			return engine.Update{"messages": []models.Message{models.RemoveAll(), models.Human("summary")}}, nil
		},
	})
	out, err = g.Invoke(context.Background(), engine.Update{"messages": []models.Message{models.Human("a"), models.Human("b")}}, &engine.RunOptions{ThreadID: "trim"})
	if err != nil {
		t.Fatal(err)
	}
	if types(out.Messages) != "human,ai" || out.Messages[0].Text() != "summary" {
		t.Fatalf("overwritten history %s", types(out.Messages))
	}
}

func TestReactAgentReturnDirect(t *testing.T) {
	t.Parallel()
	model := newScripted(ai("a1", "", toolCall("c1", "final", nil)))
	final := agents.ReturnDirect(mustTool(t, "final", func(context.Context, struct{}) (any, error) { return "the answer", nil }))
	g := compileAgent(t, model, []agents.Tool{final, weatherTool(t)}, nil)
	out, err := g.Invoke(context.Background(), engine.Update{"messages": "?"}, &engine.RunOptions{ThreadID: "rd"})
	if err != nil {
		t.Fatal(err)
	}
	if types(out.Messages) != "human,ai,tool" || len(model.recorded()) != 1 {
		t.Fatalf("history %s after %d model calls", types(out.Messages), len(model.recorded()))
	}
}

func TestReactAgentInvalidHistory(t *testing.T) {
	t.Parallel()
	g := compileAgent(t, newScripted(ai("a1", "x")), nil, nil)
	_, err := g.Invoke(context.Background(), engine.Update{"messages": []models.Message{models.AIWithToolCalls("", toolCall("c1", "weather", nil)), models.Human("hi")}}, &engine.RunOptions{ThreadID: "h"})
	if !errors.Is(err, agents.ErrInvalidChatHistory) {
		t.Fatalf("want ErrInvalidChatHistory, got %v", err)
	}
}

// failOnce answers its first call with an overloaded provider's error.
type failOnce struct {
	*scripted
	failed bool
}

func (f *failOnce) Stream(ctx context.Context, msgs []models.Message, opts *models.CallOptions, onChunk func(models.Message) error) (models.Message, error) {
	if !f.failed {
		f.failed = true
		return models.Message{}, &models.ProviderError{Provider: "fake", Status: 529, Type: "overloaded_error", Message: "Overloaded"}
	}
	return f.scripted.Stream(ctx, msgs, opts, onChunk)
}

// The agent's model node retries a provider's retryable error with
// ReactOptions.ModelRetry (providers leave retries to the engine), and the
// retry shows as a TaskRetried event; the tools node is not retried.
func TestReactAgentRetriesModelCalls(t *testing.T) {
	t.Parallel()
	model := &failOnce{scripted: newScripted(ai("a1", "Fine."))}
	policy := engine.RetryPolicy{InitialInterval: time.Millisecond, MaxAttempts: 2}
	g := compileAgent(t, model, []agents.Tool{weatherTool(t)}, &agents.ReactOptions{ModelRetry: &policy})
	var retried []string
	opts := &engine.RunOptions{ThreadID: "retry", Listener: func(ev engine.Event) {
		if r, ok := ev.(engine.TaskRetried); ok {
			retried = append(retried, r.Task.Name)
		}
	}}
	out, err := g.Invoke(context.Background(), engine.Update{"messages": "hi"}, opts)
	if err != nil || out.Messages[len(out.Messages)-1].Text() != "Fine." {
		t.Fatalf("run = %v, %v", out.Messages, err)
	}
	if len(retried) != 1 || retried[0] != agents.NodeAgent {
		t.Fatalf("retried %v, want the agent node once", retried)
	}
}
