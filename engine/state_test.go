package engine_test

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

type addState struct {
	Value int `json:"value" reduce:"add"`
}

// TestGetStateAfterPartialFailure follows reference §11 case 14 through
// GetState: the latest state applies the successful task's write and lists
// only the failed task as next; the explicit checkpoint shows the step's
// start; resuming runs only the failed task.
func TestGetStateAfterPartialFailure(t *testing.T) {
	t.Parallel()
	for _, d := range []engine.Durability{engine.DurabilitySync, engine.DurabilityAsync, engine.DurabilityExit} {
		saver := checkpoints.NewMemory()
		var oneCalls, twoCalls atomic.Int32
		var fixed atomic.Bool
		g := engine.NewStateGraph[addState]()
		g.AddNode("one", func(context.Context, addState) (engine.Output, error) {
			oneCalls.Add(1)
			return engine.Update{"value": 2}, nil
		})
		g.AddNode("two", func(context.Context, addState) (engine.Output, error) {
			twoCalls.Add(1)
			if !fixed.Load() {
				return nil, errors.New("I'm not good")
			}
			return engine.Update{"value": 3}, nil
		}, engine.WithRetry(engine.RetryPolicy{MaxAttempts: 2}))
		g.AddEdge(engine.Start, "one").AddEdge(engine.Start, "two")
		cg, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		opts := &engine.RunOptions{ThreadID: "1", Durability: d}
		if _, err := cg.Invoke(ctx, engine.Update{"value": 1}, opts); err == nil || oneCalls.Load() != 1 || twoCalls.Load() != 2 {
			t.Fatalf("durability %d: first run err=%v one=%d two=%d", d, err, oneCalls.Load(), twoCalls.Load())
		}
		st, err := cg.GetState(ctx, checkpoints.Config{ThreadID: "1"})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(st.Values, map[string]any{"value": 3}) || !reflect.DeepEqual(st.Next, []string{"two"}) ||
			st.Metadata.Source != checkpoints.SourceLoop || st.Metadata.Step != 0 {
			t.Fatalf("durability %d: latest state = %+v", d, st)
		}
		if len(st.Tasks) != 2 || !reflect.DeepEqual(st.Tasks[0].Result, map[string]any{"value": 2}) || st.Tasks[1].Error != "I'm not good" || st.Tasks[1].Result != nil {
			t.Fatalf("durability %d: tasks = %+v", d, st.Tasks)
		}
		at, err := cg.GetState(ctx, st.Config)
		if err != nil || !reflect.DeepEqual(at.Values, map[string]any{"value": 1}) || !reflect.DeepEqual(at.Next, []string{"one", "two"}) {
			t.Fatalf("durability %d: explicit checkpoint = %+v, %v", d, at, err)
		}
		if _, err := cg.Invoke(ctx, nil, opts); err == nil || oneCalls.Load() != 1 || twoCalls.Load() != 4 {
			t.Fatalf("durability %d: second run err=%v one=%d two=%d", d, err, oneCalls.Load(), twoCalls.Load())
		}
		fixed.Store(true)
		out, err := cg.Invoke(ctx, nil, opts)
		if err != nil || out.Value != 6 || oneCalls.Load() != 1 {
			t.Fatalf("durability %d: final = %+v, %v, one=%d", d, out, err, oneCalls.Load())
		}
		hist, err := cg.GetStateHistory(ctx, checkpoints.Config{ThreadID: "1"}, engine.HistoryOptions{})
		wantLen := 3
		if d == engine.DurabilityExit {
			wantLen = 2
		}
		if err != nil || len(hist) != wantLen {
			t.Fatalf("durability %d: history has %d checkpoints (%v), want %d", d, len(hist), err, wantLen)
		}
	}
}
