package engine

import (
	"context"
	"fmt"
	"reflect"
	"slices"
)

// NodeFunc is the function a low-level Pregel node runs on its input.
type NodeFunc func(ctx context.Context, input any) (any, error)

// Writer turns a node's output into channel writes. The implementations
// are WriteEntry, WriteTuple and the StateGraph's internal writers.
type Writer interface {
	write(t *task, output any) error
}

// WriteEntry writes to one channel: the node's output (after Mapper), or a
// fixed Value when Fixed is set.
type WriteEntry struct {
	Channel string
	// Value is written instead of the output when Fixed is true.
	Value any
	Fixed bool
	// SkipNone writes nothing when the value to write is nil.
	SkipNone bool
	// Mapper transforms the value before it is written.
	Mapper func(any) (any, error)
}

func (e WriteEntry) write(t *task, output any) error {
	v := output
	if e.Fixed {
		v = e.Value
	}
	if e.Mapper != nil {
		var err error
		if v, err = e.Mapper(v); err != nil {
			return fmt.Errorf("writer for channel %q: %w", e.Channel, err)
		}
	}
	if v == nil && e.SkipNone {
		return nil
	}
	t.addWrite(e.Channel, v)
	return nil
}

// indexedEntry is a WriteEntry whose channel index in the compiled graph
// is known, so the barrier need not look it up.
type indexedEntry struct {
	WriteEntry
	idx int
}

func (e indexedEntry) write(t *task, output any) error {
	if !e.Fixed || e.Mapper != nil || (e.Value == nil && e.SkipNone) {
		return e.WriteEntry.write(t, output)
	}
	t.addWriteAt(e.Channel, e.idx, e.Value)
	return nil
}

// WriteTuple maps one output to several channel writes.
type WriteTuple struct {
	Mapper func(output any) ([]KV, error)
}

func (e WriteTuple) write(t *task, output any) error {
	kvs, err := e.Mapper(output)
	if err != nil {
		return fmt.Errorf("tuple writer: %w", err)
	}
	for _, kv := range kvs {
		t.addWrite(kv.Key, kv.Value)
	}
	return nil
}

// Node is a low-level Pregel node: it runs when one of its Triggers has a
// newer version than the node last saw, reads Channels, and hands its
// output to Writers. Build nodes with NewNode.
type Node struct {
	Name     string
	Triggers []string
	// Channels are read into the node's input. With ReadSingle the input
	// is the raw value of Channels[0] (and the node is skipped while that
	// channel is empty); otherwise it is a map of every available channel.
	Channels   []string
	ReadSingle bool
	// Mapper transforms the input before Func sees it.
	Mapper   func(any) (any, error)
	Func     NodeFunc
	Writers  []Writer
	Tags     []string
	Metadata map[string]any
	Retry    []RetryPolicy
	Cache    *CachePolicy

	// input, when set (StateGraph), builds the node's input directly from
	// the channels without going through a map.
	input func(r reader) (any, error)
	// sharedInput: the input is the whole state (StateGraph nodes reading
	// S), built once per superstep and shared by every task that reads it
	// (nodes receive copies). needsState: the node reads the state or has
	// conditional edges, so the loop builds it while planning.
	sharedInput, needsState bool
	// identity names the node's function for the cache namespace.
	identity string
	// funcW, when set (AddNodeWrites), runs instead of Func: the node
	// writes its update into a Writes rather than returning it.
	funcW    writesFunc
	hidden   bool
	subgraph *Pregel // set when the node runs a compiled graph
	// writers are Writers with channel indexes resolved (NewPregel).
	writers []Writer
	idx     int   // position in the compiled graph's node list
	trig    []int // trigger channel indexes, in sorted trigger order
	read    []int // read channel indexes
	// inType is the Go type of the node's input (StateGraph), used to
	// decode Send arguments read back from a checkpoint.
	inType reflect.Type
	// inputKeys are the state keys a StateGraph node's input is built
	// from (what events show as its input).
	inputKeys []string
	// alone is []string{Name}: the Checkpoint.Next of a step that plans
	// only this node, shared by every such checkpoint (savers never
	// modify it), so a one-task step allocates none.
	alone []string
}

// NodeBuilder builds a Node in the style of upstream's NodeBuilder.
type NodeBuilder struct {
	n   Node
	err error
}

// NewNode starts building a node.
func NewNode() *NodeBuilder { return &NodeBuilder{} }

// Named sets the node's name (required by NewPregel).
func (b *NodeBuilder) Named(name string) *NodeBuilder {
	b.n.Name = name
	return b
}

func (b *NodeBuilder) fail(format string, args ...any) *NodeBuilder {
	if b.err == nil {
		b.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidGraph}, args...)...)
	}
	return b
}

// SubscribeOnly triggers the node on channel and gives it the channel's raw
// value as input.
func (b *NodeBuilder) SubscribeOnly(channel string) *NodeBuilder {
	if len(b.n.Channels) > 0 {
		return b.fail("SubscribeOnly(%q) after other read channels: a node reads either one channel raw or several as a map", channel)
	}
	b.n.Channels = []string{channel}
	b.n.ReadSingle = true
	b.n.Triggers = append(b.n.Triggers, channel)
	return b
}

// SubscribeTo triggers the node on each channel; with read, the channels
// are also read into the node's input map.
func (b *NodeBuilder) SubscribeTo(read bool, channels ...string) *NodeBuilder {
	if b.n.ReadSingle && read {
		return b.fail("SubscribeTo(%v) on a node subscribed only to %q: a node reads either one channel raw or several as a map", channels, b.n.Channels[0])
	}
	b.n.Triggers = append(b.n.Triggers, channels...)
	if read {
		b.n.Channels = append(b.n.Channels, channels...)
	}
	return b
}

// ReadFrom adds channels to the node's input map without triggering on them.
func (b *NodeBuilder) ReadFrom(channels ...string) *NodeBuilder {
	if b.n.ReadSingle {
		return b.fail("ReadFrom(%v) on a node subscribed only to %q: a node reads either one channel raw or several as a map", channels, b.n.Channels[0])
	}
	b.n.Channels = append(b.n.Channels, channels...)
	return b
}

// Do sets the function the node runs.
func (b *NodeBuilder) Do(f NodeFunc) *NodeBuilder {
	b.n.Func = f
	return b
}

// Map sets a mapper applied to the input before the function.
func (b *NodeBuilder) Map(f func(any) (any, error)) *NodeBuilder {
	b.n.Mapper = f
	return b
}

// WriteTo adds writers: channel names (write the output), WriteEntry,
// WriteTuple or any other Writer.
func (b *NodeBuilder) WriteTo(targets ...any) *NodeBuilder {
	for _, t := range targets {
		switch w := t.(type) {
		case string:
			b.n.Writers = append(b.n.Writers, WriteEntry{Channel: w})
		case Writer:
			b.n.Writers = append(b.n.Writers, w)
		default:
			return b.fail("WriteTo: %T is not a channel name or a Writer", t)
		}
	}
	return b
}

// WriteValue adds a writer of a fixed value to channel.
func (b *NodeBuilder) WriteValue(channel string, value any) *NodeBuilder {
	b.n.Writers = append(b.n.Writers, WriteEntry{Channel: channel, Value: value, Fixed: true})
	return b
}

// Meta adds tags and metadata.
func (b *NodeBuilder) Meta(tags []string, metadata map[string]any) *NodeBuilder {
	b.n.Tags = append(b.n.Tags, tags...)
	if len(metadata) > 0 && b.n.Metadata == nil {
		b.n.Metadata = map[string]any{}
	}
	for k, v := range metadata {
		b.n.Metadata[k] = v
	}
	return b
}

// Retry adds retry policies; the first whose RetryOn accepts an error
// decides, and attempts are counted across policies.
func (b *NodeBuilder) Retry(policies ...RetryPolicy) *NodeBuilder {
	b.n.Retry = append(b.n.Retry, policies...)
	return b
}

// CachePolicy caches the node's writes.
func (b *NodeBuilder) CachePolicy(p CachePolicy) *NodeBuilder {
	b.n.Cache = &p
	return b
}

// Build returns the node, or the first error any step reported.
func (b *NodeBuilder) Build() (*Node, error) {
	if b.err != nil {
		return nil, b.err
	}
	if len(b.n.Triggers) == 0 {
		return nil, fmt.Errorf("%w: a node needs at least one trigger channel (SubscribeOnly or SubscribeTo)", ErrInvalidGraph)
	}
	n := b.n
	n.Triggers = slices.Clone(n.Triggers)
	n.Channels = slices.Clone(n.Channels)
	n.Writers = slices.Clone(n.Writers)
	return &n, nil
}
