// Package slab carves many small slices that live as long as each other out
// of a few large ones.
//
// A checkpointed superstep leaves a dozen small objects behind (its ids,
// the saver's record of it, its numbers, values and writes), and a saver
// that keeps them makes the garbage collector mark every one of them on
// every cycle. Carved from chunks, they are a few objects per
// hundred supersteps: allocation gets cheaper, and so does every
// collection while they live.
//
// The price is that a piece keeps its whole chunk alive. So a Slab belongs
// to one owner whose pieces die together (a run's frames, a thread's
// checkpoints), chunks start small and grow with use, and an owner that
// drops some pieces and keeps others (pruning) copies the survivors out.
package slab

import "unsafe"

const (
	// firstChunk and maxChunk bound a chunk's size in bytes: the first
	// is small so that a short-lived owner wastes little, and each next
	// doubles up to maxChunk.
	firstChunk = 256
	maxChunk   = 4 << 10
	// header is what the runtime adds to an object larger than 512 bytes
	// that holds pointers (its malloc header). A chunk leaves room for it,
	// so that a 4 KB chunk takes the 4 KB size class and not the next
	// (4.75 KB).
	header = 8
)

// Slab hands out zeroed slices of T carved from chunks. The zero Slab is
// ready to use. It is not safe for concurrent use.
type Slab[T any] struct {
	free  []T // what is left of the current chunk
	chunk int // the next chunk's size in bytes; 0 before the first
}

// Make returns a zeroed slice of length and capacity n: appending to it
// never writes into another piece. A request larger than a quarter of the
// largest chunk gets its own allocation.
func (s *Slab[T]) Make(n int) []T {
	if n > len(s.free) {
		size := int(unsafe.Sizeof(*new(T)))
		if size == 0 || n*size > maxChunk/4 {
			return make([]T, n)
		}
		if s.chunk == 0 {
			s.chunk = firstChunk
		}
		s.free = make([]T, max((s.chunk-header)/size, n))
		s.chunk = min(2*s.chunk, maxChunk)
	}
	out := s.free[:n:n]
	s.free = s.free[n:]
	return out
}

// Sized returns a Slab whose first chunk holds about bytes (at least the
// usual first chunk, at most the largest), for an owner that knows how
// much it will need: a listing's page of 50 ids is then one chunk.
func Sized[T any](bytes int) Slab[T] {
	return Slab[T]{chunk: min(max(bytes+header, firstChunk), maxChunk)}
}

// New returns a pointer to a zeroed T.
func (s *Slab[T]) New() *T { return &s.Make(1)[0] }

// String returns a string holding a copy of b, carved from s.
func String(s *Slab[byte], b []byte) string {
	if len(b) == 0 {
		return ""
	}
	c := s.Make(len(b))
	copy(c, b)
	return unsafe.String(&c[0], len(c))
}
