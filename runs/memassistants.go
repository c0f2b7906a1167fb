package runs

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
)

// MemoryAssistants is the in-memory AssistantStore, for a Studio without
// a database and for tests. Nothing survives the process. It is safe for
// concurrent use.
type MemoryAssistants struct {
	mu sync.Mutex
	m  map[string]*memAssistant
}

// memAssistant is one assistant: its current fields and every version
// (versions[i] is version i+1).
type memAssistant struct {
	cur      Assistant
	versions []Assistant
}

var _ AssistantStore = (*MemoryAssistants)(nil)

// NewMemoryAssistants returns an empty store.
func NewMemoryAssistants() *MemoryAssistants {
	return &MemoryAssistants{m: map[string]*memAssistant{}}
}

// CreateAssistant implements AssistantStore.
func (s *MemoryAssistants) CreateAssistant(ctx context.Context, a Assistant, ifExists IfExists) (Assistant, error) {
	if err := ctx.Err(); err != nil {
		return Assistant{}, err
	}
	if err := CheckAssistant(a); err != nil {
		return Assistant{}, err
	}
	if err := checkIfExists(ifExists); err != nil {
		return Assistant{}, err
	}
	a = a.Normalized()
	a.Version = 1
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.m[a.ID]; ok {
		if ifExists == IfExistsDoNothing {
			return cur.cur.Normalized(), nil
		}
		return Assistant{}, fmt.Errorf("%w: %s", ErrAssistantExists, a.ID)
	}
	s.m[a.ID] = &memAssistant{cur: a, versions: []Assistant{a}}
	return a.Normalized(), nil
}

// checkIfExists refuses an IfExists that is neither choice ("" is raise).
func checkIfExists(ie IfExists) error {
	if ie != "" && ie != IfExistsRaise && ie != IfExistsDoNothing {
		return fmt.Errorf("%w: if_exists %q: use raise or do_nothing", ErrInvalidInput, clip(string(ie)))
	}
	return nil
}

// CheckIfExists reports why ie is not an IfExists choice, or nil ("" is
// IfExistsRaise).
func CheckIfExists(ie IfExists) error { return checkIfExists(ie) }

// GetAssistant implements AssistantStore.
func (s *MemoryAssistants) GetAssistant(ctx context.Context, id string) (Assistant, error) {
	if err := ctx.Err(); err != nil {
		return Assistant{}, err
	}
	if err := CheckAssistantID(id); err != nil {
		return Assistant{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.m[id]
	if !ok {
		return Assistant{}, fmt.Errorf("%w %s", ErrUnknownAssistant, id)
	}
	return cur.cur.Normalized(), nil
}

// PatchAssistant implements AssistantStore.
func (s *MemoryAssistants) PatchAssistant(ctx context.Context, id string, p AssistantPatch, at time.Time) (Assistant, error) {
	if err := ctx.Err(); err != nil {
		return Assistant{}, err
	}
	if err := CheckAssistantPatch(id, p, at); err != nil {
		return Assistant{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.m[id]
	if !ok {
		return Assistant{}, fmt.Errorf("%w %s", ErrUnknownAssistant, id)
	}
	next := p.Apply(cur.cur, at)
	next.Version = len(cur.versions) + 1
	cur.versions = append(cur.versions, next)
	cur.cur = next
	return next.Normalized(), nil
}

// DeleteAssistant implements AssistantStore.
func (s *MemoryAssistants) DeleteAssistant(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckAssistantID(id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[id]; !ok {
		return fmt.Errorf("%w %s", ErrUnknownAssistant, id)
	}
	delete(s.m, id)
	return nil
}

// SearchAssistants implements AssistantStore.
func (s *MemoryAssistants) SearchAssistants(ctx context.Context, q AssistantQuery) ([]Assistant, int, error) {
	all, err := s.matching(ctx, q)
	if err != nil {
		return nil, 0, err
	}
	SortAssistants(all, q.SortBy, q.Desc)
	return page(all, q.Limit, q.Offset), len(all), nil
}

// CountAssistants implements AssistantStore.
func (s *MemoryAssistants) CountAssistants(ctx context.Context, q AssistantQuery) (int, error) {
	all, err := s.matching(ctx, q)
	return len(all), err
}

func (s *MemoryAssistants) matching(ctx context.Context, q AssistantQuery) ([]Assistant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckAssistantQuery(q); err != nil {
		return nil, err
	}
	want := copyObject(q.Metadata)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Assistant
	for _, a := range s.m {
		c := a.cur
		if (q.Graph == "" || c.Graph == q.Graph) && (q.Name == "" || c.Name == q.Name) && checkpoints.ContainsJSON(c.Metadata, want) {
			out = append(out, c.Normalized())
		}
	}
	return out, nil
}

// SortAssistants orders as by the field sort names (created_at when ""),
// ties by id, ascending or descending; text compares bytewise.
func SortAssistants(as []Assistant, sort AssistantSort, desc bool) {
	slices.SortFunc(as, func(a, b Assistant) int {
		var c int
		switch sort {
		case SortByAssistantID:
		case SortByGraphID:
			c = cmp.Compare(a.Graph, b.Graph)
		case SortByName:
			c = cmp.Compare(a.Name, b.Name)
		case SortByUpdatedAt:
			c = a.Updated.Compare(b.Updated)
		default:
			c = a.Created.Compare(b.Created)
		}
		if c == 0 {
			c = cmp.Compare(a.ID, b.ID)
		}
		if desc {
			c = -c
		}
		return c
	})
}

func page[T any](all []T, limit, offset int) []T {
	if offset >= len(all) {
		return []T{}
	}
	all = all[offset:]
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	return all
}

// AssistantVersions implements AssistantStore.
func (s *MemoryAssistants) AssistantVersions(ctx context.Context, id string, q VersionQuery) ([]Assistant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckAssistantID(id); err != nil {
		return nil, err
	}
	if err := CheckVersionQuery(q); err != nil {
		return nil, err
	}
	want := copyObject(q.Metadata)
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.m[id]
	if !ok {
		return nil, fmt.Errorf("%w %s", ErrUnknownAssistant, id)
	}
	var out []Assistant
	for i := len(cur.versions) - 1; i >= 0; i-- {
		if v := cur.versions[i]; checkpoints.ContainsJSON(v.Metadata, want) {
			out = append(out, v.Normalized())
		}
	}
	return page(out, q.Limit, q.Offset), nil
}

// SetLatestVersion implements AssistantStore.
func (s *MemoryAssistants) SetLatestVersion(ctx context.Context, id string, version int, at time.Time) (Assistant, error) {
	if err := ctx.Err(); err != nil {
		return Assistant{}, err
	}
	if err := CheckAssistantID(id); err != nil {
		return Assistant{}, err
	}
	if at.IsZero() {
		return Assistant{}, fmt.Errorf("%w: assistant %s: a change needs a time", ErrInvalidInput, id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.m[id]
	if !ok {
		return Assistant{}, fmt.Errorf("%w %s", ErrUnknownAssistant, id)
	}
	if version < 1 || version > len(cur.versions) {
		return Assistant{}, fmt.Errorf("%w %s: no version %d", ErrUnknownAssistant, id, version)
	}
	next := cur.versions[version-1].Normalized()
	next.Created, next.Updated = cur.cur.Created, Stamp(at)
	cur.cur = next
	return next.Normalized(), nil
}
