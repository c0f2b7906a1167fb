package runs

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
)

// MemoryThreads is the in-memory ThreadStore: the registry of a Studio
// without a database, and of tests. Nothing survives the process. It is
// safe for concurrent use.
type MemoryThreads struct {
	mu      sync.Mutex
	threads map[string]ThreadRecord
	// beats is each owner's last heartbeat.
	beats map[string]time.Time
}

var _ ThreadStore = (*MemoryThreads)(nil)

// NewMemoryThreads returns an empty registry.
func NewMemoryThreads() *MemoryThreads {
	return &MemoryThreads{threads: map[string]ThreadRecord{}, beats: map[string]time.Time{}}
}

// SaveThread implements ThreadStore.
func (s *MemoryThreads) SaveThread(ctx context.Context, rec ThreadRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckThreadRecord(rec); err != nil {
		return err
	}
	rec = rec.Normalized()
	now := Stamp(time.Now())
	s.mu.Lock()
	if cur, ok := s.threads[rec.ID]; ok {
		rec.Created = cur.Created
	} else if rec.Created.IsZero() {
		rec.Created = now
	}
	s.threads[rec.ID] = rec
	s.mu.Unlock()
	return nil
}

// CountThreads implements ThreadStore.
func (s *MemoryThreads) CountThreads(ctx context.Context, f ThreadFilter) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := CheckThreadFilter(f); err != nil {
		return 0, err
	}
	match := f.matcher()
	n := 0
	s.mu.Lock()
	for _, rec := range s.threads {
		if match(rec) {
			n++
		}
	}
	s.mu.Unlock()
	return n, nil
}

// DeleteThread implements ThreadStore.
func (s *MemoryThreads) DeleteThread(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckThreadID(id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.threads[id]; !ok {
		return fmt.Errorf("%w %q", ErrUnknownThread, id)
	}
	delete(s.threads, id)
	return nil
}

// GetThread implements ThreadStore.
func (s *MemoryThreads) GetThread(ctx context.Context, id string) (ThreadRecord, error) {
	if err := ctx.Err(); err != nil {
		return ThreadRecord{}, err
	}
	if err := CheckThreadID(id); err != nil {
		return ThreadRecord{}, err
	}
	s.mu.Lock()
	rec, ok := s.threads[id]
	s.mu.Unlock()
	if !ok {
		return ThreadRecord{}, fmt.Errorf("%w %q", ErrUnknownThread, id)
	}
	return rec.clone(), nil
}

// ListThreads implements ThreadStore.
func (s *MemoryThreads) ListThreads(ctx context.Context, f ThreadFilter) ([]ThreadRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckThreadFilter(f); err != nil {
		return nil, err
	}
	match := f.matcher()
	s.mu.Lock()
	var out []ThreadRecord
	for _, rec := range s.threads {
		if match(rec) {
			out = append(out, rec)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, f.Compare)
	out = out[min(f.Offset, len(out)):]
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	for i := range out {
		out[i] = out[i].clone()
	}
	return out, nil
}

// Heartbeat implements ThreadStore.
func (s *MemoryThreads) Heartbeat(ctx context.Context, owner string, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckHeartbeat(owner, at); err != nil {
		return err
	}
	at = Stamp(at)
	s.mu.Lock()
	if at.After(s.beats[owner]) {
		s.beats[owner] = at
	}
	s.mu.Unlock()
	return nil
}

// Orphans implements ThreadStore.
func (s *MemoryThreads) Orphans(ctx context.Context, at time.Time, within time.Duration) ([]ThreadRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckOrphans(at, within); err != nil {
		return nil, err
	}
	since := Stamp(at).Add(-within)
	s.mu.Lock()
	var out []ThreadRecord
	for _, rec := range s.threads {
		if rec.Status != StatusRunning {
			continue
		}
		if beat, ok := s.beats[rec.Owner]; ok && rec.Owner != "" && beat.After(since) {
			continue
		}
		out = append(out, rec.clone())
	}
	s.mu.Unlock()
	sortOldestFirst(out)
	return out, nil
}

// SettleThread implements ThreadStore.
func (s *MemoryThreads) SettleThread(ctx context.Context, rec ThreadRecord, owner, runID string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := CheckThreadRecord(rec); err != nil {
		return false, err
	}
	rec = rec.Normalized()
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.threads[rec.ID]
	if !ok || cur.Status != StatusRunning || cur.Owner != owner || cur.RunID != runID {
		return false, nil
	}
	rec.Created = cur.Created
	s.threads[rec.ID] = rec
	return true, nil
}

// sortOldestFirst orders records by update time, ties by id.
func sortOldestFirst(recs []ThreadRecord) {
	sort.Slice(recs, func(i, j int) bool {
		if !recs[i].Updated.Equal(recs[j].Updated) {
			return recs[i].Updated.Before(recs[j].Updated)
		}
		return recs[i].ID < recs[j].ID
	})
}
