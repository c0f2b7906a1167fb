package runs

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"
)

// MemoryCrons is the in-memory CronStore, for a Studio without a
// database and for tests. Nothing survives the process. It is safe for
// concurrent use.
type MemoryCrons struct {
	mu sync.Mutex
	m  map[string]Cron
}

var _ CronStore = (*MemoryCrons)(nil)

// NewMemoryCrons returns an empty store.
func NewMemoryCrons() *MemoryCrons { return &MemoryCrons{m: map[string]Cron{}} }

// normalizedCron is c as a store reads it back: times stamped, its JSON
// objects copied through JSON (numbers as json.Number), so the caller's
// maps and the store's never alias.
func normalizedCron(c Cron) (Cron, error) {
	var err error
	if c.Payload, err = jsonCopy(c.Payload); err != nil {
		return Cron{}, fmt.Errorf("%w: cron payload: %v", ErrInvalidInput, err)
	}
	if c.Metadata, err = jsonCopy(c.Metadata); err != nil {
		return Cron{}, fmt.Errorf("%w: cron metadata: %v", ErrInvalidInput, err)
	}
	for _, t := range []**time.Time{&c.EndTime, &c.NextRun} {
		if *t != nil {
			s := Stamp(**t)
			*t = &s
		}
	}
	c.Created, c.Updated = Stamp(c.Created), Stamp(c.Updated)
	if c.OnRunCompleted == "" {
		c.OnRunCompleted = "delete"
	}
	return c, nil
}

func jsonCopy(m map[string]any) (map[string]any, error) {
	if m == nil {
		return map[string]any{}, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	out := map[string]any{}
	return out, dec.Decode(&out)
}

// copyCron is a deep enough copy to hand out: the maps go through JSON.
func copyCron(c Cron) Cron {
	out, err := normalizedCron(c)
	if err != nil {
		return c // stored maps were copied through JSON once already
	}
	return out
}

// CreateCron implements CronStore.
func (s *MemoryCrons) CreateCron(ctx context.Context, c Cron) (Cron, error) {
	if err := ctx.Err(); err != nil {
		return Cron{}, err
	}
	c, err := normalizedCron(c)
	if err != nil {
		return Cron{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[c.ID]; ok {
		return Cron{}, fmt.Errorf("%w: cron id %q is taken", ErrInvalidInput, c.ID)
	}
	s.m[c.ID] = c
	return copyCron(c), nil
}

// GetCron implements CronStore.
func (s *MemoryCrons) GetCron(ctx context.Context, id string) (Cron, error) {
	if err := ctx.Err(); err != nil {
		return Cron{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.m[id]
	if !ok {
		return Cron{}, fmt.Errorf("%w %q", ErrUnknownCron, id)
	}
	return copyCron(c), nil
}

// UpdateCron implements CronStore.
func (s *MemoryCrons) UpdateCron(ctx context.Context, id string, p CronPatch, now time.Time) (Cron, error) {
	if err := ctx.Err(); err != nil {
		return Cron{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.m[id]
	if !ok {
		return Cron{}, fmt.Errorf("%w %q", ErrUnknownCron, id)
	}
	c, err := normalizedCron(ApplyCronPatch(c, p, now))
	if err != nil {
		return Cron{}, err
	}
	s.m[id] = c
	return copyCron(c), nil
}

// DeleteCron implements CronStore.
func (s *MemoryCrons) DeleteCron(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[id]; !ok {
		return fmt.Errorf("%w %q", ErrUnknownCron, id)
	}
	delete(s.m, id)
	return nil
}

// DeleteThreadCrons implements CronStore.
func (s *MemoryCrons) DeleteThreadCrons(ctx context.Context, thread string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, c := range s.m {
		if thread != "" && c.Thread == thread {
			delete(s.m, id)
			n++
		}
	}
	return n, nil
}

// SearchCrons implements CronStore.
func (s *MemoryCrons) SearchCrons(ctx context.Context, q CronQuery) ([]Cron, error) {
	all, err := s.selected(ctx, q)
	if err != nil {
		return nil, err
	}
	key := func(c Cron) string {
		switch q.SortBy {
		case CronByID:
			return c.ID
		case CronByAssistant:
			return c.Assistant
		case CronByThread:
			return c.Thread
		case CronByUpdated:
			return c.Updated.Format(sortableTime)
		case CronByNextRun:
			if c.NextRun == nil {
				return "~" // never: after every time, as Postgres sorts NULL last
			}
			return c.NextRun.Format(sortableTime)
		}
		return c.Created.Format(sortableTime)
	}
	slices.SortFunc(all, func(x, y Cron) int {
		r := cmp.Or(cmp.Compare(key(x), key(y)), cmp.Compare(x.ID, y.ID))
		if q.Desc {
			return -r
		}
		return r
	})
	if q.Offset >= len(all) {
		return []Cron{}, nil
	}
	all = all[q.Offset:]
	if q.Limit > 0 && len(all) > q.Limit {
		all = all[:q.Limit]
	}
	return all, nil
}

// sortableTime formats times so that their strings sort as the times do
// (UTC, fixed width).
const sortableTime = "2006-01-02T15:04:05.000000Z"

// CountCrons implements CronStore.
func (s *MemoryCrons) CountCrons(ctx context.Context, q CronQuery) (int, error) {
	all, err := s.selected(ctx, q)
	return len(all), err
}

func (s *MemoryCrons) selected(ctx context.Context, q CronQuery) ([]Cron, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Cron
	for _, c := range s.m {
		if (q.Assistant == "" || c.Assistant == q.Assistant) && (q.Thread == "" || c.Thread == q.Thread) &&
			(q.Enabled == nil || c.Enabled == *q.Enabled) {
			out = append(out, copyCron(c))
		}
	}
	return out, nil
}

// Due implements CronStore.
func (s *MemoryCrons) Due(ctx context.Context, now time.Time) ([]CronFiring, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CronFiring
	for id, c := range s.m {
		if !c.Enabled || c.NextRun == nil || c.NextRun.After(now) {
			continue
		}
		out = append(out, CronFiring{Cron: copyCron(c), At: *c.NextRun})
		c.NextRun = NextRun(c.Schedule, c.EndTime, now)
		s.m[id] = c
	}
	slices.SortFunc(out, func(x, y CronFiring) int { return cmp.Or(x.At.Compare(y.At), cmp.Compare(x.Cron.ID, y.Cron.ID)) })
	return out, nil
}
