package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/superstep-dev/superstep/cache"
)

// CachePolicy caches a node's successful writes keyed by its input. A hit
// replays the writes (routing included) without running the node, and is
// reported as cached.
type CachePolicy struct {
	// Key returns the bytes identifying an input; nil means DefaultCacheKey.
	// The cache key is the xxh3-128 of these bytes.
	Key func(input any) ([]byte, error)
	// TTL is how long an entry lives; 0 means until cleared.
	TTL time.Duration
}

// DefaultCacheKey encodes the input canonically: JSON with object keys
// sorted (Go's encoder sorts map keys and keeps struct field order), so the
// key is stable across processes and map iteration orders.
func DefaultCacheKey(input any) ([]byte, error) {
	b, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("cache key: input is not JSON-encodable: %w", err)
	}
	return b, nil
}

func (p *CachePolicy) key(n *Node, input any) (cache.Key, error) {
	f := p.Key
	if f == nil {
		f = DefaultCacheKey
	}
	b, err := f(input)
	if err != nil {
		return cache.Key{}, err
	}
	identity := n.identity
	if identity == "" {
		identity = "__dynamic__"
	}
	return cache.Key{Namespace: CacheNamespace(identity, n.Name), Key: hash128Hex(b)}, nil
}

// CacheNamespace is the cache namespace of a node's results: its
// identity (the function, see Identity) and its name, as upstream forms it
// ("__pregel_ns_writes|<identity>|<node>").
func CacheNamespace(identity, node string) string {
	return cacheNSWrites + "|" + identity + "|" + node
}

// ParseCacheNamespace is the inverse of CacheNamespace. The node name is
// the last part, so an identity that itself contains "|" still parses; ok
// is false for a namespace the engine did not form.
func ParseCacheNamespace(ns string) (identity, node string, ok bool) {
	rest, found := strings.CutPrefix(ns, cacheNSWrites+"|")
	if !found {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '|')
	if i <= 0 || i == len(rest)-1 {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}

// cachedWrite is a write as stored in the node cache.
type cachedWrite struct {
	Channel string          `json:"c"`
	Value   json.RawMessage `json:"v"`
}
