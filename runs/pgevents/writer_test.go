package pgevents_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs/pgevents"
)

func TestWriterAppendsInOrderInBatches(t *testing.T) {
	t.Parallel()
	a, _ := setup(t)
	ctx := context.Background()
	w := pgevents.NewWriter(a, "t", "r", 0, nil)
	for n := int64(1); n <= 500; n++ {
		w.Add([]byte(numBody(n)))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err := pgevents.Read(ctx, a, "t", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkSeqs(t, rows, 1, 500, numBody)
	// Each append is a transaction, and at is its start time.
	var appends int
	if err := a.QueryRow(ctx, `SELECT count(DISTINCT at) FROM studio_events`).Scan(&appends); err != nil {
		t.Fatal(err)
	}
	if appends > 50 {
		t.Fatalf("500 events added at once took %d appends; the writer does not batch", appends)
	}
}

// TestWriterAddDoesNotWaitForDatabase holds the thread's append lock in
// another transaction: Adds return, and the events land once it is freed.
func TestWriterAddDoesNotWaitForDatabase(t *testing.T) {
	t.Parallel()
	a, b := setup(t)
	ctx := context.Background()
	blocker, err := b.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(ctx) //nolint:errcheck
	if _, _, err := pgevents.Append(ctx, blocker, "t", "other", 0, [][]byte{[]byte(numBody(1))}); err != nil {
		t.Fatal(err)
	}
	w := pgevents.NewWriter(a, "t", "r", 0, nil)
	for n := int64(2); n <= 300; n++ {
		w.Add([]byte(numBody(n))) // would hang the test if it waited
	}
	if rows, _ := pgevents.Read(ctx, a, "t", 0, 0); len(rows) != 0 {
		t.Fatalf("%d rows visible while the first append is uncommitted", len(rows))
	}
	if err := blocker.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rows, _ := pgevents.Read(ctx, a, "t", 0, 0)
	checkSeqs(t, rows, 1, 300, numBody)
}

func TestWriterStopsWhenFenced(t *testing.T) {
	t.Parallel()
	a, _ := setup(t)
	ctx := context.Background()
	if _, err := a.Exec(ctx, `INSERT INTO studio_thread_leases (thread_id, fence, run_id, holder) VALUES ('t', 1, 'r', 'me')`); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var reported []error
	w := pgevents.NewWriter(a, "t", "r", 1, &pgevents.WriterOptions{OnError: func(err error) {
		mu.Lock()
		reported = append(reported, err)
		mu.Unlock()
	}})
	w.Add([]byte(numBody(1)))
	waitFor(t, "the first event is written", func() bool {
		rows, _ := pgevents.Read(ctx, a, "t", 0, 0)
		return len(rows) == 1
	})
	// Another replica takes the run over.
	if _, err := a.Exec(ctx, `UPDATE studio_thread_leases SET fence = 2, holder = 'other'`); err != nil {
		t.Fatal(err)
	}
	w.Add([]byte(numBody(2)))
	waitFor(t, "the writer reports it is fenced", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reported) > 0
	})
	for n := int64(3); n <= 100; n++ {
		w.Add([]byte(numBody(n)))
	}
	if err := w.Close(); !errors.Is(err, pgevents.ErrFenced) {
		t.Fatalf("Close after being fenced: %v, want ErrFenced", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 1 || !errors.Is(reported[0], pgevents.ErrFenced) {
		t.Fatalf("OnError got %v, want ErrFenced once", reported)
	}
	rows, _ := pgevents.Read(ctx, a, "t", 0, 0)
	checkSeqs(t, rows, 1, 1, numBody)
}

func TestWriterRetriesRefusedConnections(t *testing.T) {
	t.Parallel()
	a, _ := setup(t)
	proxy := pgtest.NewProxy(t)
	cfg := a.Config().Copy()
	cfg.ConnConfig.DialFunc = proxy.Dial
	flaky, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer flaky.Close()
	proxy.Refuse(3)
	w := pgevents.NewWriter(flaky, "t", "r", 0, nil)
	for n := int64(1); n <= 10; n++ {
		w.Add([]byte(numBody(n)))
	}
	if err := w.Close(); err != nil {
		t.Fatalf("a writer whose first connections were refused: %v", err)
	}
	if _, refused := proxy.Counts(); refused != 3 {
		t.Fatalf("the proxy refused %d connections, want 3", refused)
	}
	rows, _ := pgevents.Read(context.Background(), a, "t", 0, 0)
	checkSeqs(t, rows, 1, 10, numBody)
}
