package slab

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"unsafe"
)

func TestPiecesAreZeroedAndApart(t *testing.T) {
	t.Parallel()
	var s Slab[int64]
	var pieces [][]int64
	for i := range 200 {
		p := s.Make(i%5 + 1)
		for j, v := range p {
			if v != 0 {
				t.Fatalf("piece %d[%d] = %d, want a zeroed piece", i, j, v)
			}
			p[j] = int64(i)
		}
		pieces = append(pieces, p)
	}
	// Appending to a piece must not write into the next one.
	for i := range pieces {
		pieces[i] = append(pieces[i], -1)
	}
	for i, p := range pieces {
		for j, v := range p[:len(p)-1] {
			if v != int64(i) {
				t.Fatalf("piece %d[%d] = %d after appends, want %d", i, j, v, i)
			}
		}
	}
}

func TestChunksGrowAndLargePiecesGoAlone(t *testing.T) {
	t.Parallel()
	var s Slab[int64]
	first := s.Make(1)
	if c := cap(first[:cap(first)]); c != 1 {
		t.Fatalf("a piece's capacity is %d, want 1", c)
	}
	// The first chunk holds firstChunk bytes less a header: 31 int64s,
	// side by side.
	for i := 1; i < (firstChunk-header)/8; i++ {
		if p := s.Make(1); &p[0] != (*int64)(unsafe.Add(unsafe.Pointer(&first[0]), 8*i)) {
			t.Fatalf("piece %d is not in the first chunk", i)
		}
	}
	if s.Make(1); s.chunk != 4*firstChunk || cap(s.free) != (2*firstChunk-header)/8-1 {
		t.Fatalf("the second chunk holds %d int64s and the next %d bytes, want %d and %d",
			cap(s.free)+1, s.chunk, (2*firstChunk-header)/8, 4*firstChunk)
	}
	before := len(s.free)
	big := s.Make(maxChunk/8/4 + 1)
	if len(s.free) != before || len(big) != maxChunk/32+1 {
		t.Fatalf("a large piece came from the chunk (free %d → %d)", before, len(s.free))
	}
	for range 100 {
		s.Make(100)
	}
	if s.chunk > maxChunk {
		t.Fatalf("chunks grew to %d bytes, past %d", s.chunk, maxChunk)
	}
}

func TestString(t *testing.T) {
	t.Parallel()
	var s Slab[byte]
	b := []byte("0194b9a8-7c3e-7000-8000-000000000001")
	a := String(&s, b)
	b[0] = 'x'
	c := String(&s, b)
	if a != "0194b9a8-7c3e-7000-8000-000000000001" || c[0] != 'x' {
		t.Fatalf("strings %q and %q, want copies of what was given", a, c)
	}
	if unsafe.StringData(a) == unsafe.StringData(c) {
		t.Fatal("two strings share their bytes")
	}
	if String(&s, nil) != "" {
		t.Fatal("String(nil) is not empty")
	}
}

// A full chunk of a type with pointers must take the size class of its
// size, not the next one up for want of room for the runtime's header.
// Not parallel: it reads the process's TotalAlloc around one allocation.
func TestFullChunkTakesItsSizeClass(t *testing.T) {
	var s Slab[*int]
	for s.chunk < maxChunk || len(s.free) > 0 {
		s.Make(1)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s.Make(1)
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > maxChunk {
		t.Fatalf("a %d-byte chunk took %d bytes", maxChunk, got)
	}
}

// Strings carved across several chunks of a Sized slab stay what they
// were made from, though the caller reuses its bytes.
func TestStringsAcrossChunks(t *testing.T) {
	t.Parallel()
	s := Sized[byte](2 * 36) // a first chunk of about two ids
	var got, want []string
	buf := make([]byte, 0, 200)
	for i := range 30 {
		buf = fmt.Appendf(buf[:0], "%0*d", 20+i*3%90, i) // 20 to 107 bytes
		got, want = append(got, String(&s, buf)), append(want, string(buf))
		buf[0] = 'x'
	}
	if !slices.Equal(got, want) {
		t.Errorf("strings made are %q, want %q", got, want)
	}
}
