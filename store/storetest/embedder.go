package storetest

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"sync/atomic"
	"unicode"
)

// WordEmbedder is a deterministic bag-of-words embedder for tests: each
// distinct lower-cased word (a run of letters or digits, any script) adds
// 1 on the axis its FNV hash picks. Texts sharing no word are orthogonal
// (barring a hash collision, which the suite checks for its own words), so
// expected similarities follow from the texts.
type WordEmbedder struct {
	// ID names the model; Name reports "storetest-words-<ID>-<Dims>".
	ID string
	// Dims is the vector size.
	Dims int
	// Err, when set, is returned by every Embed call.
	Err error
	// WrongDim makes Embed return vectors one element short.
	WrongDim bool

	calls atomic.Int64
	texts atomic.Int64
}

// NewWordEmbedder returns a 1024-dimensional WordEmbedder.
func NewWordEmbedder() *WordEmbedder { return &WordEmbedder{ID: "a", Dims: 1024} }

// Name implements store.Embedder.
func (e *WordEmbedder) Name() string { return fmt.Sprintf("storetest-words-%s-%d", e.ID, e.Dims) }

// Dim implements store.Embedder.
func (e *WordEmbedder) Dim() int { return e.Dims }

// Calls and Texts count Embed calls and embedded texts.
func (e *WordEmbedder) Calls() int64 { return e.calls.Load() }

// Texts counts the texts embedded so far.
func (e *WordEmbedder) Texts() int64 { return e.texts.Load() }

// Embed implements store.Embedder.
func (e *WordEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.calls.Add(1)
	e.texts.Add(int64(len(texts)))
	if e.Err != nil {
		return nil, e.Err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		n := e.Dims
		if e.WrongDim {
			n--
		}
		v := make([]float32, n)
		for _, w := range Words(t) {
			v[e.Axis(w)%n]++
		}
		out[i] = v
	}
	return out, nil
}

// Axis is the axis a word lands on.
func (e *WordEmbedder) Axis(word string) int {
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(word)))
	return int(h.Sum32() % uint32(e.Dims))
}

// Words splits text the way WordEmbedder does.
func Words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r) && !unicode.Is(unicode.Mc, r)
	})
}
