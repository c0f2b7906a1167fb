package promptcache

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/zeebo/xxh3"

	"github.com/superstep-dev/superstep/store"
)

// Namespace is the store namespace root of the layer's items: a thread's
// latches are ("promptcache", <thread>) key "latches", its call records
// ("promptcache", <thread>, "calls") keyed by call id.
const Namespace = "promptcache"

// latches are a thread's cache-relevant choices, made once and persisted
// so that neither a restart nor a configuration change mid-thread can flip
// them (R4, R5, R6, R12). Reset clears them.
type latches struct {
	// Generation counts resets; records of an older generation are no
	// baseline for break detection.
	Generation int `json:"generation"`
	// TTL is the static prefix's TTL, chosen on the first call.
	TTL TTL `json:"ttl,omitempty"`
	// Betas is the anthropic-beta set: it only grows.
	Betas []string `json:"betas,omitempty"`
	// Sections memoises Section results by name.
	Sections map[string]string `json:"sections,omitempty"`
	// Tools pins each tool's rendered definition by provider and name
	// ("anthropic/get_weather"), byte for byte.
	Tools map[string]string `json:"tools,omitempty"`
}

// threadState is what a Cache holds for one thread: its latches and the
// recent records of each lineage, loaded from the store on first use.
type threadState struct {
	id string
	mu sync.Mutex
	// loaded: the store has been read (or the thread is anonymous).
	loaded  bool
	latches latches
	// saved is latches as last persisted: a failed save rolls latches
	// back to it, so memory never holds a choice the store does not.
	saved latches
	// tools caches the decoded pinned definitions by the same keys as
	// latches.Tools.
	tools map[string]any
	// byLineage holds each lineage's records, oldest first.
	byLineage map[string][]*Record
	// parents caches checkpoint → parent checkpoint links.
	parents map[string]string
	// running are the calls between their hooks.
	running map[*call]struct{}
	// safe are the cache-safe parameters of the latest successful call
	// of each graph path (R7), for the subgraphs that opt in.
	safe map[string]*cacheSafe
}

// recordsKept bounds the records held in memory per lineage; older ones
// stay in the store.
const recordsKept = 256

func (c *Cache) thread(ctx context.Context, id string) (*threadState, error) {
	c.mu.Lock()
	ts := c.threads[id]
	if ts == nil {
		ts = &threadState{id: id, byLineage: map[string][]*Record{}, parents: map[string]string{}, running: map[*call]struct{}{}}
		c.threads[id] = ts
	}
	c.mu.Unlock()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.loaded {
		return ts, nil
	}
	if id != "" {
		if err := c.load(ctx, ts); err != nil {
			return nil, err
		}
	}
	ts.loaded = true
	return ts, nil
}

// load reads a thread's latches and records from the store.
func (c *Cache) load(ctx context.Context, ts *threadState) error {
	it, err := store.Get(ctx, c.cfg.Store, threadNS(ts.id), "latches")
	if err != nil {
		return fmt.Errorf("promptcache: reading the latches of thread %q: %w", ts.id, err)
	}
	if it != nil {
		if err := fromMap(it.Value, &ts.latches); err != nil {
			return fmt.Errorf("promptcache: the stored latches of thread %q: %w", ts.id, err)
		}
	}
	ts.saved = ts.latches.clone()
	recs, err := c.readRecords(ctx, ts.id)
	if err != nil {
		return err
	}
	for _, r := range recs {
		ts.add(r)
	}
	return nil
}

// saveLatches persists ts.latches, which the caller has just changed.
// When the save fails the change is undone (ts.latches goes back to what
// the store holds), so a latch is never in force in memory, and sent,
// while a restart would not find it. ts.mu is held.
func (c *Cache) saveLatches(ctx context.Context, ts *threadState) error {
	if ts.id == "" {
		return nil
	}
	v, err := toMap(ts.latches)
	if err == nil {
		_, err = store.Do(ctx, c.cfg.Store, store.PutOp{Namespace: threadNS(ts.id), Key: "latches", Value: v, Index: store.NoIndex, TTL: store.NoTTL})
	}
	if err != nil {
		ts.latches = ts.saved.clone()
		ts.tools = nil // decoded pins of the rolled-back latches
		return fmt.Errorf("promptcache: saving the latches of thread %q: %w", ts.id, err)
	}
	ts.saved = ts.latches.clone()
	return nil
}

// clone is a deep copy of l.
func (l latches) clone() latches {
	l.Betas = slices.Clone(l.Betas)
	l.Sections = maps.Clone(l.Sections)
	l.Tools = maps.Clone(l.Tools)
	return l
}

// add indexes a record by its lineage, in the order Records reads them
// back from the store (recordOrder), not in completion order: a live
// process and a restarted one then pick the same previous call.
func (ts *threadState) add(r *Record) {
	l := ts.byLineage[r.LineageKey]
	i, _ := slices.BinarySearchFunc(l, r, recordOrder)
	l = slices.Insert(l, i, r)
	if len(l) > recordsKept {
		l = slices.Delete(l, 0, len(l)-recordsKept)
	}
	ts.byLineage[r.LineageKey] = l
}

// threadNS is the namespace of a thread's latches. A thread id may hold
// any character; a store label may not hold ".", so ids are escaped, and
// ids longer than a label may be are hashed.
func threadNS(thread string) []string { return []string{Namespace, threadLabel(thread)} }

func recordsNS(thread string) []string { return []string{Namespace, threadLabel(thread), "calls"} }

func threadLabel(thread string) string {
	l := strings.NewReplacer("%", "%25", ".", "%2E").Replace(thread)
	if len(l) > store.MaxLabelBytes || strings.ContainsRune(l, 0) {
		h := xxh3.HashString128(thread).Bytes()
		return fmt.Sprintf("h-%x", h[:])
	}
	return l
}

func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}

func fromMap(m map[string]any, v any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
