package channels

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
)

// Reducer folds one written value into a channel's current value and
// returns the new value. It must not modify current in place, except by
// appending into a slice's spare capacity (see the package documentation on
// copies); AppendReducer and AddReducer follow that rule.
type Reducer func(current, next any) (any, error)

// BinaryOperator folds every value written in a step into its value with a
// reducer, in the barrier's deterministic order. It is the channel of a
// state key declared with a reducer. An Overwrite (or its JSON forms)
// replaces the value instead.
type BinaryOperator struct {
	vt     *valueType
	reduce Reducer
	value  any
	has    bool
	// view caches the capacity-clipped form of value that Get returns;
	// viewOK says it is current.
	view   any
	viewOK bool
	// appends is set when reduce is AppendReducer, whose fold of a step's
	// values can be done as one append (appendAll).
	appends bool
	// mu guards view: Get may be called by parallel tasks between
	// barriers (routers reading the state), and builds view lazily.
	mu sync.Mutex
}

var _ Channel = (*BinaryOperator)(nil)

// NewBinaryOperator returns a BinaryOperator over values of typ (nil: any)
// folding writes with reduce.
//
// Like upstream, which calls typ() at construction, the channel starts
// available, holding the zero value of typ; slices and maps start empty
// rather than nil so they encode as [] and {}. For an interface typ there
// is no useful zero value: the channel starts empty and the first value
// written becomes its value without calling reduce.
//
// A nil reduce makes every non-empty Update fail with a clear error.
func NewBinaryOperator(typ reflect.Type, reduce Reducer) *BinaryOperator {
	c := &BinaryOperator{vt: newValueType(typ), reduce: reduce}
	c.appends = reduce != nil && reflect.ValueOf(reduce).Pointer() == reflect.ValueOf(Reducer(AppendReducer)).Pointer()
	c.reset()
	return c
}

// reset sets the channel to its initial state: the zero value of its type,
// or empty for an interface type.
func (c *BinaryOperator) reset() {
	c.value, c.has, c.view, c.viewOK = nil, false, nil, false
	switch c.vt.typ.Kind() {
	case reflect.Interface:
		return
	case reflect.Slice:
		c.value = reflect.MakeSlice(c.vt.typ, 0, 0).Interface()
	case reflect.Map:
		c.value = reflect.MakeMap(c.vt.typ).Interface()
	default:
		c.value = c.vt.zero
	}
	c.has = true
}

// overwriteOf reports whether v asks to replace a reducer channel's value,
// and with what: Overwrite, *Overwrite, {"__overwrite__": x} or
// {"type": "__overwrite__", "value": x}.
func overwriteOf(v any) (any, bool) {
	switch x := v.(type) {
	case Overwrite:
		return x.Value, true
	case *Overwrite:
		if x != nil {
			return x.Value, true
		}
	case map[string]any:
		switch len(x) {
		case 1:
			val, ok := x[overwriteKey]
			return val, ok
		case 2:
			if kind, _ := x["type"].(string); kind == overwriteKey {
				val, ok := x["value"]
				return val, ok
			}
		}
	}
	return nil, false
}

func anyOverwrite(values []any) bool {
	for _, v := range values {
		if _, ok := overwriteOf(v); ok {
			return true
		}
	}
	return false
}

// overwriteKey is upstream's JSON marker for an Overwrite.
const overwriteKey = "__overwrite__"

// Update folds the values written this step into the value, in order. An
// Overwrite replaces the value: values before it are folded and then
// replaced, values after it are ignored, and a second Overwrite in the same
// step is an error. On any error the channel is left unchanged.
func (c *BinaryOperator) Update(values []any) (bool, error) {
	if len(values) == 0 {
		return false, nil
	}
	if c.reduce == nil {
		return false, fmt.Errorf("%w: the channel has no reducer; pass one to NewBinaryOperator", ErrInvalidUpdate)
	}
	cur, has := c.value, c.has
	if c.appends && has && len(values) > 1 && !anyOverwrite(values) {
		// A step's appends in one go: one growth and one boxed slice
		// instead of one per value (fan-ins write many values at once).
		if out, ok := appendAll(cur, values); ok {
			checked, err := c.vt.check(out)
			if err != nil {
				return false, fmt.Errorf("reducer result: %w", err)
			}
			c.value, c.has, c.viewOK = checked, true, false
			return true, nil
		}
	}
	overwritten := false
	for _, v := range values {
		if ov, ok := overwriteOf(v); ok {
			if overwritten {
				return false, fmt.Errorf("%w: can receive only one Overwrite value per superstep; "+
					"make sure a single task overwrites this key in a step", ErrInvalidUpdate)
			}
			overwritten = true
			checked, err := c.vt.check(ov)
			if err != nil {
				return false, fmt.Errorf("overwrite: %w", err)
			}
			cur, has = checked, true
			continue
		}
		if overwritten {
			continue
		}
		if !has {
			// Only for interface types: nothing to fold into yet.
			cur, has = v, true
			continue
		}
		next, err := c.reduce(cur, v)
		if err != nil {
			return false, err
		}
		if cur, err = c.vt.check(next); err != nil {
			return false, fmt.Errorf("reducer result: %w", err)
		}
	}
	c.value, c.has, c.viewOK = cur, has, false
	return true, nil
}

// Get returns the value, and false only for an interface-typed channel
// that nothing was written to. A slice comes back with its capacity
// clipped to its length, so a caller appending to it never writes into
// the channel's storage.
func (c *BinaryOperator) Get() (any, bool) {
	if !c.has {
		return nil, false
	}
	c.mu.Lock()
	if !c.viewOK {
		c.view, c.viewOK = clipSlice(c.value), true
	}
	v := c.view
	c.mu.Unlock()
	return v, true
}

// IsAvailable reports whether the channel holds a value, which is always
// the case unless its type is an interface and nothing was written.
func (c *BinaryOperator) IsAvailable() bool { return c.has }

// Consume is a no-op.
func (c *BinaryOperator) Consume() bool { return false }

// Finish is a no-op.
func (c *BinaryOperator) Finish() bool { return false }

// Checkpoint encodes the value.
func (c *BinaryOperator) Checkpoint() (json.RawMessage, bool, error) {
	if !c.has {
		return nil, false, nil
	}
	data, err := c.vt.encode(c.value)
	return data, err == nil, err
}

// FromCheckpoint returns a BinaryOperator with the same type and reducer
// holding the saved value; no data gives the initial zero value.
func (c *BinaryOperator) FromCheckpoint(data json.RawMessage) (Channel, error) {
	out := &BinaryOperator{vt: c.vt, reduce: c.reduce, appends: c.appends}
	if isAbsent(data) {
		out.reset()
		return out, nil
	}
	v, err := decodeValue(c.vt, data)
	if err != nil {
		return nil, err
	}
	out.value, out.has = v, true
	return out, nil
}

// Copy returns an independent copy. The value is shared, but a slice is
// shared with its capacity clipped, so the first append on either side
// reallocates instead of writing into memory the other one can see.
func (c *BinaryOperator) Copy() Channel {
	cp := &BinaryOperator{vt: c.vt, reduce: c.reduce, appends: c.appends, has: c.has}
	cp.value = clipSlice(c.value)
	return cp
}

// ChangesWhenUnwritten implements Unwritten.
func (c *BinaryOperator) ChangesWhenUnwritten() bool { return false }
