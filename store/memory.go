package store

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Memory is the in-memory Store: for tests, examples, and running without
// a database. It is safe for concurrent use. Values are kept in the form
// Postgres would return them (after a JSON round trip), so swapping it for
// the Postgres store changes no result.
type Memory struct {
	opts Options
	now  func() time.Time

	mu    sync.RWMutex
	items map[string]map[string]*memEntry // joined namespace → key → entry
}

type memEntry struct {
	item      Item
	expiresAt time.Time // zero: never
	ttl       time.Duration
	vectors   []FieldVector
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty memory store.
func NewMemory(opts Options) (*Memory, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Memory{opts: opts, now: opts.Clock(), items: map[string]map[string]*memEntry{}}, nil
}

func (e *memEntry) expired(now time.Time) bool {
	return !e.expiresAt.IsZero() && !now.Before(e.expiresAt)
}

func (e *memEntry) refresh(now time.Time) {
	if e.ttl > 0 {
		e.expiresAt = now.Add(e.ttl)
	}
}

// Batch implements Store.
func (m *Memory) Batch(ctx context.Context, ops []Op) ([]Result, error) {
	p, err := Prepare(ctx, ops, m.opts)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := m.now()
	res := make([]Result, p.N)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, g := range p.Gets {
		e := m.items[JoinNamespace(g.Namespace)][g.Key]
		if e == nil || e.expired(now) {
			continue
		}
		if g.Refresh {
			e.refresh(now)
		}
		res[g.Index].Item = copyItem(e.item)
	}
	for _, s := range p.Searches {
		res[s.Index].Items = m.search(s, now)
	}
	for _, l := range p.Lists {
		res[l.Index].Namespaces = m.list(l, now)
	}
	for _, put := range p.Puts {
		m.apply(put, now)
	}
	return res, nil
}

func (m *Memory) apply(put PreparedPut, now time.Time) {
	prefix := JoinNamespace(put.Namespace)
	if put.Value == nil {
		delete(m.items[prefix], put.Key)
		if len(m.items[prefix]) == 0 {
			delete(m.items, prefix)
		}
		return
	}
	bucket := m.items[prefix]
	if bucket == nil {
		bucket = map[string]*memEntry{}
		m.items[prefix] = bucket
	}
	created := now
	// An expired item that was not swept yet is gone as far as readers
	// know, so a put over it starts a new item.
	if old := bucket[put.Key]; old != nil && !old.expired(now) {
		created = old.item.CreatedAt
	}
	e := &memEntry{
		item: Item{
			Namespace: slices.Clone(put.Namespace),
			Key:       put.Key,
			Value:     put.Value,
			CreatedAt: created,
			UpdatedAt: now,
		},
		ttl:     put.TTL,
		vectors: put.Vectors,
	}
	e.refresh(now)
	bucket[put.Key] = e
}

func (m *Memory) search(s PreparedSearch, now time.Time) []SearchItem {
	type hit struct {
		e      *memEntry
		prefix string
		score  float64
	}
	var hits []hit
	if s.HasQuery && s.QueryVector == nil {
		return []SearchItem{}
	}
	want := JoinNamespace(s.Prefix)
	for prefix, bucket := range m.items {
		if len(s.Prefix) > 0 && prefix != want && !strings.HasPrefix(prefix, want+".") {
			continue
		}
		for _, e := range bucket {
			if e.expired(now) || !s.Filter.Match(e.item.Value) {
				continue
			}
			h := hit{e: e, prefix: prefix}
			if s.HasQuery {
				if len(e.vectors) == 0 {
					continue
				}
				h.score = -2
				for _, v := range e.vectors {
					h.score = max(h.score, CosineSimilarity(s.QueryVector, v.Vector))
				}
			}
			hits = append(hits, h)
		}
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if s.HasQuery {
			if c := cmp.Compare(b.score, a.score); c != 0 {
				return c
			}
		} else if c := b.e.item.UpdatedAt.Compare(a.e.item.UpdatedAt); c != 0 {
			return c
		}
		if c := strings.Compare(a.prefix, b.prefix); c != 0 {
			return c
		}
		return strings.Compare(a.e.item.Key, b.e.item.Key)
	})
	out := []SearchItem{}
	for i := s.Offset; i < len(hits) && len(out) < s.Limit; i++ {
		h := hits[i]
		if s.Refresh {
			h.e.refresh(now)
		}
		si := SearchItem{Item: *copyItem(h.e.item)}
		if s.HasQuery {
			score := h.score
			si.Score = &score
		}
		out = append(out, si)
	}
	return out
}

func (m *Memory) list(l PreparedList, now time.Time) [][]string {
	set := map[string][]string{}
	for prefix, bucket := range m.items {
		live := false
		for _, e := range bucket {
			if !e.expired(now) {
				live = true
				break
			}
		}
		if !live {
			continue
		}
		ns := SplitNamespace(prefix)
		ok := true
		for _, c := range l.Conditions {
			if !c.Matches(ns) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		if l.MaxDepth > 0 && len(ns) > l.MaxDepth {
			ns = ns[:l.MaxDepth]
		}
		set[JoinNamespace(ns)] = ns
	}
	keys := slices.Sorted(maps.Keys(set))
	out := [][]string{}
	for i := l.Offset; i < len(keys) && len(out) < l.Limit; i++ {
		out = append(out, slices.Clone(set[keys[i]]))
	}
	return out
}

// Sweep implements Store.
func (m *Memory) Sweep(ctx context.Context) (int, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for prefix, bucket := range m.items {
		for k, e := range bucket {
			if e.expired(now) {
				delete(bucket, k)
				n++
			}
		}
		if len(bucket) == 0 {
			delete(m.items, prefix)
		}
	}
	return n, ctx.Err()
}

// copyItem returns a copy the caller may modify without touching the
// store (values are deep-copied through their JSON form's structure).
func copyItem(it Item) *Item {
	c := it
	c.Namespace = slices.Clone(it.Namespace)
	c.Value, _ = deepCopy(it.Value).(map[string]any)
	return &c
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		a := make([]any, len(v))
		for i, e := range v {
			a[i] = deepCopy(e)
		}
		return a
	}
	return v
}
