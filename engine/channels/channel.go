package channels

import "encoding/json"

// Channel holds one piece of graph state between supersteps. Writes made by
// the tasks of a step reach a channel together, in the deterministic order
// of the barrier, through one Update call; the loop then bumps the version
// of every channel whose Update, Consume or Finish reported a change.
//
// The kinds follow upstream LangGraph exactly (reference §2):
//
//	kind                  Update(vs)                           Update([])     Consume                 Finish
//	LastValue             >1 value → ErrInvalidUpdate          no-op          –                       –
//	LastValueAfterFinish  value = last, finished = false       no-op          finished → clear        value && !finished → finished
//	BinaryOperator        fold with reducer; Overwrite         no-op          –                       –
//	EphemeralValue        guard && >1 → error; value = last    clears         –                       –
//	Topic                 append (flattening slices)           clears unless accumulate
//	NamedBarrierValue     add names (unknown → error)          no-op          all seen → reset        –
//	NamedBarrierAfterFin  as above                             no-op          finished && all → reset all seen && !finished → finished
//	UntrackedValue        like guarded LastValue; never checkpointed
//	AnyValue              value = last                         clears         –                       –
//
// A Channel is not safe for concurrent use; the loop owns its channels.
type Channel interface {
	// Update applies the values written in one step (possibly none: every
	// step that runs tasks calls Update(nil) on untouched channels). It
	// reports whether the channel changed.
	Update(values []any) (bool, error)
	// Get returns the value, and false when the channel is empty.
	Get() (any, bool)
	// IsAvailable reports whether the channel has a value; an unavailable
	// channel never triggers a node, whatever its version.
	IsAvailable() bool
	// Consume is called after a node triggered by this channel ran; it
	// reports whether the channel changed.
	Consume() bool
	// Finish is called when a step updated no trigger channel (the run
	// would otherwise end); it reports whether the channel changed.
	Finish() bool
	// Checkpoint encodes what must be saved; false means nothing (an empty
	// channel, or one that is never persisted).
	Checkpoint() (json.RawMessage, bool, error)
	// FromCheckpoint returns a new channel of the same kind and type
	// holding the saved data (nil data: an empty channel).
	FromCheckpoint(data json.RawMessage) (Channel, error)
	// Copy returns an independent copy.
	Copy() Channel
}

// Emptier is implemented by channel kinds that can be emptied in place:
// Empty leaves the channel as FromCheckpoint(nil), called on the channel
// it was made from, would return a new one. The engine empties a finished
// run's channels and gives them to the next run of the same graph instead
// of making new ones (a graph with a channel per edge has many).
type Emptier interface {
	Empty()
}

// Unwritten is implemented by channel kinds that can say, once and for
// all, whether Update(nil) — a step that wrote nothing to them — may
// change them. The loop calls Update(nil) only on channels that may
// change (and on every channel of a kind that does not say), which keeps
// a step's cost proportional to what it touched rather than to the
// number of channels.
type Unwritten interface {
	// ChangesWhenUnwritten reports whether Update(nil) can ever report a
	// change (EphemeralValue clears, LastValue never changes).
	ChangesWhenUnwritten() bool
}

// Overwrite, written to a BinaryOperator channel, replaces its value instead
// of being folded in by the reducer. Only one Overwrite per channel per step
// is allowed. The JSON forms {"__overwrite__": x} and
// {"type": "__overwrite__", "value": x} (decoded as map[string]any) mean the
// same.
type Overwrite struct {
	Value any
}

// MarshalJSON writes upstream's JSON form, {"__overwrite__": x}: how an
// Overwrite appears in streamed updates and task results, and a form that
// decodes back to an Overwrite when written again.
func (o Overwrite) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{overwriteKey: o.Value})
}
