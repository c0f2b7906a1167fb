package channels

import "errors"

// Sentinel errors; test with errors.Is. Messages wrapping them say what was
// wrong and what to do.
var (
	// ErrInvalidUpdate means writes could not be applied to a channel: two
	// values for a LastValue in one step, two Overwrites in one step, a
	// value of the wrong type, an unknown barrier name.
	ErrInvalidUpdate = errors.New("invalid update")
	// ErrEmptyChannel means a channel that has no value was read.
	ErrEmptyChannel = errors.New("empty channel")
	// ErrInvalidCheckpoint means saved channel data could not be restored:
	// malformed JSON, a value that does not decode into the channel's type,
	// or a barrier name the channel does not expect.
	ErrInvalidCheckpoint = errors.New("invalid channel checkpoint")
)
