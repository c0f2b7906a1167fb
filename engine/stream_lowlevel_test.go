package engine_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/engine/channels"
)

// lowLevel is input → double (writes doubled) → report (writes output and
// a note to a channel that is not an output).
func lowLevel(t *testing.T, outputs, stream []string) *engine.Pregel {
	t.Helper()
	double, err := engine.NewNode().SubscribeOnly("input").
		Do(func(_ context.Context, in any) (any, error) { return in.(int) * 2, nil }).
		WriteTo("doubled").Build()
	if err != nil {
		t.Fatal(err)
	}
	double.Name = "double"
	report, err := engine.NewNode().SubscribeOnly("doubled").
		Do(func(_ context.Context, in any) (any, error) { return fmt.Sprintf("got %v", in), nil }).
		WriteTo("output", "note").Build()
	if err != nil {
		t.Fatal(err)
	}
	report.Name = "report"
	p, err := engine.NewPregel(engine.PregelConfig{
		Channels: map[string]channels.Channel{
			"input":   channels.NewLastValue(reflect.TypeFor[int]()),
			"doubled": channels.NewLastValue(reflect.TypeFor[int]()),
			"output":  channels.NewLastValue(reflect.TypeFor[string]()),
			"note":    channels.NewLastValue(reflect.TypeFor[string]()),
		},
		Nodes:          []*engine.Node{double, report},
		InputChannels:  []string{"input"},
		OutputChannels: outputs,
		StreamChannels: stream,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Issue 13, item 6, as upstream (Python's stream() reads
// stream_channels, which default to every channel; output_channels only
// shape invoke's result): a low-level graph streams every channel by
// default, its stream channels when it names them, and one named stream
// channel's raw value (upstream's stream_channels given as one name).
// The input makes no values part of its own.
func TestLowLevelStreamShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		stream  []string
		updates string
		values  string
	}{
		{"every channel by default", nil,
			"[map[double:map[doubled:42]] map[report:map[note:got 42 output:got 42]]]",
			"[map[doubled:42 input:21] map[doubled:42 input:21 note:got 42 output:got 42]]"},
		{"one stream channel: raw", []string{"output"}, "[map[double:<nil>] map[report:got 42]]", "[got 42]"},
		{"two stream channels", []string{"output", "doubled"}, "[map[double:map[doubled:42]] map[report:map[output:got 42]]]", "[map[doubled:42] map[doubled:42 output:got 42]]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var updates, values []any
			for part, err := range lowLevel(t, []string{"output"}, tc.stream).Stream(context.Background(), 21, nil, engine.StreamUpdates, engine.StreamValues) {
				if err != nil {
					t.Fatal(err)
				}
				switch part.Mode {
				case engine.StreamUpdates:
					updates = append(updates, part.Data)
				case engine.StreamValues:
					values = append(values, part.Data)
				}
			}
			if got := fmt.Sprint(updates); got != tc.updates {
				t.Errorf("updates %s, want %s", got, tc.updates)
			}
			if got := fmt.Sprint(values); got != tc.values {
				t.Errorf("values %s, want %s", got, tc.values)
			}
		})
	}
}
