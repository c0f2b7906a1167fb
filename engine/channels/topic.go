package channels

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
)

// Topic collects the values written to it, flattening slices. Without
// accumulate it holds only the previous step's values (every Update, even
// the empty one of a step that did not write it, starts afresh); with
// accumulate it keeps growing. The loop's __pregel_tasks channel is a
// Topic of Sends.
type Topic struct {
	elem       *valueType
	sliceType  reflect.Type
	accumulate bool
	// vals holds the elements, each already of the element type.
	vals []any
	// shared is set once vals' backing array can be seen by someone else
	// (a Copy, or a []any handed out by Get); a reset then drops the array
	// instead of reusing it.
	shared bool
	// mu guards view and shared against parallel readers between
	// barriers (Get and Copy from routers running in parallel).
	mu sync.Mutex
	// view caches the []elem that Get returns; viewOK says it is current.
	view   any
	viewOK bool
}

var _ Channel = (*Topic)(nil)

var anySliceType = reflect.TypeFor[[]any]()

// NewTopic returns an empty Topic of elements of elemType (nil: any). Get
// returns a slice of elemType.
func NewTopic(elemType reflect.Type, accumulate bool) *Topic {
	vt := newValueType(elemType)
	return &Topic{elem: vt, sliceType: reflect.SliceOf(vt.typ), accumulate: accumulate}
}

// Update appends the values written this step, flattening slices. Without
// accumulate the old values are dropped first. It reports a change when
// values were dropped or added. On an error the channel is unchanged.
func (c *Topic) Update(values []any) (bool, error) {
	reset := !c.accumulate && len(c.vals) > 0
	// New elements are appended after the current ones, into capacity no
	// one else can see, so that an error leaves the channel as it was.
	// A reset of a shared array starts a new one instead.
	out := c.vals
	if reset && c.shared {
		out = nil
	}
	start := len(out)
	for _, v := range values {
		var err error
		if out, err = c.add(out, v); err != nil {
			return false, err
		}
	}
	added := len(out) - start
	if !reset && added == 0 {
		return false, nil
	}
	if reset && start > 0 {
		// Reset in place: move the new elements to the front and drop
		// the references to the old ones.
		copy(out, out[start:])
		clear(out[added:])
		out = out[:added]
	}
	if reset {
		// out is now either a new array or one only this channel sees.
		c.shared = false
	}
	c.vals, c.viewOK = out, false
	return true, nil
}

// add appends v to out: a value of the element type as one element, a
// slice element by element.
func (c *Topic) add(out []any, v any) ([]any, error) {
	if v != nil {
		t := reflect.TypeOf(v)
		if t == c.elem.typ && !c.elem.acceptAll {
			return append(out, v), nil
		}
		if list, ok := v.([]any); ok {
			for i, e := range list {
				checked, err := c.elem.check(e)
				if err != nil {
					return nil, fmt.Errorf("element %d: %w", i, err)
				}
				out = append(out, checked)
			}
			return out, nil
		}
		// A slice is flattened unless it is itself one element (a Topic
		// of []string takes a []string as one element).
		if t.Kind() == reflect.Slice && (c.elem.acceptAll || !t.AssignableTo(c.elem.typ)) {
			rv := reflect.ValueOf(v)
			for i := range rv.Len() {
				checked, err := c.elem.check(rv.Index(i).Interface())
				if err != nil {
					return nil, fmt.Errorf("element %d: %w", i, err)
				}
				out = append(out, checked)
			}
			return out, nil
		}
	}
	checked, err := c.elem.check(v)
	if err != nil {
		return nil, err
	}
	return append(out, checked), nil
}

// Get returns the values as a slice of the element type, and false when
// there are none. The slice must be treated as read-only.
func (c *Topic) Get() (any, bool) {
	if len(c.vals) == 0 {
		return nil, false
	}
	c.mu.Lock()
	if !c.viewOK {
		c.view, c.viewOK = c.buildView(), true
	}
	v := c.view
	c.mu.Unlock()
	return v, true
}

// buildView converts vals to the []elem that Get returns. For []any it is
// vals itself, capacity-clipped, and marked shared.
func (c *Topic) buildView() any {
	n := len(c.vals)
	if c.sliceType == anySliceType {
		c.shared = true
		return c.vals[:n:n]
	}
	out := reflect.MakeSlice(c.sliceType, n, n)
	for i, v := range c.vals {
		if v != nil {
			out.Index(i).Set(reflect.ValueOf(v))
		}
	}
	return out.Interface()
}

// IsAvailable reports whether the topic holds any values.
func (c *Topic) IsAvailable() bool { return len(c.vals) > 0 }

// Consume is a no-op: the next Update clears a non-accumulating topic.
func (c *Topic) Consume() bool { return false }

// Finish is a no-op.
func (c *Topic) Finish() bool { return false }

// Checkpoint encodes the values as a JSON array; an empty topic saves
// nothing.
func (c *Topic) Checkpoint() (json.RawMessage, bool, error) {
	if len(c.vals) == 0 {
		return nil, false, nil
	}
	// The typed view, not vals: its elements are addressable, so the
	// encoding matches what FromCheckpoint decodes into a []elem.
	// ([]any is encoded directly: Get would mark its array shared.)
	var view any = c.vals
	if c.sliceType != anySliceType {
		view, _ = c.Get()
	}
	data, err := json.Marshal(view)
	if err != nil {
		return nil, false, fmt.Errorf("encoding a list of %s: %w", c.elem.typ, err)
	}
	return data, true, nil
}

// FromCheckpoint returns a Topic of the same element type and mode holding
// the saved values, each decoded into the element type.
func (c *Topic) FromCheckpoint(data json.RawMessage) (Channel, error) {
	out := &Topic{elem: c.elem, sliceType: c.sliceType, accumulate: c.accumulate}
	if isNull(data) {
		return out, nil
	}
	list := reflect.New(c.sliceType)
	if err := json.Unmarshal(data, list.Interface()); err != nil {
		return nil, fmt.Errorf("%w: want a JSON array of %s: %v", ErrInvalidCheckpoint, c.elem.typ, err)
	}
	lv := list.Elem()
	if lv.Len() > 0 {
		out.vals = make([]any, lv.Len())
		for i := range out.vals {
			out.vals[i] = lv.Index(i).Interface()
		}
	}
	return out, nil
}

// Copy returns an independent copy. Both sides then treat the backing
// array as shared: appends go past either side's length (the copy's
// capacity is clipped) and resets allocate anew.
func (c *Topic) Copy() Channel {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.vals)
	cp := &Topic{elem: c.elem, sliceType: c.sliceType, accumulate: c.accumulate, vals: c.vals[:n:n]}
	if n > 0 {
		c.shared, cp.shared = true, true
	}
	return cp
}

// ChangesWhenUnwritten implements Unwritten.
func (c *Topic) ChangesWhenUnwritten() bool { return !c.accumulate }
