package pgthreads

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/superstep-dev/superstep/runs"
)

// Assistants is the Postgres runs.AssistantStore, on the tables of
// migrations/008_assistants.sql. Every change is one statement, so it
// needs no transaction of its own and works on a pool, a connection or a
// caller's transaction alike. It is as safe for concurrent use as its DB.
type Assistants struct {
	db DB
	retrier
}

var _ runs.AssistantStore = (*Assistants)(nil)

// NewAssistants returns an assistant store on db, whose search_path must
// reach the tables of migrations/008_assistants.sql. Transient database
// faults are retried as the registry's are (see New and WithRetryWindow).
func NewAssistants(db DB, opts ...Option) *Assistants {
	return &Assistants{db: db, retrier: newRetrier(db, opts)}
}

// CreateAssistant implements runs.AssistantStore.
func (s *Assistants) CreateAssistant(ctx context.Context, a runs.Assistant, ifExists runs.IfExists) (runs.Assistant, error) {
	if err := runs.CheckAssistant(a); err != nil {
		return runs.Assistant{}, err
	}
	if err := runs.CheckIfExists(ifExists); err != nil {
		return runs.Assistant{}, err
	}
	a = a.Normalized()
	a.Version = 1
	cfg, cx, md, err := objects(a.Config, a.Context, a.Metadata)
	if err != nil {
		return runs.Assistant{}, err
	}
	var out runs.Assistant
	created := false
	run := func(ctx context.Context) error {
		var err error
		out, err = scanAssistant(s.db.QueryRow(ctx, sqlCreateAssistant, a.ID, a.Graph, a.Name, a.Description, cfg, cx, md, a.Created, a.Updated))
		created = err == nil
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	}
	// A create whose outcome is unknown landed when the row reads back
	// with this creation time.
	landed := func(ctx context.Context) (bool, error) {
		got, err := scanAssistant(s.db.QueryRow(ctx, sqlGetAssistant, a.ID))
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		if err == nil && got.Created.Equal(a.Created) && got.Version == 1 {
			out, created = got, true
			return true, nil
		}
		return false, err
	}
	if err := s.retry(ctx, run, landed); err != nil {
		return runs.Assistant{}, fmt.Errorf("pgthreads: create assistant %s: %w", a.ID, err)
	}
	if created {
		return out, nil
	}
	if ifExists == runs.IfExistsDoNothing {
		return s.GetAssistant(ctx, a.ID)
	}
	return runs.Assistant{}, fmt.Errorf("%w: %s", runs.ErrAssistantExists, a.ID)
}

// GetAssistant implements runs.AssistantStore.
func (s *Assistants) GetAssistant(ctx context.Context, id string) (runs.Assistant, error) {
	if err := runs.CheckAssistantID(id); err != nil {
		return runs.Assistant{}, err
	}
	var out runs.Assistant
	err := s.retry(ctx, func(ctx context.Context) (err error) {
		out, err = scanAssistant(s.db.QueryRow(ctx, sqlGetAssistant, id))
		return err
	}, nil)
	if errors.Is(err, pgx.ErrNoRows) {
		return runs.Assistant{}, fmt.Errorf("%w %s", runs.ErrUnknownAssistant, id)
	}
	if err != nil {
		return runs.Assistant{}, fmt.Errorf("pgthreads: read assistant %s: %w", id, err)
	}
	return out, nil
}

// PatchAssistant implements runs.AssistantStore.
func (s *Assistants) PatchAssistant(ctx context.Context, id string, p runs.AssistantPatch, at time.Time) (runs.Assistant, error) {
	if err := runs.CheckAssistantPatch(id, p, at); err != nil {
		return runs.Assistant{}, err
	}
	at = runs.Stamp(at)
	var cfg, cx []byte
	var err error
	if p.Config != nil {
		if cfg, err = runs.EncodeAssistantObject(p.Config); err != nil {
			return runs.Assistant{}, err
		}
	}
	if p.Context != nil {
		if cx, err = runs.EncodeAssistantObject(p.Context); err != nil {
			return runs.Assistant{}, err
		}
	}
	md, err := runs.EncodeAssistantObject(p.Metadata)
	if err != nil {
		return runs.Assistant{}, err
	}
	var out runs.Assistant
	run := func(ctx context.Context) (err error) {
		out, err = scanAssistant(s.db.QueryRow(ctx, sqlPatchAssistant, id, p.Graph, p.Name, p.Description != nil, p.Description, cfg, cx, md, at))
		return err
	}
	// A change whose outcome is unknown landed when the assistant's
	// current version was made at this change's time.
	landed := func(ctx context.Context) (bool, error) {
		got, err := scanAssistant(s.db.QueryRow(ctx, sqlGetAssistant, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		if err == nil && got.Updated.Equal(at) {
			out = got
			return true, nil
		}
		return false, err
	}
	err = s.retry(ctx, run, landed)
	if errors.Is(err, pgx.ErrNoRows) {
		return runs.Assistant{}, fmt.Errorf("%w %s", runs.ErrUnknownAssistant, id)
	}
	if err != nil {
		return runs.Assistant{}, fmt.Errorf("pgthreads: change assistant %s: %w", id, err)
	}
	return out, nil
}

// DeleteAssistant implements runs.AssistantStore; its versions go with it.
func (s *Assistants) DeleteAssistant(ctx context.Context, id string) error {
	if err := runs.CheckAssistantID(id); err != nil {
		return err
	}
	deleted := false
	run := func(ctx context.Context) error {
		tag, err := s.db.Exec(ctx, sqlDeleteAssistant, id)
		deleted = err == nil && tag.RowsAffected() == 1
		return err
	}
	landed := func(ctx context.Context) (bool, error) {
		var exists bool
		err := s.db.QueryRow(ctx, sqlAssistantExists, id).Scan(&exists)
		deleted = err == nil && !exists
		return deleted, err
	}
	if err := s.retry(ctx, run, landed); err != nil {
		return fmt.Errorf("pgthreads: delete assistant %s: %w", id, err)
	}
	if !deleted {
		return fmt.Errorf("%w %s", runs.ErrUnknownAssistant, id)
	}
	return nil
}

// SearchAssistants implements runs.AssistantStore.
func (s *Assistants) SearchAssistants(ctx context.Context, q runs.AssistantQuery) ([]runs.Assistant, int, error) {
	if err := runs.CheckAssistantQuery(q); err != nil {
		return nil, 0, err
	}
	md, err := runs.EncodeAssistantObject(q.Metadata)
	if err != nil {
		return nil, 0, err
	}
	var limit *int64
	if q.Limit > 0 {
		l := int64(q.Limit)
		limit = &l
	}
	var out []runs.Assistant
	var total int
	err = s.retry(ctx, func(ctx context.Context) error {
		rows, err := s.db.Query(ctx, sqlSearchAssistants(q.SortBy, q.Desc), q.Graph, q.Name, md, limit, int64(q.Offset))
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (runs.Assistant, error) { return scanAssistant(r) })
		if err != nil {
			return err
		}
		return s.db.QueryRow(ctx, sqlCountAssistants, q.Graph, q.Name, md).Scan(&total)
	}, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("pgthreads: search assistants: %w", err)
	}
	if out == nil {
		out = []runs.Assistant{}
	}
	return out, total, nil
}

// CountAssistants implements runs.AssistantStore.
func (s *Assistants) CountAssistants(ctx context.Context, q runs.AssistantQuery) (int, error) {
	if err := runs.CheckAssistantQuery(q); err != nil {
		return 0, err
	}
	md, err := runs.EncodeAssistantObject(q.Metadata)
	if err != nil {
		return 0, err
	}
	var n int
	err = s.retry(ctx, func(ctx context.Context) error {
		return s.db.QueryRow(ctx, sqlCountAssistants, q.Graph, q.Name, md).Scan(&n)
	}, nil)
	if err != nil {
		return 0, fmt.Errorf("pgthreads: count assistants: %w", err)
	}
	return n, nil
}

// AssistantVersions implements runs.AssistantStore.
func (s *Assistants) AssistantVersions(ctx context.Context, id string, q runs.VersionQuery) ([]runs.Assistant, error) {
	if err := runs.CheckAssistantID(id); err != nil {
		return nil, err
	}
	if err := runs.CheckVersionQuery(q); err != nil {
		return nil, err
	}
	md, err := runs.EncodeAssistantObject(q.Metadata)
	if err != nil {
		return nil, err
	}
	var limit *int64
	if q.Limit > 0 {
		l := int64(q.Limit)
		limit = &l
	}
	var out []runs.Assistant
	exists := true
	err = s.retry(ctx, func(ctx context.Context) error {
		rows, err := s.db.Query(ctx, sqlAssistantVersions, id, md, limit, int64(q.Offset))
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (runs.Assistant, error) { return scanAssistant(r) })
		if err != nil || len(out) > 0 {
			return err
		}
		return s.db.QueryRow(ctx, sqlAssistantExists, id).Scan(&exists)
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("pgthreads: versions of assistant %s: %w", id, err)
	}
	if !exists {
		return nil, fmt.Errorf("%w %s", runs.ErrUnknownAssistant, id)
	}
	if out == nil {
		out = []runs.Assistant{}
	}
	return out, nil
}

// SetLatestVersion implements runs.AssistantStore. Sent again after an
// unknown outcome it makes the same version current at the same time, so
// it is simply retried.
func (s *Assistants) SetLatestVersion(ctx context.Context, id string, version int, at time.Time) (runs.Assistant, error) {
	if err := runs.CheckAssistantID(id); err != nil {
		return runs.Assistant{}, err
	}
	if at.IsZero() {
		return runs.Assistant{}, fmt.Errorf("%w: assistant %s: a change needs a time", runs.ErrInvalidInput, id)
	}
	var out runs.Assistant
	err := s.retry(ctx, func(ctx context.Context) (err error) {
		out, err = scanAssistant(s.db.QueryRow(ctx, sqlSetLatestVersion, id, int32(min(max(version, 0), 1<<31-1)), runs.Stamp(at)))
		return err
	}, func(context.Context) (bool, error) { return false, nil })
	if errors.Is(err, pgx.ErrNoRows) {
		return runs.Assistant{}, fmt.Errorf("%w %s: no version %d", runs.ErrUnknownAssistant, id, version)
	}
	if err != nil {
		return runs.Assistant{}, fmt.Errorf("pgthreads: set the version of assistant %s: %w", id, err)
	}
	return out, nil
}

// objects encodes an assistant's three JSON objects.
func objects(ms ...map[string]any) (cfg, cx, md []byte, err error) {
	var out [3][]byte
	for i, m := range ms {
		if out[i], err = runs.EncodeAssistantObject(m); err != nil {
			return nil, nil, nil, err
		}
	}
	return out[0], out[1], out[2], nil
}

// scanAssistant reads the columns of assistantColumns.
func scanAssistant(row pgx.Row) (runs.Assistant, error) {
	var a runs.Assistant
	var cfg, cx, md []byte
	var version int32
	if err := row.Scan(&a.ID, &a.Graph, &a.Name, &a.Description, &cfg, &cx, &md, &version, &a.Created, &a.Updated); err != nil {
		return runs.Assistant{}, err
	}
	a.Version = int(version)
	for _, f := range []struct {
		b   []byte
		dst *map[string]any
	}{{cfg, &a.Config}, {cx, &a.Context}, {md, &a.Metadata}} {
		m, err := runs.DecodeAssistantObject(f.b)
		if err != nil {
			return runs.Assistant{}, fmt.Errorf("assistant %s: %w", a.ID, err)
		}
		*f.dst = m
	}
	return a.Normalized(), nil
}

// assistantOrders are the ORDER BY clauses of a search, by sort field;
// ties go by id in the same direction, as runs.SortAssistants orders.
var assistantOrders = map[runs.AssistantSort][2]string{
	"":                     {"created_at, id", "created_at DESC, id DESC"},
	runs.SortByCreatedAt:   {"created_at, id", "created_at DESC, id DESC"},
	runs.SortByUpdatedAt:   {"updated_at, id", "updated_at DESC, id DESC"},
	runs.SortByAssistantID: {"id", "id DESC"},
	runs.SortByGraphID:     {"graph, id", "graph DESC, id DESC"},
	runs.SortByName:        {"name, id", "name DESC, id DESC"},
}

// sqlSearchAssistants is the search statement for an order (checked by
// runs.CheckAssistantQuery). LIMIT NULL means no limit.
func sqlSearchAssistants(sort runs.AssistantSort, desc bool) string {
	dir := 0
	if desc {
		dir = 1
	}
	return `SELECT ` + assistantColumns + ` FROM studio_assistants ` + assistantFilter + `
ORDER BY ` + assistantOrders[sort][dir] + `
LIMIT $4 OFFSET $5`
}
