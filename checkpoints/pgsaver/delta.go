package pgsaver

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/zeebo/xxh3"
)

// Blob encodings. A decoder never does more than copy bytes: there is no
// type tag that names code to run, and an unknown encoding is an error.
const (
	encJSON   = "json"        // the value's JSON, as given
	encAppend = "json-append" // the elements appended to the base array
)

// ErrCorrupt means a stored row cannot be decoded: an unknown encoding, a
// missing base blob, or a value whose hash does not match its key. Rows
// are only ever read as bytes, so a tampered row is an error, never code.
var ErrCorrupt = errors.New("pgsaver: corrupt checkpoint data")

type hash [16]byte

func hashOf(b []byte) hash { return hash(xxh3.Hash128(b).Bytes()) }

// appendDelta returns the bytes to store for next as a delta on prev when
// next is the JSON array prev with elements appended (byte for byte, as
// encoding/json writes a grown slice), or ok=false.
func appendDelta(prev, next []byte) (delta []byte, ok bool) {
	n, m := len(prev), len(next)
	if n < 2 || prev[0] != '[' || prev[n-1] != ']' || m <= n || next[m-1] != ']' {
		return nil, false
	}
	if n == 2 { // "[]": everything inside next is appended
		if next[0] != '[' {
			return nil, false
		}
		return next[1 : m-1], true
	}
	if !bytes.Equal(next[:n-1], prev[:n-1]) || next[n-1] != ',' {
		return nil, false
	}
	return next[n : m-1], true
}

// applyDeltas rebuilds the value reached from base by appendDelta's
// deltas, oldest first.
func applyDeltas(base []byte, deltas [][]byte) []byte {
	size := len(base)
	for _, d := range deltas {
		size += len(d) + 1
	}
	out := make([]byte, 0, size)
	out = append(out, base[:len(base)-1]...)
	empty := len(base) == 2
	for _, d := range deltas {
		if !empty {
			out = append(out, ',')
		}
		out = append(out, d...)
		empty = false
	}
	return append(out, ']')
}

// storedBlob is a checkpoint_blobs row as read.
type storedBlob struct {
	encoding string
	base     []byte
	data     []byte
}

// resolveBlobs rebuilds the value of each wanted hash from rows, which
// must hold every blob of the wanted hashes' delta chains. Each rebuilt
// value is checked against its hash. Nil entries (inline values) are
// skipped.
func resolveBlobs(rows map[hash]storedBlob, wanted [][]byte) (map[hash][]byte, error) {
	out := make(map[hash][]byte, len(wanted))
	for _, w := range wanted {
		if w == nil {
			continue
		}
		if len(w) != len(hash{}) {
			return nil, fmt.Errorf("%w: blob key of %d bytes", ErrCorrupt, len(w))
		}
		h := hash(w)
		if _, done := out[h]; done {
			continue
		}
		// Walk down to a full value (or one already rebuilt), then back up.
		var chain []hash
		cur := h
		var val []byte
		for {
			if v, ok := out[cur]; ok {
				val = v
				break
			}
			b, ok := rows[cur]
			if !ok {
				return nil, fmt.Errorf("%w: blob %x is missing", ErrCorrupt, cur)
			}
			if b.encoding == encJSON {
				val = b.data
				if hashOf(val) != cur {
					return nil, fmt.Errorf("%w: blob %x does not match its hash", ErrCorrupt, cur)
				}
				out[cur] = val
				break
			}
			if b.encoding != encAppend || len(b.base) != len(hash{}) {
				return nil, fmt.Errorf("%w: blob %x has unknown encoding %q", ErrCorrupt, cur, b.encoding)
			}
			if len(chain) > len(rows) {
				return nil, fmt.Errorf("%w: blob %x is in a cycle", ErrCorrupt, cur)
			}
			chain = append(chain, cur)
			cur = hash(b.base)
		}
		if len(chain) > 0 {
			// Append every delta in one pass (applying them one by one
			// would copy the list once per delta), then check the result.
			if len(val) < 2 || val[0] != '[' || val[len(val)-1] != ']' {
				return nil, fmt.Errorf("%w: blob %x is a delta on a value that is not an array", ErrCorrupt, h)
			}
			deltas := make([][]byte, len(chain))
			for i, c := range chain {
				deltas[len(chain)-1-i] = rows[c].data
			}
			val = applyDeltas(val, deltas)
			if hashOf(val) != h {
				return nil, fmt.Errorf("%w: blob %x does not match its hash", ErrCorrupt, h)
			}
			out[h] = val
		}
	}
	return out, nil
}

// lastValues remembers, per (thread, namespace, channel), the last value
// this saver wrote, so that Put can store a grown list as a delta without
// reading the old value back. It is only an optimisation: a miss stores the
// full value, and a stale entry is harmless because blobs are immutable and
// a delta's base is guarded by a foreign key.
type lastValues struct {
	mu      sync.Mutex
	entries map[valueKey]*lastValue
	bytes   int
	max     int
}

type valueKey struct{ thread, ns, channel string }

// lastValue is a value this saver stored as a blob, with where it stands
// in its run of skip deltas (deltaPolicy).
type lastValue struct {
	hash  hash
	value []byte
	// n is the value's position in its run: 0 for the run's full value
	// (its snapshot), k for the k-th value appended since.
	n int
	// snapshot is the run's full value; spine[p] is the run's latest value
	// at a position that is a multiple of fanOut^p (the snapshot when
	// p >= len(spine)). Both are shared between values: never modified.
	snapshot blobRef
	spine    []blobRef
}

// blobRef names a stored value of a run: its blob and its size in bytes.
type blobRef struct {
	hash hash
	size int
}

// deltaPolicy decides how a grown list is stored: as skip deltas, the
// scheme Subversion uses for file revisions, on lists. A run starts with
// a full value (the snapshot, position 0); the value at position n is
// stored as the elements appended since the value at n - fanOut^p, where
// fanOut^p is the largest power of fanOut dividing n. Rebuilding position
// n therefore reads one blob per unit of n's digit sum in base fanOut
// (at most (fanOut-1) per digit) instead of n blobs, and every appended
// element is stored about once per digit of n (about (fanOut-1)/fanOut
// times at each level) instead of once. With fanOut 16, a 1,000-step
// conversation reads at most 33 blobs (17 on average) and stores its
// appended bytes about 2.7 times; plain deltas on the previous value read
// up to a thousand blobs, and a snapshot every k deltas stores the whole
// list every k steps: quadratic storage.
type deltaPolicy struct {
	// fanOut is the base of the positions' digits.
	fanOut int
	// maxChain caps the deltas read to rebuild a value: a value whose
	// chain would be longer starts a new run.
	maxChain int
}

// defaultFanOut was chosen with BenchmarkPGDeltaChain: 16 keeps the
// history benchmark's blobs at 2.5x the appended bytes (8 reaches 3x by
// 1,000 steps, 4 3.6x) and reads half the blobs that 32 does; the read
// times of 4 to 16 were within the machine's noise of each other.
const defaultFanOut = 16

// store returns how to store val (whose hash is h), the value following
// prev (nil if none is remembered) in its channel: the blob's encoding,
// base and data, and the value to remember for the next one.
func (d deltaPolicy) store(prev *lastValue, h hash, val []byte) (enc string, base, data []byte, next *lastValue) {
	if prev != nil {
		if _, ok := appendDelta(prev.value, val); ok {
			n := prev.n + 1
			if digitSum(n, d.fanOut) <= d.maxChain {
				// n's base is the run's latest value at a multiple of
				// fanOut^p, n's largest such power: a prefix of prev and
				// so of val, whose appended elements start after it.
				p := 0
				for m := n; m%d.fanOut == 0; m /= d.fanOut {
					p++
				}
				b := prev.snapshot
				if p < len(prev.spine) {
					b = prev.spine[p]
				}
				from := b.size // past the base's "," separator ...
				if b.size == 2 {
					from = 1 // ... or its "[" when it was empty
				}
				spine := slices.Clone(prev.spine)
				for len(spine) <= p {
					spine = append(spine, blobRef{})
				}
				for q := 0; q <= p; q++ {
					spine[q] = blobRef{h, len(val)}
				}
				next = &lastValue{hash: h, value: val, n: n, snapshot: prev.snapshot, spine: spine}
				return encAppend, b.hash[:], val[from : len(val)-1], next
			}
		}
	}
	return encJSON, nil, val, &lastValue{hash: h, value: val, snapshot: blobRef{h, len(val)}}
}

// digitSum is the sum of n's digits in base k.
func digitSum(n, k int) int {
	s := 0
	for ; n > 0; n /= k {
		s += n % k
	}
	return s
}

func (c *lastValues) get(k valueKey) *lastValue {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[k]
}

func (c *lastValues) put(k valueKey, v *lastValue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.entries[k]; old != nil {
		c.bytes -= len(old.value)
	}
	if len(v.value) > c.max {
		delete(c.entries, k)
		return
	}
	c.entries[k] = v
	c.bytes += len(v.value)
	// Evict arbitrary entries, when over: a miss costs one full
	// snapshot, no more.
	if c.bytes > c.max {
		for key, e := range c.entries {
			if c.bytes <= c.max {
				break
			}
			if key != k {
				delete(c.entries, key)
				c.bytes -= len(e.value)
			}
		}
	}
}

func (c *lastValues) dropThreads(threads ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		for _, t := range threads {
			if k.thread == t {
				delete(c.entries, k)
				c.bytes -= len(e.value)
				break
			}
		}
	}
}

type headKey struct{ thread, ns string }

// valueRef is where a checkpoint finds a channel's value: nowhere (none:
// the channel has a version but no value), inline (when inline is not
// nil), or in the blob with this hash.
type valueRef struct {
	version int64
	hash    hash
	inline  []byte
	none    bool
}

func (r valueRef) blob() bool { return !r.none && r.inline == nil }

// head is the value map of a checkpoint this saver put. It is never
// modified once remembered, so children share its inline values.
type head struct {
	id string
	// refs are the checkpoint's channels with a version, sorted by name
	// (a frame's order); never nil in a head (nil: no head).
	refs []headRef
}

// headRef is a channel of a head and where its value is.
type headRef struct {
	channel string
	valueRef
}

// ref finds channel ch.
func (h *head) ref(ch string) (*valueRef, bool) {
	i, ok := slices.BinarySearchFunc(h.refs, ch, func(r headRef, ch string) int { return strings.Compare(r.channel, ch) })
	if !ok {
		return nil, false
	}
	return &h.refs[i].valueRef, true
}

// sort orders refs by channel, as ref needs.
func (h *head) sort() {
	slices.SortFunc(h.refs, func(a, b headRef) int { return strings.Compare(a.channel, b.channel) })
}

// heads remembers the last checkpoint put per thread and namespace, so
// that a child's unchanged channels resolve without a server-side lookup.
// Like lastValues it is an optimisation that is checked, never trusted.
type heads struct {
	mu      sync.Mutex
	entries map[headKey]head
	max     int
}

func (c *heads) get(k headKey) (head, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.entries[k]
	return h, ok
}

// put remembers h as k's head, or forgets k's head when h is none.
func (c *heads) put(k headKey, h head) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.refs == nil {
		delete(c.entries, k)
		return
	}
	// Evict arbitrary entries, when full: a miss costs the server's
	// resolution of one put, no more. (Ranging over the map starts an
	// iterator, which a put that evicts nothing need not pay for.)
	if _, ok := c.entries[k]; !ok && len(c.entries) >= c.max {
		for key := range c.entries {
			if len(c.entries) < c.max {
				break
			}
			delete(c.entries, key)
		}
	}
	c.entries[k] = h
}

func (c *heads) dropThreads(threads ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.entries {
		if slices.Contains(threads, k.thread) {
			delete(c.entries, k)
		}
	}
}
