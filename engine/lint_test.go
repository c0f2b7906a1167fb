package engine_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/engine"
)

func route(dests ...string) func(context.Context, logState) (engine.Route, error) {
	return func(context.Context, logState) (engine.Route, error) { return engine.Route{To: dests}, nil }
}

func warningsOf(t *testing.T, g *engine.StateGraph[logState]) []engine.Warning {
	t.Helper()
	cg, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cg.Warnings()
}

func TestLintFanIn(t *testing.T) {
	t.Parallel()
	// Parallel branches whose lengths differ only through a router's
	// "skip" choice: n can be reached twice.
	g := engine.NewStateGraph[logState]()
	for _, n := range []string{"a", "a2", "b", "b2", "c", "d", "n"} {
		g.AddNode(n, logNode(n))
	}
	g.AddEdge(engine.Start, "a").AddEdge(engine.Start, "b")
	g.AddConditionalEdges("a", route("c"), map[string]string{"long": "a2", "skip": "c"})
	g.AddEdge("a2", "c")
	g.AddConditionalEdges("b", route("d"), map[string]string{"long": "b2", "skip": "d"})
	g.AddEdge("b2", "d").AddEdge("c", "n").AddEdge("d", "n")
	ws := warningsOf(t, g)
	i := slices.IndexFunc(ws, func(w engine.Warning) bool { return w.Kind == engine.WarnFanIn && w.Node == "n" })
	if i < 0 {
		t.Fatalf("no fan-in warning on n: %v", ws)
	}
	if want := `AddJoin([]string{"c", "d"}, "n")`; !strings.Contains(ws[i].Suggestion, want) {
		t.Fatalf("suggestion %q does not contain %s", ws[i].Suggestion, want)
	}
	if slices.ContainsFunc(ws, func(w engine.Warning) bool { return w.Node == "c" || w.Node == "d" }) {
		t.Fatalf("router alternatives are exclusive, yet warned: %v", ws)
	}

	// A loop back to a node is intended, not a fan-in.
	loop := engine.NewStateGraph[logState]()
	loop.AddNode("agent", logNode("agent")).AddNode("tools", logNode("tools"))
	loop.AddEdge(engine.Start, "agent").AddEdge("tools", "agent")
	loop.AddConditionalEdges("agent", route(engine.End), map[string]string{"tools": "tools", "end": engine.End})
	if ws := warningsOf(t, loop); len(ws) != 0 {
		t.Fatalf("agent loop warned: %v", ws)
	}
}

func TestLintUnreachableAndCannotEnd(t *testing.T) {
	t.Parallel()
	g := engine.NewStateGraph[logState]()
	g.AddNode("a", logNode("a")).AddNode("island", logNode("island")).AddNode("x", logNode("x")).AddNode("y", logNode("y"))
	g.AddEdge(engine.Start, "a").AddEdge("a", "x").AddEdge("x", "y").AddEdge("y", "x")
	ws := warningsOf(t, g)
	kinds := map[string]engine.WarningKind{}
	for _, w := range ws {
		kinds[w.Node+"/"+string(w.Kind)] = w.Kind
	}
	for _, want := range []string{"island/unreachable", "x/cannot-end", "y/cannot-end", "a/cannot-end"} {
		if _, ok := kinds[want]; !ok {
			t.Errorf("missing %s in %v", want, ws)
		}
	}
}

func TestNodeBuilderNamed(t *testing.T) {
	t.Parallel()
	n, err := engine.NewNode().Named("double").SubscribeOnly("in").Do(func(_ context.Context, v any) (any, error) { return v.(int) * 2, nil }).WriteTo("out").Build()
	if err != nil || n.Name != "double" {
		t.Fatalf("%+v %v", n, err)
	}
}
