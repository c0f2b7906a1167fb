package engine

import (
	"encoding/json"
	"fmt"
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
	return cache.Key{Namespace: cacheNamespace(identity, n.Name), Key: hash128Hex(b)}, nil
}

func cacheNamespace(identity, node string) string {
	return cacheNSWrites + "|" + identity + "|" + node
}

// cachedWrite is a write as stored in the node cache.
type cachedWrite struct {
	Channel string          `json:"c"`
	Value   json.RawMessage `json:"v"`
}
