package pgsaver

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// WithDeltaFanOut returns opts with the skip deltas' fan-out set to k, for
// the benchmarks that choose it.
func WithDeltaFanOut(opts Options, k int) *Options {
	opts.deltaFanOut = k
	return &opts
}

// WritesStored is an SQL expression counting the writes stored for the
// rows where cond holds: rows of checkpoint_writes, and the writes a
// checkpoint carries for its parent (parent_writes).
func WritesStored(cond string) string {
	return `((SELECT count(*) FROM checkpoint_writes WHERE ` + cond + `) +
		(SELECT coalesce(sum(jsonb_array_length(convert_from(parent_writes, 'UTF8')::jsonb)), 0)
		 FROM checkpoints WHERE (` + cond + `) AND parent_writes IS NOT NULL))`
}

// HoldLease gives thread a lease held at fence, for an hour, as the run
// queue's holder would.
func HoldLease(tb testing.TB, pool *pgxpool.Pool, thread string, fence int64) {
	tb.Helper()
	if _, err := pool.Exec(context.Background(), `INSERT INTO studio_thread_leases (thread_id, fence, holder, expires_at)
		VALUES ($1, $2, 'test', now() + interval '1 hour')`, thread, fence); err != nil {
		tb.Fatal(err)
	}
}
