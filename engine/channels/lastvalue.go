package channels

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// LastValue holds the single value written in the last step that wrote it.
// It is the channel of every state key without a reducer. Two writes in one
// step are an error: nothing says which should win.
type LastValue struct {
	vt    *valueType
	value any
	has   bool
}

var (
	_ Channel = (*LastValue)(nil)
	_ Emptier = (*LastValue)(nil)
)

// NewLastValue returns an empty LastValue holding values of typ (nil: any).
func NewLastValue(typ reflect.Type) *LastValue {
	return &LastValue{vt: newValueType(typ)}
}

// errOneValuePerStep is what a LastValue (or a guarded ephemeral channel)
// returns for several writes in one step; the loop prefixes the key.
func errOneValuePerStep(n int) error {
	return fmt.Errorf("%w: can receive only one value per step, got %d; "+
		"declare a reducer for this key to combine concurrent writes", ErrInvalidUpdate, n)
}

// Update stores the one value written this step; none is a no-op.
func (c *LastValue) Update(values []any) (bool, error) {
	switch len(values) {
	case 0:
		return false, nil
	case 1:
	default:
		return false, errOneValuePerStep(len(values))
	}
	v, err := c.vt.check(values[0])
	if err != nil {
		return false, err
	}
	c.value, c.has = v, true
	return true, nil
}

// Get returns the value, and false when nothing was written yet.
func (c *LastValue) Get() (any, bool) { return c.value, c.has }

// IsAvailable reports whether a value was written.
func (c *LastValue) IsAvailable() bool { return c.has }

// Consume is a no-op: reading a LastValue does not use it up.
func (c *LastValue) Consume() bool { return false }

// Finish is a no-op.
func (c *LastValue) Finish() bool { return false }

// Checkpoint encodes the value; an empty channel saves nothing.
func (c *LastValue) Checkpoint() (json.RawMessage, bool, error) {
	if !c.has {
		return nil, false, nil
	}
	data, err := c.vt.encode(c.value)
	return data, err == nil, err
}

// FromCheckpoint returns a LastValue of the same type holding the saved
// value, decoded into that type.
func (c *LastValue) FromCheckpoint(data json.RawMessage) (Channel, error) {
	out := &LastValue{vt: c.vt}
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
func (c *LastValue) Empty() { c.value, c.has = nil, false }

// Copy returns an independent copy. The value itself is shared: updates
// replace it and never modify it.
func (c *LastValue) Copy() Channel {
	cp := *c
	return &cp
}

// LastValueAfterFinish is a LastValue that becomes available only once the
// run would otherwise end (Finish), and is cleared when the node it
// triggers has run (Consume). StateGraph uses it for deferred nodes.
type LastValueAfterFinish struct {
	vt       *valueType
	value    any
	has      bool
	finished bool
}

var _ Channel = (*LastValueAfterFinish)(nil)

// NewLastValueAfterFinish returns an empty LastValueAfterFinish holding
// values of typ (nil: any).
func NewLastValueAfterFinish(typ reflect.Type) *LastValueAfterFinish {
	return &LastValueAfterFinish{vt: newValueType(typ)}
}

// Update keeps the last value written and withdraws any earlier Finish:
// new writes mean the run is not over. None is a no-op.
func (c *LastValueAfterFinish) Update(values []any) (bool, error) {
	if len(values) == 0 {
		return false, nil
	}
	last, err := c.vt.checkAll(values)
	if err != nil {
		return false, err
	}
	c.value, c.has, c.finished = last, true, false
	return true, nil
}

// Get returns the value once the channel is finished.
func (c *LastValueAfterFinish) Get() (any, bool) {
	if !c.has || !c.finished {
		return nil, false
	}
	return c.value, true
}

// IsAvailable reports whether the channel holds a value and is finished.
func (c *LastValueAfterFinish) IsAvailable() bool { return c.has && c.finished }

// Consume clears a finished channel, so the deferred node runs once.
func (c *LastValueAfterFinish) Consume() bool {
	if !c.finished {
		return false
	}
	c.value, c.has, c.finished = nil, false, false
	return true
}

// Finish releases a held value.
func (c *LastValueAfterFinish) Finish() bool {
	if !c.has || c.finished {
		return false
	}
	c.finished = true
	return true
}

// afterFinishValue is the saved form of LastValueAfterFinish.
type afterFinishValue struct {
	Value    json.RawMessage `json:"value"`
	Finished bool            `json:"finished"`
}

// Checkpoint encodes {"value": v, "finished": bool}; an empty channel
// saves nothing.
func (c *LastValueAfterFinish) Checkpoint() (json.RawMessage, bool, error) {
	if !c.has {
		return nil, false, nil
	}
	v, err := c.vt.encode(c.value)
	if err != nil {
		return nil, false, err
	}
	data, err := json.Marshal(afterFinishValue{Value: v, Finished: c.finished})
	return data, err == nil, err
}

// FromCheckpoint restores a LastValueAfterFinish saved by Checkpoint.
func (c *LastValueAfterFinish) FromCheckpoint(data json.RawMessage) (Channel, error) {
	out := &LastValueAfterFinish{vt: c.vt}
	if isAbsent(data) {
		return out, nil
	}
	var saved afterFinishValue
	if err := json.Unmarshal(data, &saved); err != nil {
		return nil, fmt.Errorf("%w: want {\"value\": ..., \"finished\": bool}: %v", ErrInvalidCheckpoint, err)
	}
	if saved.Value == nil {
		return nil, fmt.Errorf("%w: saved LastValueAfterFinish has no \"value\"", ErrInvalidCheckpoint)
	}
	v, err := decodeValue(c.vt, saved.Value)
	if err != nil {
		return nil, err
	}
	out.value, out.has, out.finished = v, true, saved.Finished
	return out, nil
}

// Copy returns an independent copy.
func (c *LastValueAfterFinish) Copy() Channel {
	cp := *c
	return &cp
}

// ChangesWhenUnwritten implements Unwritten.
func (c *LastValue) ChangesWhenUnwritten() bool { return false }

// ChangesWhenUnwritten implements Unwritten.
func (c *LastValueAfterFinish) ChangesWhenUnwritten() bool { return false }
