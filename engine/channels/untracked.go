package channels

import (
	"encoding/json"
	"reflect"
)

// UntrackedValue is a LastValue that is never saved: Checkpoint reports
// nothing and a restored channel is empty. It suits values that must not
// reach the database (clients, secrets, large scratch data).
type UntrackedValue struct {
	vt    *valueType
	guard bool
	value any
	has   bool
}

var _ Channel = (*UntrackedValue)(nil)

// NewUntrackedValue returns an empty UntrackedValue holding values of typ
// (nil: any). With guard, two writes in one step are an error; without,
// the last one wins.
func NewUntrackedValue(typ reflect.Type, guard bool) *UntrackedValue {
	return &UntrackedValue{vt: newValueType(typ), guard: guard}
}

// Update stores the last value written; none is a no-op.
func (c *UntrackedValue) Update(values []any) (bool, error) {
	if len(values) == 0 {
		return false, nil
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
func (c *UntrackedValue) Get() (any, bool) { return c.value, c.has }

// IsAvailable reports whether the channel holds a value.
func (c *UntrackedValue) IsAvailable() bool { return c.has }

// Consume is a no-op.
func (c *UntrackedValue) Consume() bool { return false }

// Finish is a no-op.
func (c *UntrackedValue) Finish() bool { return false }

// Checkpoint never saves anything: that is the point of the channel.
func (c *UntrackedValue) Checkpoint() (json.RawMessage, bool, error) { return nil, false, nil }

// FromCheckpoint returns an empty UntrackedValue of the same type and
// guard; any data is ignored, since none was ever saved.
func (c *UntrackedValue) FromCheckpoint(json.RawMessage) (Channel, error) {
	return &UntrackedValue{vt: c.vt, guard: c.guard}, nil
}

// Copy returns an independent copy.
func (c *UntrackedValue) Copy() Channel {
	cp := *c
	return &cp
}

// ChangesWhenUnwritten implements Unwritten.
func (c *UntrackedValue) ChangesWhenUnwritten() bool { return false }
