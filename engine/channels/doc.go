// Package channels implements the channel kinds of the Pregel runtime:
// LastValue, LastValueAfterFinish, BinaryOperator (reducers, with
// Overwrite), EphemeralValue, Topic, NamedBarrierValue and its after-finish
// variant, UntrackedValue and AnyValue, each with upstream LangGraph's
// update / consume / finish / checkpoint / restore rules (see the table on
// Channel).
//
// The engine owns channel instances; nothing here knows about nodes, tasks
// or persistence beyond encoding a channel's saved form as JSON.
//
// # Types
//
// Constructors take the Go type a channel holds as a reflect.Type, because
// the StateGraph builder creates channels from struct field types at run
// time; LastValueOf[T] and friends are shortcuts for static code. A channel
// only ever holds values of exactly its type, so a node reading it can
// type-assert safely:
//
//   - a value of exactly the type is stored as is (the hot path: one
//     type-word comparison, no allocation);
//   - a value assignable to it (an unnamed []string for a named slice type)
//     is converted;
//   - the shapes JSON decoding produces are converted when nothing is lost:
//     float64 and json.Number to any numeric kind when the number fits
//     exactly (3.0 to int, never 3.5), string and bool to named string and
//     bool types, []any and map[string]any to slices, maps, structs and
//     pointers (strictly: an unknown struct field is an error);
//   - nil becomes the type's zero value;
//   - anything else is an error wrapping ErrInvalidUpdate that names both
//     types.
//
// A channel of an empty interface type (a nil reflect.Type means any)
// accepts everything as is.
//
// # Overwrite
//
// A BinaryOperator folds writes with its reducer, except an Overwrite (or
// its JSON forms {"__overwrite__": x} and {"type": "__overwrite__",
// "value": x}), which replaces the value: writes before it in the same step
// are folded and then replaced, writes after it are ignored, and a second
// Overwrite in the step is an error. Written to a channel without a
// reducer, an Overwrite simply sets the value.
//
// # Copies and aliasing
//
// Copy and Get never deep-copy values; instead nothing a channel does ever
// modifies a value it has handed out or shares with a copy:
//
//   - LastValue and its relatives replace their value, never modify it.
//   - Reducers must not modify the current value in place, with one
//     exception that keeps growing lists linear: appending into a slice's
//     spare capacity (AppendReducer does). BinaryOperator makes that safe
//     by handing out slices whose capacity is clipped to their length, from
//     Get and to a Copy, so their first append reallocates and nobody ever
//     sees memory past their length.
//   - Topic does the same for its element list, and a non-accumulating
//     Topic reuses its array on reset only while no Copy or Get result can
//     see it.
//
// Callers must treat what Get returns as read-only: a map or a struct
// behind a pointer is shared, as in upstream.
//
// # Checkpoints
//
// Checkpoint encodes a channel's saved form as JSON, and FromCheckpoint
// decodes it into the channel's Go type (so a restored int is an int, not
// a float64); encoding goes through a pointer, so MarshalJSON and
// UnmarshalJSON methods with pointer receivers are both honoured. The
// forms: the value (LastValue, EphemeralValue, AnyValue, BinaryOperator);
// {"value": v, "finished": bool} (LastValueAfterFinish); a JSON array of
// elements (Topic); the sorted list of seen names (NamedBarrierValue);
// {"seen": [names], "finished": bool} (NamedBarrierValueAfterFinish).
// UntrackedValue saves nothing. An empty channel saves nothing, and
// FromCheckpoint(nil) gives an empty channel, or for a BinaryOperator its
// initial zero value. Malformed data is an error wrapping
// ErrInvalidCheckpoint, never a panic; so is a saved barrier name the
// barrier does not expect (the graph changed), which would otherwise leave
// a barrier that can never complete.
//
// # Differences from upstream
//
//   - Upstream's BinaryOperatorAggregate with a type it cannot construct
//     stores a first Overwrite wrapper raw; here an interface-typed
//     BinaryOperator also starts empty and takes its first value without
//     calling the reducer, but an Overwrite is always unwrapped.
//   - A BinaryOperator over a slice or map type starts with an empty,
//     non-nil value, as upstream's list() and dict() do, so it encodes as
//     [] or {} rather than null.
//   - Upstream channels do not check types; here a write of the wrong
//     type is refused with ErrInvalidUpdate.
//   - Upstream restores any saved barrier names; here an unknown one is
//     an ErrInvalidCheckpoint (see Checkpoints).
//
// # Performance
//
// The runtime's budget is about 1,000 ns and 10 allocations per superstep
// for a one-node counter loop. Update with one value of the channel's type
// allocates nothing on LastValue and nothing beyond the reducer's own
// result on BinaryOperator; Update(nil), Consume and Finish are O(1) and
// allocation-free wherever they are no-ops; a non-accumulating Topic reuses
// its array from step to step. TestHotPathsDoNotAllocate holds these.
package channels
