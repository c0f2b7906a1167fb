package channels

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// barrierNames is the immutable set of names a barrier waits for, shared
// by a channel and its copies.
type barrierNames struct {
	sorted []string
	index  map[string]int
}

func newBarrierNames(names []string) *barrierNames {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	index := make(map[string]int, len(sorted))
	for i, n := range sorted {
		index[n] = i
	}
	return &barrierNames{sorted: sorted, index: index}
}

// find returns name's index, trying the index at hint first: a step's
// writes come in barrier order (pull tasks by node name), so names
// written by many tasks arrive sorted and each is found by one compare.
func (n *barrierNames) find(name string, hint int) (int, bool) {
	if hint < len(n.sorted) && n.sorted[hint] == name {
		return hint, true
	}
	i, ok := n.index[name]
	return i, ok
}

// barrierSeen is the state both barrier kinds share: which names were seen.
type barrierSeen struct {
	names *barrierNames
	seen  []bool
	count int
}

func (b *barrierSeen) complete() bool { return b.count == len(b.names.sorted) }

// add marks the names written this step as seen; an unknown name or a
// non-string is an error and leaves the barrier unchanged.
func (b *barrierSeen) add(values []any) (bool, error) {
	next := 0
	for _, v := range values {
		name, ok := v.(string)
		if !ok {
			return false, fmt.Errorf("%w: a barrier channel takes node names (strings), got a value of type %T",
				ErrInvalidUpdate, v)
		}
		i, ok := b.names.find(name, next)
		if !ok {
			return false, fmt.Errorf("%w: %q is not one of the names this barrier waits for (%s)",
				ErrInvalidUpdate, name, strings.Join(b.names.sorted, ", "))
		}
		next = i + 1
	}
	changed := false
	next = 0
	for _, v := range values {
		i, _ := b.names.find(v.(string), next)
		next = i + 1
		if !b.seen[i] {
			b.seen[i] = true
			b.count++
			changed = true
		}
	}
	return changed, nil
}

func (b *barrierSeen) reset() {
	clear(b.seen)
	b.count = 0
}

// seenList returns the seen names in sorted order.
func (b *barrierSeen) seenList() []string {
	out := make([]string, 0, b.count)
	for i, ok := range b.seen {
		if ok {
			out = append(out, b.names.sorted[i])
		}
	}
	return out
}

// restore marks saved names as seen; a name the barrier does not wait for
// means the graph changed since the checkpoint, which is an error rather
// than a barrier that can never complete.
func (b *barrierSeen) restore(names []string) error {
	for _, n := range names {
		i, ok := b.names.index[n]
		if !ok {
			return fmt.Errorf("%w: saved barrier name %q is not one of the names this barrier waits for (%s)",
				ErrInvalidCheckpoint, n, strings.Join(b.names.sorted, ", "))
		}
		if !b.seen[i] {
			b.seen[i] = true
			b.count++
		}
	}
	return nil
}

func (b *barrierSeen) clone() barrierSeen {
	return barrierSeen{names: b.names, seen: slices.Clone(b.seen), count: b.count}
}

// NamedBarrierValue becomes available once every one of a set of names has
// been written to it, and resets when the node it triggers has run.
// StateGraph uses it for waiting edges (add_edge([a, b], c)): each source
// writes its own name, and c runs once, after all of them.
type NamedBarrierValue struct {
	barrierSeen
}

var (
	_ Channel = (*NamedBarrierValue)(nil)
	_ Emptier = (*NamedBarrierValue)(nil)
)

// NewNamedBarrierValue returns a barrier waiting for names (duplicates are
// ignored).
func NewNamedBarrierValue(names []string) *NamedBarrierValue {
	n := newBarrierNames(names)
	return &NamedBarrierValue{barrierSeen{names: n, seen: make([]bool, len(n.sorted))}}
}

// Update marks the names written as seen; it reports a change when a new
// name was seen. An unknown name is an error naming the expected ones.
func (c *NamedBarrierValue) Update(values []any) (bool, error) {
	if len(values) == 0 {
		return false, nil
	}
	return c.add(values)
}

// Get returns nil and true once every name was seen.
func (c *NamedBarrierValue) Get() (any, bool) { return nil, c.complete() }

// IsAvailable reports whether every name was seen.
func (c *NamedBarrierValue) IsAvailable() bool { return c.complete() }

// Consume resets a complete barrier, so the node it triggers runs once per
// round of writes.
func (c *NamedBarrierValue) Consume() bool {
	if !c.complete() {
		return false
	}
	c.reset()
	return true
}

// Finish is a no-op.
func (c *NamedBarrierValue) Finish() bool { return false }

// Checkpoint encodes the seen names as a sorted JSON array; a barrier that
// saw nothing saves nothing.
func (c *NamedBarrierValue) Checkpoint() (json.RawMessage, bool, error) {
	if c.count == 0 {
		return nil, false, nil
	}
	data, err := json.Marshal(c.seenList())
	return data, err == nil, err
}

// FromCheckpoint returns a barrier with the same names that has seen the
// saved ones.
func (c *NamedBarrierValue) FromCheckpoint(data json.RawMessage) (Channel, error) {
	out := &NamedBarrierValue{barrierSeen{names: c.names, seen: make([]bool, len(c.names.sorted))}}
	if isNull(data) {
		return out, nil
	}
	var names []string
	if err := json.Unmarshal(data, &names); err != nil {
		return nil, fmt.Errorf("%w: want a JSON array of names: %v", ErrInvalidCheckpoint, err)
	}
	if err := out.restore(names); err != nil {
		return nil, err
	}
	return out, nil
}

// Empty implements Emptier.
func (c *NamedBarrierValue) Empty() { c.reset() }

// Copy returns an independent copy.
func (c *NamedBarrierValue) Copy() Channel {
	return &NamedBarrierValue{c.clone()}
}

// NamedBarrierValueAfterFinish is a NamedBarrierValue that, once complete,
// becomes available only when the run would otherwise end (Finish).
// StateGraph uses it for waiting edges into a deferred node.
type NamedBarrierValueAfterFinish struct {
	barrierSeen
	finished bool
}

var _ Channel = (*NamedBarrierValueAfterFinish)(nil)

// NewNamedBarrierValueAfterFinish returns a barrier waiting for names
// (duplicates are ignored) that is released by Finish.
func NewNamedBarrierValueAfterFinish(names []string) *NamedBarrierValueAfterFinish {
	n := newBarrierNames(names)
	return &NamedBarrierValueAfterFinish{barrierSeen: barrierSeen{names: n, seen: make([]bool, len(n.sorted))}}
}

// Update marks the names written as seen; it reports a change when a new
// name was seen. An unknown name is an error naming the expected ones.
func (c *NamedBarrierValueAfterFinish) Update(values []any) (bool, error) {
	if len(values) == 0 {
		return false, nil
	}
	return c.add(values)
}

// Get returns nil and true once every name was seen and the channel is
// finished.
func (c *NamedBarrierValueAfterFinish) Get() (any, bool) { return nil, c.IsAvailable() }

// IsAvailable reports whether every name was seen and the channel is
// finished.
func (c *NamedBarrierValueAfterFinish) IsAvailable() bool { return c.finished && c.complete() }

// Consume resets a finished, complete barrier.
func (c *NamedBarrierValueAfterFinish) Consume() bool {
	if !c.finished || !c.complete() {
		return false
	}
	c.reset()
	c.finished = false
	return true
}

// Finish releases a complete barrier.
func (c *NamedBarrierValueAfterFinish) Finish() bool {
	if c.finished || !c.complete() {
		return false
	}
	c.finished = true
	return true
}

// barrierAfterFinish is the saved form of NamedBarrierValueAfterFinish.
type barrierAfterFinish struct {
	Seen     []string `json:"seen"`
	Finished bool     `json:"finished"`
}

// Checkpoint encodes {"seen": [sorted names], "finished": bool}; a barrier
// that saw nothing saves nothing.
func (c *NamedBarrierValueAfterFinish) Checkpoint() (json.RawMessage, bool, error) {
	if c.count == 0 && !c.finished {
		return nil, false, nil
	}
	data, err := json.Marshal(barrierAfterFinish{Seen: c.seenList(), Finished: c.finished})
	return data, err == nil, err
}

// FromCheckpoint returns a barrier with the same names in the saved state.
func (c *NamedBarrierValueAfterFinish) FromCheckpoint(data json.RawMessage) (Channel, error) {
	out := &NamedBarrierValueAfterFinish{barrierSeen: barrierSeen{names: c.names, seen: make([]bool, len(c.names.sorted))}}
	if isNull(data) {
		return out, nil
	}
	var saved barrierAfterFinish
	if err := json.Unmarshal(data, &saved); err != nil {
		return nil, fmt.Errorf("%w: want {\"seen\": [names], \"finished\": bool}: %v", ErrInvalidCheckpoint, err)
	}
	if err := out.restore(saved.Seen); err != nil {
		return nil, err
	}
	out.finished = saved.Finished
	return out, nil
}

// Copy returns an independent copy.
func (c *NamedBarrierValueAfterFinish) Copy() Channel {
	return &NamedBarrierValueAfterFinish{barrierSeen: c.clone(), finished: c.finished}
}

// ChangesWhenUnwritten implements Unwritten.
func (c *NamedBarrierValue) ChangesWhenUnwritten() bool { return false }

// ChangesWhenUnwritten implements Unwritten.
func (c *NamedBarrierValueAfterFinish) ChangesWhenUnwritten() bool { return false }
