package channels

import (
	"encoding/json"
	"reflect"
)

// EphemeralValue holds the value written in the previous step only: the
// next step that runs tasks clears it. StateGraph uses it for the graph
// input (__start__) and, unguarded, for the branch:to:<node> channels.
type EphemeralValue struct {
	vt    *valueType
	guard bool
	value any
	has   bool
}

var (
	_ Channel = (*EphemeralValue)(nil)
	_ Emptier = (*EphemeralValue)(nil)
)

// NewEphemeralValue returns an empty EphemeralValue holding values of typ
// (nil: any). With guard, two writes in one step are an error; without, the
// last one wins.
func NewEphemeralValue(typ reflect.Type, guard bool) *EphemeralValue {
	return &EphemeralValue{vt: newValueType(typ), guard: guard}
}

// Update stores the last value written; a step without writes clears it.
func (c *EphemeralValue) Update(values []any) (bool, error) {
	if len(values) == 0 {
		if !c.has {
			return false, nil
		}
		c.value, c.has = nil, false
		return true, nil
	}
	if c.guard && len(values) > 1 {
		return false, errOneValuePerStep(len(values))
	}
	v, err := c.vt.checkAll(values)
	if err != nil {
		return false, err
	}
	c.value, c.has = v, true
	return true, nil
}

// Get returns the value, and false when the channel is empty.
func (c *EphemeralValue) Get() (any, bool) { return c.value, c.has }

// IsAvailable reports whether the channel holds a value.
func (c *EphemeralValue) IsAvailable() bool { return c.has }

// Consume is a no-op: the next step's empty Update clears the value.
func (c *EphemeralValue) Consume() bool { return false }

// Finish is a no-op.
func (c *EphemeralValue) Finish() bool { return false }

// Checkpoint encodes the value; an empty channel saves nothing.
func (c *EphemeralValue) Checkpoint() (json.RawMessage, bool, error) {
	if !c.has {
		return nil, false, nil
	}
	data, err := c.vt.encode(c.value)
	return data, err == nil, err
}

// FromCheckpoint returns an EphemeralValue of the same type and guard
// holding the saved value.
func (c *EphemeralValue) FromCheckpoint(data json.RawMessage) (Channel, error) {
	out := &EphemeralValue{vt: c.vt, guard: c.guard}
	if isAbsent(data) {
		return out, nil
	}
	v, err := decodeValue(c.vt, data)
	if err != nil {
		return nil, err
	}
	out.value, out.has = v, true
	return out, nil
}

// Empty implements Emptier.
func (c *EphemeralValue) Empty() { c.value, c.has = nil, false }

// Copy returns an independent copy.
func (c *EphemeralValue) Copy() Channel {
	cp := *c
	return &cp
}

// ChangesWhenUnwritten implements Unwritten.
func (c *EphemeralValue) ChangesWhenUnwritten() bool { return true }
