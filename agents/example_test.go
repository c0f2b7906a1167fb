package agents_test

import (
	"context"
	"fmt"

	"github.com/superstep-dev/superstep/agents"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models"
)

func ExampleNewReactAgent() {
	type args struct {
		City string `json:"city" jsonschema:"description=City name"`
	}
	weather, err := agents.NewTool("weather", "Current weather in a city.", func(_ context.Context, a args) (any, error) {
		return "18°C and sunny in " + a.City, nil
	})
	if err != nil {
		panic(err)
	}
	// A scripted model: a real one comes from a provider package.
	model := newScripted(
		models.AIWithToolCalls("", models.ToolCall{ID: "call-1", Name: "weather", Args: map[string]any{"city": "Paris"}}),
		models.AI("It is 18°C and sunny in Paris."),
	)
	agent, err := agents.NewReactAgent(model, []agents.Tool{weather}, &agents.ReactOptions{Name: "forecaster"})
	if err != nil {
		panic(err)
	}
	out, err := agent.Invoke(context.Background(), engine.Update{"messages": "Weather in Paris?"}, nil)
	if err != nil {
		panic(err)
	}
	for _, m := range out.Messages {
		fmt.Printf("%s: %q\n", m.Type, m.Text())
	}
	// Output:
	// human: "Weather in Paris?"
	// ai: ""
	// tool: "18°C and sunny in Paris"
	// ai: "It is 18°C and sunny in Paris."
}
