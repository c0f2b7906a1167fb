package store

import "context"

// Embedder turns texts into fixed-size vectors for semantic search.
//
// Name and Dim are persisted with a store's index so that reopening the
// store with a different model is detected instead of silently mixing
// incomparable vectors. Embed must return exactly one vector of length
// Dim per input text, in input order.
type Embedder interface {
	// Name identifies the model and its configuration, e.g. "glove100d-sif".
	Name() string
	// Dim is the length of every vector Embed returns.
	Dim() int
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}
