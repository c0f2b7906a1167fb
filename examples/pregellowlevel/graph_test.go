package pregellowlevel_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/pregellowlevel"
)

func TestOutput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   int
		want map[string]any
	}{
		{123, map[string]any{"foo": "123", "bar": 456, "baz": 579}},
		{0, map[string]any{"foo": "0", "bar": 333, "baz": 333}},
		{-500, map[string]any{"foo": "-500", "bar": -167, "baz": -667}},
	}
	for _, tc := range cases {
		p, err := pregellowlevel.New(pregellowlevel.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Invoke(context.Background(), tc.in, nil)
		if err != nil {
			t.Fatalf("input %d: %v", tc.in, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("input %d: output %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

// What each node receives, and when it runs: split reads one channel raw,
// total reads two as a map, one superstep later.
func TestNodeInputsAndSteps(t *testing.T) {
	t.Parallel()
	p, err := pregellowlevel.New(pregellowlevel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	inputs := map[string]any{}
	steps := map[string]int{}
	listen := func(e engine.Event) {
		if s, ok := e.(engine.TaskStarted); ok {
			mu.Lock()
			defer mu.Unlock()
			inputs[s.Task.Name] = s.Task.Input
			steps[s.Task.Name] = s.Task.Step
		}
	}
	if _, err := p.Invoke(context.Background(), 123, &engine.RunOptions{Listener: listen}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := inputs[pregellowlevel.NodeSplit]; got != 123 {
		t.Fatalf("split's input = %#v, want the raw int 123", got)
	}
	if got, want := inputs[pregellowlevel.NodeTotal], map[string]any{"input": 123, "bar": 456}; !reflect.DeepEqual(got, want) {
		t.Fatalf("total's input = %#v, want %#v", got, want)
	}
	if steps[pregellowlevel.NodeTotal] != steps[pregellowlevel.NodeSplit]+1 {
		t.Fatalf("split ran at step %d and total at %d; total should follow in the next superstep", steps[pregellowlevel.NodeSplit], steps[pregellowlevel.NodeTotal])
	}
}

func TestWrongInputTypeIsAnError(t *testing.T) {
	t.Parallel()
	p, err := pregellowlevel.New(pregellowlevel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Invoke(context.Background(), "123", nil)
	if err == nil {
		t.Fatal("a string input was accepted")
	}
	if !errors.Is(err, engine.ErrInvalidUpdate) || !strings.Contains(err.Error(), "holds int") {
		t.Fatalf("error %q should be an invalid update that says the channel holds int", err)
	}
}

// Checkpointed channel values decode back to their Go types.
func TestCheckpointedRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, err := pregellowlevel.New(pregellowlevel.Options{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Invoke(ctx, 123, &engine.RunOptions{ThreadID: "t"}); err != nil {
		t.Fatal(err)
	}
	snap, err := p.GetState(ctx, checkpoints.Config{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	// Every channel, as upstream's get_state (the graph names no stream
	// channels; its output channels only shape Invoke's result).
	if want := map[string]any{"input": 123, "foo": "123", "bar": 456, "baz": 579}; !reflect.DeepEqual(snap.Values, want) {
		t.Fatalf("checkpointed values %#v, want %#v", snap.Values, want)
	}
	// A second run on the thread resumes from those values: new input,
	// typed channels, same arithmetic.
	out, err := p.Invoke(ctx, 1, &engine.RunOptions{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"foo": "1", "bar": 334, "baz": 335}; !reflect.DeepEqual(out, want) {
		t.Fatalf("second run output %#v, want %#v", out, want)
	}
}
