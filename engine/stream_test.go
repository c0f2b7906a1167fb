package engine_test

import (
	"context"
	"reflect"
	"testing"

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
