package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/agents"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models"
)

type weatherArgs struct {
	City string `json:"city" jsonschema:"description=City name"`
	Unit string `json:"unit,omitempty" jsonschema:"enum=c,enum=f"`
	Days int    `json:"days,omitempty"`
}

func weatherTool(t *testing.T) agents.Tool {
	t.Helper()
	tool, err := agents.NewTool("weather", "Weather for a city.", func(_ context.Context, a weatherArgs) (any, error) {
		if a.City == "Atlantis" {
			return nil, errors.New("no station in Atlantis")
		}
		return "18°C in " + a.City, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func mustTool[A any](t *testing.T, name string, fn func(context.Context, A) (any, error)) agents.Tool {
	t.Helper()
	tool, err := agents.NewTool(name, "test tool "+name, fn)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func runNode(t *testing.T, n *agents.ToolNode, calls ...models.ToolCall) (engine.Output, error) {
	t.Helper()
	return n.Run(context.Background(), agents.ToolInput{Messages: []models.Message{
		models.Human("hi"), models.AIWithToolCalls("", calls...),
	}})
}

func messagesOut(t *testing.T, out engine.Output) []models.Message {
	t.Helper()
	u, ok := out.(engine.Update)
	if !ok {
		t.Fatalf("output is %T, want engine.Update", out)
	}
	return u["messages"].([]models.Message)
}

func TestNewToolSchema(t *testing.T) {
	t.Parallel()
	spec := weatherTool(t).Spec()
	got, _ := json.Marshal(spec.Parameters)
	want := `{"additionalProperties":false,"properties":{"city":{"description":"City name","type":"string"},"days":{"type":"integer"},"unit":{"enum":["c","f"],"type":"string"}},"required":["city"],"type":"object"}`
	if string(got) != want {
		t.Fatalf("schema\n got %s\nwant %s", got, want)
	}
	if spec.Name != "weather" || spec.Description != "Weather for a city." {
		t.Fatalf("spec = %+v", spec)
	}
	if _, err := agents.NewTool("bad name", "", func(context.Context, weatherArgs) (any, error) { return nil, nil }); !errors.Is(err, agents.ErrInvalidTool) {
		t.Fatalf("a name with a space: %v", err)
	}
	if _, err := agents.NewTool("n", "", func(context.Context, int) (any, error) { return nil, nil }); !errors.Is(err, agents.ErrInvalidTool) {
		t.Fatalf("non-struct args: %v", err)
	}
}

func TestToolArgumentErrors(t *testing.T) {
	t.Parallel()
	tool := weatherTool(t)
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"missing required", map[string]any{}, "city: field required"},
		{"unknown field", map[string]any{"city": "Paris", "country": "FR"}, "country: extra inputs are not permitted"},
		{"wrong type", map[string]any{"city": 42}, "city: expected string, got number"},
		{"wrong type int", map[string]any{"city": "Paris", "days": "two"}, "days: expected int, got string"},
		{"not in enum", map[string]any{"city": "Paris", "unit": "k"}, `unit: must be one of ["c","f"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tool.Invoke(context.Background(), tc.args)
			var ae *agents.ArgumentError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v, want an ArgumentError", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "Error invoking tool 'weather' with kwargs") {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
	out, err := tool.Invoke(context.Background(), map[string]any{"city": "Paris", "unit": "c", "days": 2.0})
	if err != nil || out != "18°C in Paris" {
		t.Fatalf("valid call: %v, %v", out, err)
	}
}

func TestToolNodeParallelKeepsOrder(t *testing.T) {
	t.Parallel()
	bStarted := make(chan struct{})
	slow := mustTool(t, "slow", func(ctx context.Context, _ struct{}) (any, error) {
		<-bStarted // finishes only once the other call has started: they run in parallel
		return "slow done", nil
	})
	fast := mustTool(t, "fast", func(ctx context.Context, _ struct{}) (any, error) {
		close(bStarted)
		rt, _ := agents.RuntimeFrom(ctx)
		return map[string]any{"call": rt.ToolCall.ID}, nil
	})
	n, err := agents.NewToolNode([]agents.Tool{slow, fast}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := runNode(t, n, toolCall("c1", "slow", nil), toolCall("c2", "fast", nil))
	if err != nil {
		t.Fatal(err)
	}
	msgs := messagesOut(t, out)
	if len(msgs) != 2 || msgs[0].ToolCallID != "c1" || msgs[1].ToolCallID != "c2" {
		t.Fatalf("messages out of call order: %+v", msgs)
	}
	if msgs[0].Text() != "slow done" || msgs[1].Text() != `{"call":"c2"}` || msgs[1].Name != "fast" || msgs[1].Status != models.StatusSuccess {
		t.Fatalf("contents: %q %q %+v", msgs[0].Text(), msgs[1].Text(), msgs[1])
	}
}

func TestToolNodeBadCalls(t *testing.T) {
	t.Parallel()
	n, err := agents.NewToolNode([]agents.Tool{weatherTool(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := runNode(t, n,
		toolCall("c1", "wheather", map[string]any{"city": "Paris"}),
		toolCall("c2", "weather", map[string]any{"town": "Paris"}),
		toolCall("c3", "weather", map[string]any{"city": "Paris"}),
	)
	if err != nil {
		t.Fatal(err)
	}
	msgs := messagesOut(t, out)
	if got := msgs[0]; got.Status != models.StatusError || got.Text() != "Error: wheather is not a valid tool, try one of [weather]." {
		t.Fatalf("unknown tool: %+v", got)
	}
	if got := msgs[1]; got.Status != models.StatusError || !strings.Contains(got.Text(), "city: field required") || !strings.Contains(got.Text(), "town: extra inputs are not permitted") {
		t.Fatalf("invalid arguments: %q", got.Text())
	}
	if got := msgs[2]; got.Status != models.StatusSuccess || got.Text() != "18°C in Paris" {
		t.Fatalf("good call beside bad ones: %+v", got)
	}

	// Arguments that were not JSON at all arrive as invalid tool calls.
	ai := models.Message{Type: models.TypeAI, InvalidToolCalls: []models.InvalidToolCall{{ID: "c9", Name: "weather", Args: `{"city": "Par`, Error: "unexpected end of JSON"}}}
	if to, _ := agents.ToolsCondition([]models.Message{ai}); to != "tools" {
		t.Fatalf("ToolsCondition on an invalid call = %q", to)
	}
	out, err = n.Run(context.Background(), agents.ToolInput{Messages: []models.Message{ai}})
	if err != nil {
		t.Fatal(err)
	}
	if got := messagesOut(t, out)[0]; got.Status != models.StatusError || got.ToolCallID != "c9" || !strings.Contains(got.Text(), "not a JSON object") {
		t.Fatalf("malformed arguments: %+v", got)
	}
}

func TestToolNodeExecutionErrors(t *testing.T) {
	t.Parallel()
	atlantis := toolCall("c1", "weather", map[string]any{"city": "Atlantis"})
	for _, tc := range []struct {
		name   string
		handle agents.ErrorHandler
		want   string // "" is a task error
	}{
		{"default raises", nil, ""},
		{"all", agents.HandleAllErrors, "Error: no station in Atlantis\n Please fix your mistakes."},
		{"text", agents.HandleErrorsWith("the weather service is down"), "the weather service is down"},
		{"func", func(err error) (string, bool) { return "custom: " + err.Error(), true }, "custom: no station in Atlantis"},
		{"raise", agents.RaiseErrors, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n, err := agents.NewToolNode([]agents.Tool{weatherTool(t)}, &agents.ToolNodeOptions{HandleErrors: tc.handle})
			if err != nil {
				t.Fatal(err)
			}
			out, err := runNode(t, n, atlantis)
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), "no station in Atlantis") {
					t.Fatalf("want the tool's error, got %v, %v", out, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := messagesOut(t, out)[0]; got.Status != models.StatusError || got.Text() != tc.want || got.Name != "weather" {
				t.Fatalf("got %+v, want %q", got, tc.want)
			}
		})
	}
	// RaiseErrors raises argument errors too.
	n, _ := agents.NewToolNode([]agents.Tool{weatherTool(t)}, &agents.ToolNodeOptions{HandleErrors: agents.RaiseErrors})
	if _, err := runNode(t, n, toolCall("c1", "weather", nil)); err == nil {
		t.Fatal("RaiseErrors answered an argument error")
	}
}

func TestToolNodeTruncates(t *testing.T) {
	t.Parallel()
	big := mustTool(t, "big", func(context.Context, struct{}) (any, error) { return strings.Repeat("é", 100), nil })
	n, _ := agents.NewToolNode([]agents.Tool{big}, &agents.ToolNodeOptions{MaxResultBytes: 51})
	out, err := runNode(t, n, toolCall("c1", "big", nil))
	if err != nil {
		t.Fatal(err)
	}
	got := messagesOut(t, out)[0].Text()
	want := strings.Repeat("é", 25) + "\n[truncated: the result was 200 bytes; only the first 50 are shown]"
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	n, _ = agents.NewToolNode([]agents.Tool{big}, &agents.ToolNodeOptions{MaxResultBytes: -1})
	out, _ = runNode(t, n, toolCall("c1", "big", nil))
	if got := messagesOut(t, out)[0].Text(); len(got) != 200 {
		t.Fatalf("no limit cut the result: %d bytes", len(got))
	}
}

func TestToolNodeCommand(t *testing.T) {
	t.Parallel()
	setName := mustTool(t, "set_name", func(ctx context.Context, a struct {
		Name string `json:"name"`
	}) (any, error) {
		rt, _ := agents.RuntimeFrom(ctx)
		return engine.Command{
			Update: engine.Update{"name": a.Name, "messages": []models.Message{models.ToolResult(rt.ToolCall.ID, models.Text("saved"))}},
			Goto:   []any{"greet"},
		}, nil
	})
	forgetful := mustTool(t, "forgetful", func(context.Context, struct{}) (any, error) {
		return engine.Command{Update: engine.Update{"name": "x"}}, nil
	})
	n, _ := agents.NewToolNode([]agents.Tool{weatherTool(t), setName, forgetful}, nil)
	out, err := runNode(t, n, toolCall("c1", "weather", map[string]any{"city": "Oslo"}), toolCall("c2", "set_name", map[string]any{"name": "Ada"}))
	if err != nil {
		t.Fatal(err)
	}
	cmd, ok := out.(engine.Command)
	if !ok {
		t.Fatalf("output is %T, want a Command", out)
	}
	ups := cmd.Update.(engine.Updates)
	if len(ups) != 3 || ups[0].Key != "messages" || ups[1].Key != "messages" || ups[2].Key != "name" || len(cmd.Goto) != 1 {
		t.Fatalf("merged command: %+v", cmd)
	}
	if m := ups[0].Value.(models.Message); m.ToolCallID != "c1" {
		t.Fatalf("first write is not the first call's: %+v", m)
	}
	if _, err := runNode(t, n, toolCall("c3", "forgetful", nil)); err == nil || !strings.Contains(err.Error(), "without a ToolMessage") {
		t.Fatalf("a Command without its ToolMessage: %v", err)
	}
}

func TestToolsCondition(t *testing.T) {
	t.Parallel()
	type custom struct {
		Messages []models.Message `json:"messages"`
	}
	withCalls := models.AIWithToolCalls("", toolCall("c1", "weather", nil))
	for _, tc := range []struct {
		name  string
		state any
		want  string
	}{
		{"slice with calls", []models.Message{models.Human("hi"), withCalls}, "tools"},
		{"slice without", []models.Message{models.Human("hi"), models.AI("hello")}, engine.End},
		{"MessagesState", models.MessagesState{Messages: []models.Message{withCalls}}, "tools"},
		{"custom struct pointer", &custom{Messages: []models.Message{models.AI("x")}}, engine.End},
		{"map", map[string]any{"messages": []any{map[string]any{"role": "assistant", "content": "x"}}}, engine.End},
		{"last is a tool message", []models.Message{withCalls, models.ToolResult("c1", models.Text("ok"))}, engine.End},
	} {
		got, err := agents.ToolsCondition(tc.state)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if _, err := agents.ToolsCondition(models.MessagesState{}); err == nil {
		t.Error("no messages: no error")
	}
	if _, err := agents.ToolsCondition(42); err == nil {
		t.Error("an int state: no error")
	}
	r, err := agents.ToolsRoute(context.Background(), models.MessagesState{Messages: []models.Message{withCalls}})
	if err != nil || len(r.To)+len(r.Sends) > 1 {
		t.Fatalf("ToolsRoute: %+v, %v", r, err)
	}
}
