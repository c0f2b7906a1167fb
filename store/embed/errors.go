package embed

import "errors"

// Sentinel errors, for errors.Is. Every error an embedder returns wraps one
// of these, with a message that names what was wrong.
var (
	// ErrInvalidConfig means an embedder was built or used with a
	// configuration it cannot work with (no model, no base URL, a
	// non-positive dimension, ...). Fix the configuration; retrying will not
	// help.
	ErrInvalidConfig = errors.New("embed: invalid configuration")

	// ErrHTTPStatus means an embedding server answered with a non-2xx
	// status. The error is a *StatusError carrying the code and the start
	// of the body.
	ErrHTTPStatus = errors.New("embed: embedding server returned an error status")

	// ErrMalformedResponse means an embedding server answered 2xx with a
	// body that is not the expected JSON shape: invalid JSON, the wrong
	// number of vectors, or out-of-range or duplicate indexes.
	ErrMalformedResponse = errors.New("embed: malformed embedding response")

	// ErrDimensionMismatch means a returned vector's length differs from
	// the configured dimension. Usually the configured Dim does not match
	// the model; vectors of different lengths cannot share an index.
	ErrDimensionMismatch = errors.New("embed: vector dimension mismatch")

	// ErrVectorFile means a word-vector file is corrupt, truncated, or not
	// the file whose checksum was recorded.
	ErrVectorFile = errors.New("embed: invalid word-vector file")
)
