package pgevents_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs/pgevents"
)

// setup returns two pools on one fresh schema, as two Studio replicas
// would have.
func setup(tb testing.TB) (a, b *pgxpool.Pool) {
	tb.Helper()
	ctx := context.Background()
	a = pgtest.Schema(tb, nil) // migrated: studio_events and studio_fence are there
	b, err := pgxpool.NewWithConfig(ctx, a.Config().Copy())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(b.Close)
	return a, b
}

// newTailer starts a tailer closed when the test ends; errs receives what
// it recovers from.
func newTailer(tb testing.TB, pool *pgxpool.Pool, opts *pgevents.TailerOptions) *pgevents.Tailer {
	tb.Helper()
	tl := pgevents.NewTailer(pool, opts)
	tb.Cleanup(tl.Close)
	return tl
}

// collector gathers what a follower is given.
type collector struct {
	mu   sync.Mutex
	rows []pgevents.Row
}

func (c *collector) add(rows []pgevents.Row) {
	c.mu.Lock()
	c.rows = append(c.rows, rows...)
	c.mu.Unlock()
}

func (c *collector) snapshot() []pgevents.Row {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]pgevents.Row(nil), c.rows...)
}

// waitRows polls (the rows come from another connection) until c holds at
// least n rows, and returns them.
func (c *collector) waitRows(tb testing.TB, n int) []pgevents.Row {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		rows := c.snapshot()
		if len(rows) >= n {
			return rows
		}
		if time.Now().After(deadline) {
			tb.Fatalf("a follower got %d rows in 15 s, want %d", len(rows), n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// checkSeqs fails unless rows are exactly seqs from..to, in order, each
// with the body body(seq).
func checkSeqs(tb testing.TB, rows []pgevents.Row, from, to int64, body func(int64) string) {
	tb.Helper()
	if int64(len(rows)) != to-from+1 {
		tb.Fatalf("got %d rows, want seqs %d..%d (%d rows)", len(rows), from, to, to-from+1)
	}
	for i, r := range rows {
		want := from + int64(i)
		if r.Seq != want {
			tb.Fatalf("row %d has seq %d, want %d (duplicate, missing or out of order)", i, r.Seq, want)
		}
		if body != nil && string(r.Body) != body(want) {
			tb.Fatalf("row seq %d has body %s, want %s", r.Seq, r.Body, body(want))
		}
	}
}

func numBody(seq int64) string { return fmt.Sprintf(`{"n": %d}`, seq) }

// appendN appends events first..last of thread one by one, each body
// numBody(seq).
func appendN(tb testing.TB, pool *pgxpool.Pool, thread string, first, last int64) {
	tb.Helper()
	for n := first; n <= last; n++ {
		f, l, err := pgevents.Append(context.Background(), pool, thread, "run-1", 0, [][]byte{[]byte(numBody(n))})
		if err != nil {
			tb.Fatal(err)
		}
		if f != n || l != n {
			tb.Fatalf("append numbered event %d as %d..%d", n, f, l)
		}
	}
}

// waitFor polls cond, which depends on another connection or goroutine,
// until it holds.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("waited 15 s for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
