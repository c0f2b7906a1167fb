package channels

import (
	"encoding/json"
	"reflect"
)

// AnyValue holds the last value written, assuming that all writes of one
// step are equal (so, unlike LastValue, several are not an error), and is
// cleared by a step that writes nothing to it.
type AnyValue struct {
	vt    *valueType
	value any
	has   bool
}

var _ Channel = (*AnyValue)(nil)

// NewAnyValue returns an empty AnyValue holding values of typ (nil: any).
func NewAnyValue(typ reflect.Type) *AnyValue {
	return &AnyValue{vt: newValueType(typ)}
}

// Update stores the last value written; a step without writes clears it.
func (c *AnyValue) Update(values []any) (bool, error) {
	if len(values) == 0 {
		if !c.has {
			return false, nil
		}
		c.value, c.has = nil, false
		return true, nil
	}
	v, err := c.vt.checkAll(values)
	if err != nil {
		return false, err
	}
	c.value, c.has = v, true
	return true, nil
}

// Get returns the value, and false when the channel is empty.
func (c *AnyValue) Get() (any, bool) { return c.value, c.has }

// IsAvailable reports whether the channel holds a value.
func (c *AnyValue) IsAvailable() bool { return c.has }

// Consume is a no-op.
func (c *AnyValue) Consume() bool { return false }

// Finish is a no-op.
func (c *AnyValue) Finish() bool { return false }

// Checkpoint encodes the value; an empty channel saves nothing.
func (c *AnyValue) Checkpoint() (json.RawMessage, bool, error) {
	if !c.has {
		return nil, false, nil
	}
	data, err := c.vt.encode(c.value)
	return data, err == nil, err
}

// FromCheckpoint returns an AnyValue of the same type holding the saved
// value.
func (c *AnyValue) FromCheckpoint(data json.RawMessage) (Channel, error) {
	out := &AnyValue{vt: c.vt}
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

// Copy returns an independent copy.
func (c *AnyValue) Copy() Channel {
	cp := *c
	return &cp
}

// ChangesWhenUnwritten implements Unwritten.
func (c *AnyValue) ChangesWhenUnwritten() bool { return true }
