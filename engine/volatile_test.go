package engine_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/engine/channels"
)

// flash is a channel kind of a user's own that empties on a step that does
// not write it, like EphemeralValue, but does not implement
// channels.Unwritten: the loop must still ask it every step.
type flash struct {
	v   any
	has bool
}

func (c *flash) Update(vs []any) (bool, error) {
	if len(vs) == 0 {
		changed := c.has
		c.v, c.has = nil, false
		return changed, nil
	}
	c.v, c.has = vs[len(vs)-1], true
	return true, nil
}
func (c *flash) Get() (any, bool)       { return c.v, c.has }
func (c *flash) IsAvailable() bool      { return c.has }
func (c *flash) Consume() bool          { return false }
func (c *flash) Finish() bool           { return false }
func (c *flash) Copy() channels.Channel { d := *c; return &d }
func (c *flash) Checkpoint() (json.RawMessage, bool, error) {
	if !c.has {
		return nil, false, nil
	}
	b, err := json.Marshal(c.v)
	return b, err == nil, err
}
func (c *flash) FromCheckpoint(data json.RawMessage) (channels.Channel, error) {
	if data == nil {
		return &flash{}, nil
	}
	var v any
	err := json.Unmarshal(data, &v)
	return &flash{v: v, has: true}, err
}

// A step that does not write an emptying channel empties it, whether the
// channel's kind is one of ours (EphemeralValue) or a user's own.
func TestUnwrittenStepsEmptyVolatileChannels(t *testing.T) {
	t.Parallel()
	str := reflect.TypeFor[string]()
	mark, err := engine.NewNode().SubscribeOnly("in").
		Do(func(context.Context, any) (any, error) { return "set", nil }).
		WriteTo("eph", "own").Build()
	if err != nil {
		t.Fatal(err)
	}
	mark.Name = "mark"
	after, err := engine.NewNode().SubscribeOnly("eph").
		Do(func(context.Context, any) (any, error) { return "done", nil }).
		WriteTo("out").Build()
	if err != nil {
		t.Fatal(err)
	}
	after.Name = "after"
	p, err := engine.NewPregel(engine.PregelConfig{
		Channels: map[string]channels.Channel{
			"in":  channels.NewLastValue(str),
			"eph": channels.NewEphemeralValue(str, true),
			"own": &flash{},
			"out": channels.NewLastValue(str),
		},
		Nodes:          []*engine.Node{mark, after},
		InputChannels:  []string{"in"},
		OutputChannels: []string{"eph", "own", "out"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // and again, on reused run buffers
		out, err := p.Invoke(context.Background(), "go", nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"out": "done"}
		if !reflect.DeepEqual(out, want) {
			t.Fatalf("output %v, want %v: a channel kept a value a later step did not write", out, want)
		}
	}
}
