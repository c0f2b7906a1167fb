package engine

import (
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/superstep-dev/superstep/internal/slab"
)

// Checkpoint ids are UUIDv7: a millisecond timestamp followed by a 74-bit
// counter that starts at a random value each millisecond and increments
// within it, so ids are strictly increasing within the process and unique
// across processes with overwhelming probability.
var idGen struct {
	sync.Mutex
	ms  int64
	hi  uint16 // 12 bits
	lo  uint64 // 62 bits
	rng *rand.ChaCha8
}

func newCheckpointID() string {
	return formatUUID(newCheckpointBytes())
}

// newCheckpointBytes is newCheckpointID's 16 bytes.
func newCheckpointBytes() [16]byte {
	var b [16]byte
	idGen.Lock()
	if idGen.rng == nil {
		var seed [32]byte
		binary.LittleEndian.PutUint64(seed[:], uint64(time.Now().UnixNano()))
		binary.LittleEndian.PutUint64(seed[8:], rand.Uint64())
		binary.LittleEndian.PutUint64(seed[16:], rand.Uint64())
		binary.LittleEndian.PutUint64(seed[24:], rand.Uint64())
		idGen.rng = rand.NewChaCha8(seed)
	}
	now := time.Now().UnixMilli()
	if now > idGen.ms {
		idGen.ms = now
		r := idGen.rng.Uint64()
		idGen.hi = uint16(r>>52) & 0x7ff // leave headroom: top bit clear
		idGen.lo = idGen.rng.Uint64() >> 2
	} else {
		idGen.lo++
		if idGen.lo >= 1<<62 {
			idGen.lo = 0
			idGen.hi++
			if idGen.hi >= 1<<12 { // counter exhausted: borrow the next millisecond
				idGen.ms++
				idGen.hi = 0
			}
		}
	}
	ms, hi, lo := idGen.ms, idGen.hi, idGen.lo
	idGen.Unlock()
	b[0], b[1], b[2], b[3], b[4], b[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	b[6] = 0x70 | byte(hi>>8)
	b[7] = byte(hi)
	binary.BigEndian.PutUint64(b[8:], lo|0x8000000000000000)
	return b
}

func formatUUID(b [16]byte) string {
	var out [36]byte
	putUUID(&out, b)
	return string(out[:])
}

// formatUUIDIn is formatUUID with the string carved from s: a run's ids
// live as long as its checkpoints, and a checkpointed superstep makes two
// (its checkpoint's and its task's).
func formatUUIDIn(s *slab.Slab[byte], b [16]byte) string {
	var out [36]byte
	putUUID(&out, b)
	return slab.String(s, out[:])
}

func putUUID(out *[36]byte, b [16]byte) {
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
}

// idBytes is the 16 raw bytes of a UUID string (zero for malformed input).
func idBytes(id string) [16]byte {
	var digits [32]byte
	n := 0
	for i := 0; i < len(id) && n < len(digits); i++ {
		if id[i] != '-' {
			digits[n] = id[i]
			n++
		}
	}
	var b [16]byte
	_, _ = hex.Decode(b[:], digits[:n]) // malformed ids give zero bytes past the error
	return b
}

// taskIDHasher computes upstream's task ids: xxh3-128 over the checkpoint
// id's 16 bytes followed by the parts with no separators, formatted as a
// UUID string. It reuses its buffer, and carves the ids from ids.
type taskIDHasher struct {
	buf []byte
	ids slab.Slab[byte]
}

// pullID is id(ckpt, ns, step, name, PULL, triggers...) without allocating
// a parts slice.
func (h *taskIDHasher) pullID(ckpt [16]byte, ns string, step int, name string, triggers []string) string {
	h.buf = append(h.buf[:0], ckpt[:]...)
	h.buf = append(h.buf, ns...)
	h.buf = strconv.AppendInt(h.buf, int64(step), 10)
	h.buf = append(h.buf, name...)
	h.buf = append(h.buf, pullKind...)
	for _, t := range triggers {
		h.buf = append(h.buf, t...)
	}
	return h.finish()
}

func (h *taskIDHasher) pushID(ckpt [16]byte, ns string, step int, name string, idx int) string {
	h.buf = append(h.buf[:0], ckpt[:]...)
	h.buf = append(h.buf, ns...)
	h.buf = strconv.AppendInt(h.buf, int64(step), 10)
	h.buf = append(h.buf, name...)
	h.buf = append(h.buf, pushKind...)
	h.buf = strconv.AppendInt(h.buf, int64(idx), 10)
	return h.finish()
}

func (h *taskIDHasher) finish() string {
	return formatUUIDIn(&h.ids, idSum(h.buf))
}

// idSum is the 16 bytes of the task id whose hashed input is b.
func idSum(b []byte) [16]byte { return xxh3.Hash128(b).Bytes() }

// hash128Hex is the 32-hex-digit xxh3-128 of b (cache keys, interrupt ids).
func hash128Hex(b []byte) string {
	sum := xxh3.Hash128(b).Bytes()
	return hex.EncodeToString(sum[:])
}
