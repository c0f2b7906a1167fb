package cache

import (
	"context"
	"time"
)

// Key addresses one cached node result.
type Key struct {
	// Namespace identifies the node: upstream joins
	// ("__pregel_ns_writes", node identity, node name); ours is the same
	// three parts joined with "|".
	Namespace string
	// Key is the hex xxh3-128 of the node's canonical input (or of a
	// custom key function's output).
	Key string
}

// Entry is a value to cache.
type Entry struct {
	Key   Key
	Value []byte
	// TTL is how long the entry lives; 0 means until cleared.
	TTL time.Duration
}

// Info describes a cached entry without its value, for the Studio.
type Info struct {
	Key       Key
	Size      int
	CreatedAt time.Time
	// ExpiresAt is zero for entries without a TTL.
	ExpiresAt time.Time
}

// Cache stores node results. Expired entries are never returned, even
// before a sweep removes them. Implementations are safe for concurrent use
// and pass the conformance suite in package cachetest.
type Cache interface {
	// Get returns the values of the keys that are present and unexpired.
	Get(ctx context.Context, keys []Key) (map[Key][]byte, error)
	// Set stores entries, replacing existing ones.
	Set(ctx context.Context, entries []Entry) error
	// Clear removes every entry of the namespaces; no namespaces means
	// every entry.
	Clear(ctx context.Context, namespaces []string) error
	// List describes the unexpired entries of a namespace ("" = all),
	// newest first, at most limit (0 = no limit).
	List(ctx context.Context, namespace string, limit int) ([]Info, error)
}

// Sweeper is implemented by caches that hold expired entries until a sweep
// removes them (both implementations here). Reads already hide expired
// entries; sweeping only reclaims their space.
type Sweeper interface {
	// Sweep removes the entries that have expired and reports how many.
	Sweep(ctx context.Context) (int, error)
}
