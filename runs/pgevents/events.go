package pgevents

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrFenced reports an append refused because the writer no longer holds
// the thread's lease at the fence it gave: another replica has taken the
// run over, and nothing of the refused append was written.
var ErrFenced = errors.New("pgevents: fenced out of the thread (another replica holds its lease)")

// sqlStateFenced is the SQLSTATE studio_fence raises.
const sqlStateFenced = "SSF01"

// Batcher is what Append writes through: a *pgxpool.Pool, a *pgx.Conn,
// or a pgx.Tx (the append then commits with the caller's transaction).
type Batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Querier is what Read reads through: a pool, a connection or a
// transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Execer is what Prune deletes through.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Row is one event of a thread's log.
type Row struct {
	// Seq numbers the thread's events from 1, without gaps.
	Seq int64
	// RunID is the run that appended the event.
	RunID string
	// Body is the event as appended, normalised by jsonb (key order and
	// whitespace may differ).
	Body []byte
	// At is when the event was appended (the database's clock).
	At time.Time
}

// Append writes bodies (each a JSON document) as the next events of
// thread, in one implicit transaction (one round trip), and returns their
// first and last seq. With fence > 0 the transaction first checks, with
// studio_fence, that the caller still holds the thread's lease at that
// fence; if not it returns ErrFenced and writes nothing. Fence 0 skips the
// check, for a single process. On commit, followers of the thread are
// notified on the schema's studio_events channel. Appending no bodies
// does nothing and returns 0, 0. The append commits durably: an event
// committed and shown but lost in a crash would have its seq taken again
// by the next, and a tab resuming after it would miss that one.
func Append(ctx context.Context, db Batcher, thread, runID string, fence int64, bodies [][]byte) (first, last int64, err error) {
	if len(bodies) == 0 {
		return 0, 0, nil
	}
	texts := make([]string, len(bodies))
	for i, b := range bodies {
		texts[i] = string(b)
	}
	var batch pgx.Batch
	if fence > 0 {
		batch.Queue(sqlFence, thread, fence)
	}
	batch.Queue(sqlLock, lockClass, thread)
	batch.Queue(sqlInsert, thread, runID, texts).QueryRow(func(r pgx.Row) error {
		return r.Scan(&first, &last)
	})
	batch.Queue(sqlNotify, thread)
	if err := db.SendBatch(ctx, &batch).Close(); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == sqlStateFenced {
			return 0, 0, fmt.Errorf("%w: thread %q at fence %d", ErrFenced, thread, fence)
		}
		return 0, 0, fmt.Errorf("pgevents: append %d events to thread %q: %w", len(bodies), thread, err)
	}
	return first, last, nil
}

// Read returns up to limit events of thread with seq > after, in seq
// order; limit <= 0 means no limit.
func Read(ctx context.Context, db Querier, thread string, after int64, limit int) ([]Row, error) {
	var lim any // NULL: LIMIT ALL
	if limit > 0 {
		lim = limit
	}
	rows, err := db.Query(ctx, sqlRead, thread, after, lim)
	if err != nil {
		return nil, fmt.Errorf("pgevents: read thread %q after %d: %w", thread, after, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Row, error) {
		var row Row
		err := r.Scan(&row.Seq, &row.RunID, &row.Body, &row.At)
		return row, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgevents: read thread %q after %d: %w", thread, after, err)
	}
	return out, nil
}

// Recent returns the latest events of the run thread's log ends with,
// at most limit of them (after the last event of any other run), in seq
// order, and the seq of the log's newest event (0 when it has none): a
// follower that starts after it gets every event from then on.
func Recent(ctx context.Context, db Querier, thread string, limit int) ([]Row, int64, error) {
	rows, err := db.Query(ctx, sqlRecent, thread, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("pgevents: read the recent events of thread %q: %w", thread, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Row, error) {
		var row Row
		err := r.Scan(&row.Seq, &row.RunID, &row.Body, &row.At)
		return row, err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("pgevents: read the recent events of thread %q: %w", thread, err)
	}
	slices.Reverse(out)
	var last int64
	if len(out) > 0 {
		last = out[len(out)-1].Seq
	}
	return out, last, nil
}

// Prune deletes the events older than olderThan, except each thread's
// newest keepPerThread and, always, its newest one: seq continues from
// the newest row, so a thread's log must never become empty while
// followers hold cursors into it. It returns how many rows it deleted.
func Prune(ctx context.Context, db Execer, keepPerThread int, olderThan time.Duration) (int64, error) {
	tag, err := db.Exec(ctx, sqlPrune, int64(keepPerThread), olderThan.Seconds())
	if err != nil {
		return 0, fmt.Errorf("pgevents: prune events: %w", err)
	}
	return tag.RowsAffected(), nil
}
