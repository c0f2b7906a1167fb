package cache

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// MemoryOptions configure NewMemory. The zero value (or nil) gives a cache
// on the wall clock with no background sweeper.
type MemoryOptions struct {
	// Now is the clock that decides expiry and creation times; nil means
	// time.Now. Tests pass a fake clock to control expiry without sleeping.
	Now func() time.Time
	// SweepInterval, when positive, starts a goroutine that removes expired
	// entries at this interval until Close. Reads hide expired entries
	// either way; sweeping only reclaims their memory.
	SweepInterval time.Duration
	// OnSweep, when set, is called after every background sweep with the
	// number of entries removed. It lets a caller observe the sweeper
	// (metrics, tests) without the cache logging anything itself.
	OnSweep func(removed int)
}

// Memory is a Cache held in process memory. It is safe for concurrent use.
//
// Values are copied on Set and on Get, so neither the caller nor the engine
// can change a cached value through a slice it holds.
//
// Unlike pgcache, entries are not authenticated with an HMAC: they never
// leave the process, so anyone able to alter them can already alter the
// code that reads them. The cache is in the same trust tier as the process
// (see reference/checkpointer-and-security.md, section 4.1).
type Memory struct {
	now func() time.Time

	mu   sync.RWMutex
	byNS map[string]map[string]*memEntry

	sweeping *Sweeping
}

type memEntry struct {
	value   []byte
	created time.Time
	expires time.Time // zero: never
}

func (e *memEntry) live(now time.Time) bool {
	return e.expires.IsZero() || now.Before(e.expires)
}

var (
	_ Cache   = (*Memory)(nil)
	_ Sweeper = (*Memory)(nil)
)

// NewMemory returns an empty memory cache. When opts.SweepInterval is
// positive it also starts the background sweeper; call Close to stop it.
func NewMemory(opts *MemoryOptions) *Memory {
	if opts == nil {
		opts = &MemoryOptions{}
	}
	m := &Memory{
		now:  opts.Now,
		byNS: make(map[string]map[string]*memEntry),
	}
	if m.now == nil {
		m.now = time.Now
	}
	var onSweep func(int, error)
	if opts.OnSweep != nil {
		onSweep = func(n int, _ error) { opts.OnSweep(n) }
	}
	m.sweeping = StartSweeping(opts.SweepInterval, m, onSweep)
	return m
}

// Close stops the background sweeper, if any, and waits for it to return.
// The cache stays usable; Close is safe to call more than once.
func (m *Memory) Close() error {
	m.sweeping.Close()
	return nil
}

// Get returns copies of the values of the keys that are present and
// unexpired.
func (m *Memory) Get(_ context.Context, keys []Key) (map[Key][]byte, error) {
	out := make(map[Key][]byte, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	now := m.now()
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, k := range keys {
		e, ok := m.byNS[k.Namespace][k.Key]
		if !ok {
			// Only a missing key can be invalid: Set validated every key
			// it stored, so hits (the hot path) skip the check.
			if err := k.Validate(); err != nil {
				return nil, err
			}
			continue
		}
		if e.live(now) {
			out[k] = bytes.Clone(nonNil(e.value))
		}
	}
	return out, nil
}

// Set stores copies of the entries, replacing existing ones; each gets a
// new creation time and expiry. When one key appears more than once, the
// last entry wins. Nothing is stored if any entry is invalid.
func (m *Memory) Set(_ context.Context, entries []Entry) error {
	for _, e := range entries {
		if err := e.Validate(); err != nil {
			return err
		}
	}
	if len(entries) == 0 {
		return nil
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range entries {
		ns := m.byNS[e.Key.Namespace]
		if ns == nil {
			ns = make(map[string]*memEntry)
			m.byNS[e.Key.Namespace] = ns
		}
		me := &memEntry{value: bytes.Clone(nonNil(e.Value)), created: now}
		if e.TTL > 0 {
			me.expires = now.Add(e.TTL)
		}
		ns[e.Key.Key] = me
	}
	return nil
}

// Clear removes every entry of the namespaces, or every entry at all when
// none are given.
func (m *Memory) Clear(_ context.Context, namespaces []string) error {
	for _, ns := range namespaces {
		if err := ValidateNamespace(ns); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(namespaces) == 0 {
		clear(m.byNS)
		return nil
	}
	for _, ns := range namespaces {
		delete(m.byNS, ns)
	}
	return nil
}

// List describes the unexpired entries of a namespace ("" = all), newest
// first (ties by namespace, then key), at most limit (0 = no limit).
func (m *Memory) List(_ context.Context, namespace string, limit int) ([]Info, error) {
	if namespace != "" {
		if err := ValidateNamespace(namespace); err != nil {
			return nil, err
		}
	}
	if err := ValidateLimit(limit); err != nil {
		return nil, err
	}
	now := m.now()
	var out []Info
	add := func(ns string, entries map[string]*memEntry) {
		for k, e := range entries {
			if e.live(now) {
				out = append(out, Info{
					Key:       Key{Namespace: ns, Key: k},
					Size:      len(e.value),
					CreatedAt: e.created,
					ExpiresAt: e.expires,
				})
			}
		}
	}
	m.mu.RLock()
	if namespace != "" {
		add(namespace, m.byNS[namespace])
	} else {
		for ns, entries := range m.byNS {
			add(ns, entries)
		}
	}
	m.mu.RUnlock()
	sortNewestFirst(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit:limit]
	}
	return out, nil
}

// Sweep removes the expired entries and reports how many it removed.
func (m *Memory) Sweep(_ context.Context) (int, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	removed := 0
	for ns, entries := range m.byNS {
		for k, e := range entries {
			if !e.live(now) {
				delete(entries, k)
				removed++
			}
		}
		if len(entries) == 0 {
			delete(m.byNS, ns)
		}
	}
	return removed, nil
}

// sortNewestFirst orders infos as List returns them: newest CreatedAt
// first, ties by namespace and then key, so a listing is deterministic
// even when a coarse clock gives several entries the same time.
func sortNewestFirst(infos []Info) {
	slices.SortFunc(infos, func(a, b Info) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Key.Namespace, b.Key.Namespace); c != 0 {
			return c
		}
		return cmp.Compare(a.Key.Key, b.Key.Key)
	})
}

// nonNil makes an empty value come back as a present, empty slice: a hit
// is told apart from a miss by the map key, and callers should not have to
// care whether the bytes are nil.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
