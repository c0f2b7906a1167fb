// Package pgfence checks a thread lease's fencing token
// (checkpoints.WithFence) inside the transaction of a Postgres write, for
// every package that writes on behalf of a run: the checkpoint saver, the
// thread registry and the run log. The check is the studio_fence function
// (migrations 011 and 016), which takes the thread's lease lock shared (an
// advisory lock, held to commit), while every change of the lease's holder
// or fence takes it exclusively (a trigger): so a takeover waits for a
// write in flight to commit, and every write after it is refused.
package pgfence

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/superstep-dev/superstep/checkpoints"
)

// SQL refuses the transaction (SQLSTATE Code) unless the thread's lease is
// at the fence: nobody claimed or took the thread over since.
const SQL = `SELECT studio_fence($1, $2)`

// Code is the SQLSTATE studio_fence raises.
const Code = "SSF01"

// For returns the fence ctx carries for a write to thread (nil: none). A
// fence for another thread is a caller's bug: checking it would refuse or
// admit the write on the wrong lease.
func For(ctx context.Context, thread string) (*checkpoints.Fence, error) {
	f, ok := checkpoints.FenceFrom(ctx)
	if !ok {
		return nil, nil
	}
	if f.Thread != thread {
		return nil, fmt.Errorf("the context carries a fence for thread %q, but the write is to thread %q", f.Thread, thread)
	}
	// Copied here, not returned as &f: f would then live on the heap from
	// its declaration, and every write without a fence would allocate it.
	out := f
	return &out, nil
}

// Map turns studio_fence's refusal into checkpoints.ErrFenced, keeping
// the server's message (thread and fence) in the chain.
func Map(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == Code {
		return fmt.Errorf("%w: %w", checkpoints.ErrFenced, err)
	}
	return err
}

// DB is what Exec needs: a pool, a connection or a transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Exec runs one statement for thread; when ctx carries a fence it is
// checked first, in the same implicit transaction (one batch).
func Exec(ctx context.Context, db DB, thread, sql string, args ...any) error {
	f, err := For(ctx, thread)
	if err != nil {
		return err
	}
	if f == nil {
		_, err := db.Exec(ctx, sql, args...)
		return err
	}
	b := &pgx.Batch{}
	b.Queue(SQL, f.Thread, f.Token)
	b.Queue(sql, args...)
	return Map(db.SendBatch(ctx, b).Close())
}
