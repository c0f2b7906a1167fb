package engine_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

func collect(t *testing.T, g *engine.Graph[counter], in any, opts *engine.RunOptions, modes ...engine.StreamMode) []engine.StreamPart {
	t.Helper()
	var parts []engine.StreamPart
	for p, err := range g.Stream(context.Background(), in, opts, modes...) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		parts = append(parts, p)
	}
	return parts
}

func TestStreamValuesAndUpdatesAlternate(t *testing.T) {
	t.Parallel()
	parts := collect(t, countTo(t, 3), engine.Update{"n": 1}, nil, engine.StreamValues, engine.StreamUpdates)
	var got []any
	for _, p := range parts {
		got = append(got, string(p.Mode), p.Data)
	}
	// Upstream: the START task's update is hidden; values follow each step.
	want := []any{
		"values", map[string]any{"n": 1},
		"updates", map[string]any{"inc": map[string]any{"n": 2}}, "values", map[string]any{"n": 2},
		"updates", map[string]any{"inc": map[string]any{"n": 3}}, "values", map[string]any{"n": 3},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stream =\n%v\nwant\n%v", got, want)
	}
}

func TestStreamBreakingOutCancelsTheRun(t *testing.T) {
	t.Parallel()
	n := 0
	for range countTo(t, 1_000_000).Stream(context.Background(), engine.Update{"n": 0}, nil, engine.StreamValues) {
		n++
		if n == 3 {
			break
		}
	}
	if n != 3 {
		t.Fatalf("got %d parts", n)
	}
}

// Reference §11 case 37: with durability "exit", the first debug event is
// the input checkpoint at step -1, and checkpoint configs never equal their
// parents.
func TestDebugStreamCheckpoints(t *testing.T) {
	t.Parallel()
	saver := checkpoints.NewMemory()
	g := engine.NewStateGraph[counter]()
	g.AddNode("graph", func(_ context.Context, s counter) (engine.Output, error) { return engine.Update{"n": s.N + 1}, nil })
	g.AddEdge(engine.Start, "graph")
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []engine.Durability{engine.DurabilityExit, engine.DurabilitySync, engine.DurabilityAsync} {
		parts := collect(t, cg, engine.Update{"n": 1}, &engine.RunOptions{ThreadID: "t" + string(rune('a'+d)), Durability: d}, engine.StreamDebug)
		first := parts[0].Data.(map[string]any)
		if first["type"] != "checkpoint" || first["step"] != -1 {
			t.Fatalf("durability %d: first debug event = %v", d, first)
		}
		payload := first["payload"].(map[string]any)
		md := payload["metadata"].(map[string]any)
		if md["source"] != "input" || md["step"] != -1 || !reflect.DeepEqual(payload["next"], []string{"__start__"}) {
			t.Fatalf("durability %d: input checkpoint payload = %v", d, payload)
		}
		for _, p := range parts {
			m := p.Data.(map[string]any)
			if m["type"] != "checkpoint" {
				continue
			}
			pl := m["payload"].(map[string]any)
			if reflect.DeepEqual(pl["config"], pl["parent_config"]) {
				t.Fatalf("durability %d: config equals parent config: %v", d, pl)
			}
		}
	}
}

func TestInterruptBeforeAndResume(t *testing.T) {
	t.Parallel()
	saver := checkpoints.NewMemory()
	g := engine.NewStateGraph[logState]()
	g.AddNode("a", logNode("a")).AddNode("b", logNode("b"))
	g.AddEdge(engine.Start, "a").AddEdge("a", "b")
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: saver, InterruptBefore: []string{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	opts := &engine.RunOptions{ThreadID: "1"}
	ctx := context.Background()
	st, err := cg.Invoke(ctx, engine.Update{"log": "in1"}, opts)
	var intr *engine.Interrupted
	if !errors.As(err, &intr) || !reflect.DeepEqual(intr.Before, []string{"b"}) || !reflect.DeepEqual(st.Log, []string{"in1", "a"}) {
		t.Fatalf("first run: %v, %v", st, err)
	}
	// Reference §11 case 7: new input discards the pending task.
	st, err = cg.Invoke(ctx, engine.Update{"log": "in2"}, opts)
	if !errors.Is(err, engine.ErrInterrupted) || !reflect.DeepEqual(st.Log, []string{"in1", "a", "in2", "a"}) {
		t.Fatalf("second input: %v, %v", st.Log, err)
	}
	st, err = cg.Invoke(ctx, nil, opts)
	if err != nil || !reflect.DeepEqual(st.Log, []string{"in1", "a", "in2", "a", "b"}) {
		t.Fatalf("resume: %v, %v", st.Log, err)
	}
	hist, err := saver.List(ctx, checkpoints.ListQuery{ThreadID: "1"}, checkpoints.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for i := len(hist) - 1; i >= 0; i-- {
		sources = append(sources, string(hist[i].Metadata.Source)+"("+itoa(hist[i].Metadata.Step)+")")
	}
	want := []string{"input(-1)", "loop(0)", "loop(1)", "input(2)", "loop(3)", "loop(4)", "loop(5)"}
	if !reflect.DeepEqual(sources, want) {
		t.Fatalf("history = %v, want %v", sources, want)
	}
}

func itoa(i int) string {
	if i < 0 {
		return "-" + itoa(-i)
	}
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
