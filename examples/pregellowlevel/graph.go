package pregellowlevel

import (
	"context"
	"fmt"
	"reflect"
	"strconv"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/engine/channels"
	"github.com/superstep-dev/superstep/store"
)

// Channel and node names.
const (
	ChannelInput = "input"
	ChannelFoo   = "foo"
	ChannelBar   = "bar"
	ChannelBaz   = "baz"

	NodeSplit = "split"
	NodeTotal = "total"
)

// Offset is what split adds to the input to make bar.
const Offset = 333

// Options configure the graph.
type Options struct {
	// Checkpointer, Cache and Store are passed to NewPregel.
	Checkpointer checkpoints.Saver
	Cache        cache.Cache
	Store        store.Store
}

// asInt checks a channel value's type instead of asserting it, so a wrong
// value is an error in the run, not a panic.
func asInt(what string, v any) (int, error) {
	n, ok := v.(int)
	if !ok {
		return 0, fmt.Errorf("%s must be an int, got %T (%v)", what, v, v)
	}
	return n, nil
}

// New builds the graph. The input is an int written to the input channel;
// the output is a map of foo, bar and baz.
//
//   - split triggers on input and reads it raw (SubscribeOnly): its input is
//     the int itself. It returns it unchanged and lets two write entries
//     with mappers do the work: foo gets the decimal string, bar the value
//     plus Offset.
//   - total triggers on bar and also reads input (ReadFrom), so its input is
//     a map of both channels. A tuple entry turns its output into the write
//     baz = input + bar.
func New(opts Options) (*engine.Pregel, error) {
	split, err := engine.NewNode().
		SubscribeOnly(ChannelInput).
		Do(func(_ context.Context, in any) (any, error) { return asInt("input", in) }).
		WriteTo(
			engine.WriteEntry{Channel: ChannelFoo, Mapper: func(v any) (any, error) {
				return strconv.Itoa(v.(int)), nil // Do returned an int
			}},
			engine.WriteEntry{Channel: ChannelBar, Mapper: func(v any) (any, error) {
				return v.(int) + Offset, nil
			}},
		).
		Meta([]string{"low-level"}, map[string]any{"reads": "one channel, raw"}).
		Build()
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", NodeSplit, err)
	}
	split.Name = NodeSplit

	total, err := engine.NewNode().
		SubscribeTo(true, ChannelBar).
		ReadFrom(ChannelInput).
		Do(func(_ context.Context, in any) (any, error) {
			m, ok := in.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("total: input is %T, want the map of its read channels", in)
			}
			return m, nil
		}).
		WriteTo(engine.WriteTuple{Mapper: func(out any) ([]engine.KV, error) {
			m := out.(map[string]any)
			input, err := asInt(ChannelInput, m[ChannelInput])
			if err != nil {
				return nil, err
			}
			bar, err := asInt(ChannelBar, m[ChannelBar])
			if err != nil {
				return nil, err
			}
			return []engine.KV{{Key: ChannelBaz, Value: input + bar}}, nil
		}}).
		Meta([]string{"low-level"}, map[string]any{"reads": "several channels, as a map"}).
		Build()
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", NodeTotal, err)
	}
	total.Name = NodeTotal

	intType, stringType := reflect.TypeFor[int](), reflect.TypeFor[string]()
	return engine.NewPregel(engine.PregelConfig{
		Name: "pregellowlevel",
		Channels: map[string]channels.Channel{
			ChannelInput: channels.NewLastValue(intType),
			ChannelFoo:   channels.NewLastValue(stringType),
			ChannelBar:   channels.NewLastValue(intType),
			ChannelBaz:   channels.NewLastValue(intType),
		},
		// Types let a checkpointer decode stored values back to int and
		// string instead of generic JSON numbers.
		ChannelTypes: map[string]reflect.Type{
			ChannelInput: intType, ChannelFoo: stringType, ChannelBar: intType, ChannelBaz: intType,
		},
		Nodes:          []*engine.Node{split, total},
		InputChannels:  []string{ChannelInput},
		OutputChannels: []string{ChannelFoo, ChannelBar, ChannelBaz},
		Checkpointer:   opts.Checkpointer,
		Cache:          opts.Cache,
		Store:          opts.Store,
	})
}
