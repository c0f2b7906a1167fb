// Package pgthreads is the Postgres runs.ThreadStore: the Studio's thread
// registry, so the threads page and resuming an interrupted thread survive
// a restart. Its schema is migrations/005_threads.sql (table
// studio_threads, with 007 and 009); every statement is a constant in
// sql.go, or for lists and counts assembled there from constant fragments
// (listQuery), and takes its values as parameters.
package pgthreads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/internal/pgfence"
	"github.com/superstep-dev/superstep/internal/pgretry"
	"github.com/superstep-dev/superstep/runs"
)

// DB is what the registry needs of a connection: a *pgxpool.Pool, a
// *pgx.Conn or a pgx.Tx.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Store is the Postgres runs.ThreadStore. It is as safe for concurrent use
// as its DB (a pool is; a transaction is not).
type Store struct {
	db DB
	retrier
}

var _ runs.ThreadStore = (*Store)(nil)

// Option tunes a Store or a RunLog.
type Option func(*retrier)

// WithRetryWindow sets how long a read or write that met a transient
// database fault (connection refused or reset, a server restart) is
// retried before its error is returned: pgretry.DefaultWindow (30 s) by
// default on a pool; negative turns retries off. A DB that is not a pool
// (a transaction, a single connection) is never retried.
func WithRetryWindow(d time.Duration) Option { return func(r *retrier) { r.window = d } }

// retrier runs round trips through pgretry with a window; a DB that is
// not a pool gets none: a transaction's connection cannot come back.
type retrier struct{ window time.Duration }

func newRetrier(db DB, opts []Option) retrier {
	var r retrier // window 0: pgretry.DefaultWindow
	for _, o := range opts {
		o(&r)
	}
	if _, ok := db.(*pgxpool.Pool); !ok {
		r.window = -1
	}
	return r
}

// retry runs one round trip through pgretry; landed is nil for reads.
func (r retrier) retry(ctx context.Context, run func(context.Context) error, landed func(context.Context) (bool, error)) error {
	return pgretry.Do(ctx, r.window, pgretry.Op{Run: run, Landed: landed})
}

// New returns a registry on db, whose search_path must reach the table of
// migrations/005_threads.sql (migrated to 009 or later).
func New(db DB, opts ...Option) *Store { return &Store{db: db, retrier: newRetrier(db, opts)} }

// SaveThread implements runs.ThreadStore. Postgres would round the time
// to the microsecond; it is truncated first (runs.Stamp), as the memory
// registry does.
func (s *Store) SaveThread(ctx context.Context, rec runs.ThreadRecord) error {
	if err := runs.CheckThreadRecord(rec); err != nil {
		return err
	}
	rec = rec.Normalized()
	meta, err := metadata(rec)
	if err != nil {
		return err
	}
	// Stamped once, so a retried save of a new thread does not move it.
	if rec.Created.IsZero() {
		rec.Created = runs.Stamp(time.Now())
	}
	save := func(ctx context.Context) error {
		return pgfence.Exec(ctx, s.db, rec.ID, sqlSave, rec.ID, rec.Graph, string(rec.Status), rec.RunID, rec.Error,
			rec.Updated, list(rec.Before), list(rec.After),
			list(rec.Options.InterruptBefore), list(rec.Options.InterruptAfter), int32(rec.Options.RecursionLimit), rec.Owner,
			meta, rec.Created, orNull(rec.StateUpdated))
	}
	// A save whose outcome is unknown landed when the row reads back as
	// this record (but for Created, which a saved thread keeps); only
	// then is it not sent again.
	landed := func(ctx context.Context) (bool, error) {
		got, err := scan(s.db.QueryRow(ctx, sqlGet, rec.ID))
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		want := rec
		want.Created = got.Created
		return err == nil && reflect.DeepEqual(got, want), err
	}
	if err := s.retry(ctx, save, landed); err != nil {
		return fmt.Errorf("pgthreads: save thread %q: %w", rec.ID, err)
	}
	return nil
}

// GetThread implements runs.ThreadStore.
func (s *Store) GetThread(ctx context.Context, id string) (runs.ThreadRecord, error) {
	if err := runs.CheckThreadID(id); err != nil {
		return runs.ThreadRecord{}, err
	}
	var rec runs.ThreadRecord
	err := s.retry(ctx, func(ctx context.Context) (err error) {
		rec, err = scan(s.db.QueryRow(ctx, sqlGet, id))
		return err
	}, nil)
	if errors.Is(err, pgx.ErrNoRows) {
		return runs.ThreadRecord{}, fmt.Errorf("%w %q", runs.ErrUnknownThread, id)
	}
	if err != nil {
		return runs.ThreadRecord{}, fmt.Errorf("pgthreads: read thread %q: %w", id, err)
	}
	return rec, nil
}

// ListThreads implements runs.ThreadStore.
func (s *Store) ListThreads(ctx context.Context, f runs.ThreadFilter) ([]runs.ThreadRecord, error) {
	if err := runs.CheckThreadFilter(f); err != nil {
		return nil, err
	}
	q, args, err := listQuery(f, false)
	if err != nil {
		return nil, fmt.Errorf("pgthreads: list threads: %w", err)
	}
	var out []runs.ThreadRecord
	err = s.retry(ctx, func(ctx context.Context) error {
		rows, err := s.db.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (runs.ThreadRecord, error) { return scan(r) })
		return err
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("pgthreads: list threads: %w", err)
	}
	return out, nil
}

// CountThreads implements runs.ThreadStore.
func (s *Store) CountThreads(ctx context.Context, f runs.ThreadFilter) (int, error) {
	if err := runs.CheckThreadFilter(f); err != nil {
		return 0, err
	}
	q, args, err := listQuery(f, true)
	if err != nil {
		return 0, fmt.Errorf("pgthreads: count threads: %w", err)
	}
	var n int64
	err = s.retry(ctx, func(ctx context.Context) error {
		return s.db.QueryRow(ctx, q, args...).Scan(&n)
	}, nil)
	if err != nil {
		return 0, fmt.Errorf("pgthreads: count threads: %w", err)
	}
	return int(n), nil
}

// DeleteThread implements runs.ThreadStore. A delete sent again after an
// unknown outcome finds no row; it landed when the row is gone, and is
// then reported done, not unknown.
func (s *Store) DeleteThread(ctx context.Context, id string) error {
	if err := runs.CheckThreadID(id); err != nil {
		return err
	}
	var deleted, retried bool
	run := func(ctx context.Context) error {
		tag, err := s.db.Exec(ctx, sqlDelete, id)
		deleted = err == nil && tag.RowsAffected() == 1
		return err
	}
	landed := func(ctx context.Context) (bool, error) {
		var exists bool
		if err := s.db.QueryRow(ctx, sqlExists, id).Scan(&exists); err != nil {
			return false, err
		}
		retried = !exists
		return !exists, nil
	}
	if err := s.retry(ctx, run, landed); err != nil {
		return fmt.Errorf("pgthreads: delete thread %q: %w", id, err)
	}
	if !deleted && !retried {
		return fmt.Errorf("%w %q", runs.ErrUnknownThread, id)
	}
	return nil
}

// Heartbeat implements runs.ThreadStore. A beat sent again after an
// unknown outcome stores the same thing, so it is simply retried.
func (s *Store) Heartbeat(ctx context.Context, owner string, at time.Time) error {
	if err := runs.CheckHeartbeat(owner, at); err != nil {
		return err
	}
	at = runs.Stamp(at)
	err := s.retry(ctx, func(ctx context.Context) error {
		_, err := s.db.Exec(ctx, sqlHeartbeat, owner, at)
		return err
	}, func(context.Context) (bool, error) { return false, nil })
	if err != nil {
		return fmt.Errorf("pgthreads: heartbeat of %q: %w", owner, err)
	}
	return nil
}

// SettleThread implements runs.ThreadStore. It is one conditional
// UPDATE; sent again after an unknown outcome, it finds the row settled
// (no longer the orphan) and changes nothing, so the check for what
// landed is that the row reads back as rec.
func (s *Store) SettleThread(ctx context.Context, rec runs.ThreadRecord, owner, runID string) (bool, error) {
	if err := runs.CheckThreadRecord(rec); err != nil {
		return false, err
	}
	rec = rec.Normalized()
	meta, err := metadata(rec)
	if err != nil {
		return false, err
	}
	var settled bool
	run := func(ctx context.Context) error {
		tag, err := s.db.Exec(ctx, sqlSettle, rec.ID, rec.Graph, string(rec.Status), rec.RunID, rec.Error,
			rec.Updated, list(rec.Before), list(rec.After),
			list(rec.Options.InterruptBefore), list(rec.Options.InterruptAfter), int32(rec.Options.RecursionLimit), rec.Owner, owner, runID,
			meta, orNull(rec.StateUpdated))
		settled = err == nil && tag.RowsAffected() == 1
		return err
	}
	landed := func(ctx context.Context) (bool, error) {
		got, err := scan(s.db.QueryRow(ctx, sqlGet, rec.ID))
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		want := rec
		want.Created = got.Created
		ok := err == nil && reflect.DeepEqual(got, want)
		settled = settled || ok
		return ok, err
	}
	if err := s.retry(ctx, run, landed); err != nil {
		return false, fmt.Errorf("pgthreads: settle thread %q: %w", rec.ID, err)
	}
	return settled, nil
}

// Orphans implements runs.ThreadStore.
func (s *Store) Orphans(ctx context.Context, at time.Time, within time.Duration) ([]runs.ThreadRecord, error) {
	if err := runs.CheckOrphans(at, within); err != nil {
		return nil, err
	}
	var out []runs.ThreadRecord
	err := s.retry(ctx, func(ctx context.Context) error {
		rows, err := s.db.Query(ctx, sqlOrphans, runs.Stamp(at).Add(-within))
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (runs.ThreadRecord, error) { return scan(r) })
		return err
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("pgthreads: orphaned threads: %w", err)
	}
	return out, nil
}

func scan(row pgx.Row) (runs.ThreadRecord, error) {
	var rec runs.ThreadRecord
	var status string
	var limit int32
	var meta []byte
	var stateUpdated *time.Time
	err := row.Scan(&rec.ID, &rec.Graph, &status, &rec.RunID, &rec.Error, &rec.Updated,
		&rec.Before, &rec.After, &rec.Options.InterruptBefore, &rec.Options.InterruptAfter, &limit, &rec.Owner,
		&meta, &rec.Created, &stateUpdated)
	if err != nil {
		return runs.ThreadRecord{}, err
	}
	if err := json.Unmarshal(meta, &rec.Metadata); err != nil {
		return runs.ThreadRecord{}, fmt.Errorf("metadata of thread %q: %w", rec.ID, err)
	}
	if stateUpdated != nil {
		rec.StateUpdated = *stateUpdated
	}
	rec.Status, rec.Options.RecursionLimit = runs.Status(status), int(limit)
	return rec.Normalized(), nil
}

// metadata is rec's (normalized) metadata as the JSON text of the
// column, "{}" for none.
func metadata(rec runs.ThreadRecord) (string, error) {
	if len(rec.Metadata) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(rec.Metadata)
	if err != nil {
		return "", fmt.Errorf("pgthreads: thread %q: metadata: %w", rec.ID, err)
	}
	return string(b), nil
}

// orNull is t, or NULL for a zero time.
func orNull(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// list encodes nil as an empty array: the columns are NOT NULL.
func list(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
