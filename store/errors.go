package store

import "errors"

// Sentinel errors. Every error a store returns for bad input wraps one of
// these, so callers (the HTTP layer in particular) can map them to a 4xx
// with errors.Is while the message says exactly what was wrong.
var (
	// ErrInvalidNamespace: an empty namespace, an empty label, a label
	// containing ".", a reserved root, or text Postgres cannot store.
	ErrInvalidNamespace = errors.New("store: invalid namespace")
	// ErrInvalidKey: an empty key or one Postgres cannot store.
	ErrInvalidKey = errors.New("store: invalid key")
	// ErrInvalidValue: a value that does not round-trip through JSON or holds
	// text Postgres cannot store (NUL characters).
	ErrInvalidValue = errors.New("store: invalid value")
	// ErrInvalidFilter: a filter that does not parse (unknown operator, an
	// operand of the wrong type, a malformed key, limits exceeded).
	ErrInvalidFilter = errors.New("store: invalid filter")
	// ErrInvalidPath: an index field path that does not parse, or one that
	// matches more values than MaxPathMatches.
	ErrInvalidPath = errors.New("store: invalid index path")
	// ErrInvalidOp: an operation with a bad limit, offset, TTL or type.
	ErrInvalidOp = errors.New("store: invalid operation")
	// ErrNoIndex: a search with a query on a store opened without an
	// embedder.
	ErrNoIndex = errors.New("store: semantic search needs an embedder (IndexConfig)")
	// ErrEmbedderMismatch: the store's vectors were made by a different
	// embedder or dimension than the one it is opened with.
	ErrEmbedderMismatch = errors.New("store: embedder differs from the one the stored vectors were made with")
	// ErrEmbedder: the embedder failed or returned vectors of the wrong
	// number or size.
	ErrEmbedder = errors.New("store: embedder failed")
)
