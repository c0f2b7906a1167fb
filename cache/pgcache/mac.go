package pgcache

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"sync"
	"time"
)

// macDomain separates these MACs from any other use of the same key, and
// versions the layout of the authenticated message.
const macDomain = "superstep/node-cache/v1\x00"

// macSize is the length of a stored MAC (HMAC-SHA256).
const macSize = sha256.Size

// signer computes and checks row MACs. A row's MAC covers everything that
// decides what a hit returns and for how long: namespace, key, creation
// and expiry times, and the SHA-256 of the value. Covering namespace and
// key stops a valid row's value being copied under another key; covering
// expiry stops a row being kept alive; hashing the value (rather than
// feeding it to the HMAC) lets List check a row from the digest Postgres
// computes, without reading the value over the wire.
type signer struct {
	pool sync.Pool // of hash.Hash (HMAC-SHA256 under the key)
}

func newSigner(key []byte) *signer {
	key = append([]byte(nil), key...)
	return &signer{pool: sync.Pool{New: func() any { return hmac.New(sha256.New, key) }}}
}

// sum appends the MAC of a row to dst. valueDigest is sha256(value).
func (s *signer) sum(dst []byte, namespace, key string, created, expires time.Time, valueDigest *[sha256.Size]byte) []byte {
	h := s.pool.Get().(hash.Hash)
	defer s.pool.Put(h)
	h.Reset()
	var buf [8]byte
	h.Write([]byte(macDomain))
	binary.BigEndian.PutUint32(buf[:4], uint32(len(namespace)))
	h.Write(buf[:4])
	h.Write([]byte(namespace))
	binary.BigEndian.PutUint32(buf[:4], uint32(len(key)))
	h.Write(buf[:4])
	h.Write([]byte(key))
	binary.BigEndian.PutUint64(buf[:], uint64(created.UnixMicro()))
	h.Write(buf[:])
	if expires.IsZero() {
		h.Write([]byte{0})
	} else {
		h.Write([]byte{1})
		binary.BigEndian.PutUint64(buf[:], uint64(expires.UnixMicro()))
		h.Write(buf[:])
	}
	h.Write(valueDigest[:])
	return h.Sum(dst)
}

// valid reports whether mac authenticates the row, in constant time.
func (s *signer) valid(mac []byte, namespace, key string, created, expires time.Time, valueDigest *[sha256.Size]byte) bool {
	if len(mac) != macSize {
		return false
	}
	var want [macSize]byte
	return hmac.Equal(mac, s.sum(want[:0], namespace, key, created, expires, valueDigest))
}
