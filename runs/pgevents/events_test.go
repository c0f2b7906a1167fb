package pgevents_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/runs/pgevents"
)

func TestAppendNumbersEachThreadFromOne(t *testing.T) {
	t.Parallel()
	a, _ := setup(t)
	ctx := context.Background()
	first, last, err := pgevents.Append(ctx, a, "t1", "r1", 0, [][]byte{[]byte(numBody(1)), []byte(numBody(2)), []byte(numBody(3))})
	if err != nil || first != 1 || last != 3 {
		t.Fatalf("first append: %d..%d, %v; want 1..3", first, last, err)
	}
	if first, last, err = pgevents.Append(ctx, a, "t2", "r2", 0, [][]byte{[]byte(numBody(1))}); err != nil || first != 1 || last != 1 {
		t.Fatalf("another thread's first append: %d..%d, %v; want 1..1", first, last, err)
	}
	if first, last, err = pgevents.Append(ctx, a, "t1", "r1", 0, [][]byte{[]byte(numBody(4))}); err != nil || first != 4 || last != 4 {
		t.Fatalf("second append: %d..%d, %v; want 4..4", first, last, err)
	}
	rows, err := pgevents.Read(ctx, a, "t1", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkSeqs(t, rows, 2, 4, numBody)
	if rows[0].RunID != "r1" || rows[0].At.IsZero() {
		t.Fatalf("row %+v: want run r1 and a time", rows[0])
	}
	if rows, _ = pgevents.Read(ctx, a, "t1", 0, 2); len(rows) != 2 {
		t.Fatalf("read with limit 2 gave %d rows", len(rows))
	}
}

func TestAppendRejectsBadJSONWritingNothing(t *testing.T) {
	t.Parallel()
	a, _ := setup(t)
	ctx := context.Background()
	_, _, err := pgevents.Append(ctx, a, "t", "r", 0, [][]byte{[]byte(`{"ok":1}`), []byte(`{not json`)})
	if err == nil {
		t.Fatal("append of a body that is not JSON succeeded")
	}
	if rows, _ := pgevents.Read(ctx, a, "t", 0, 0); len(rows) != 0 {
		t.Fatalf("a failed append left %d rows", len(rows))
	}
}

func TestAppendInCallersTransaction(t *testing.T) {
	t.Parallel()
	a, _ := setup(t)
	ctx := context.Background()
	tx, err := a.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := pgevents.Append(ctx, tx, "t", "r", 0, [][]byte{[]byte(numBody(1))}); err != nil {
		t.Fatal(err)
	}
	if rows, _ := pgevents.Read(ctx, a, "t", 0, 0); len(rows) != 0 {
		t.Fatal("an append inside an open transaction is visible outside it")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if rows, _ := pgevents.Read(ctx, a, "t", 0, 0); len(rows) != 0 {
		t.Fatal("a rolled back append left rows")
	}
}

func TestFencedAppendWritesNothing(t *testing.T) {
	t.Parallel()
	a, _ := setup(t)
	ctx := context.Background()
	if _, err := a.Exec(ctx, `INSERT INTO studio_thread_leases (thread_id, fence, run_id, holder) VALUES ('t', 3, 'r', 'replica-b')`); err != nil {
		t.Fatal(err)
	}
	body := [][]byte{[]byte(numBody(1))}
	if _, _, err := pgevents.Append(ctx, a, "t", "r", 2, body); !errors.Is(err, pgevents.ErrFenced) {
		t.Fatalf("append at a superseded fence: %v, want ErrFenced", err)
	}
	if _, _, err := pgevents.Append(ctx, a, "unleased", "r", 1, body); !errors.Is(err, pgevents.ErrFenced) {
		t.Fatalf("append to a thread without a lease: %v, want ErrFenced", err)
	}
	if rows, _ := pgevents.Read(ctx, a, "t", 0, 0); len(rows) != 0 {
		t.Fatalf("fenced appends left %d rows", len(rows))
	}
	if _, _, err := pgevents.Append(ctx, a, "t", "r", 3, body); err != nil {
		t.Fatalf("append by the holder at its fence: %v", err)
	}
	// Reaped: the fence moves on and nobody holds the lease; the old
	// holder is refused.
	if _, err := a.Exec(ctx, `UPDATE studio_thread_leases SET holder = '', fence = fence + 1`); err != nil {
		t.Fatal(err)
	}
	if _, _, err := pgevents.Append(ctx, a, "t", "r", 3, body); !errors.Is(err, pgevents.ErrFenced) {
		t.Fatalf("append by the holder of a reaped lease: %v, want ErrFenced", err)
	}
	rows, _ := pgevents.Read(ctx, a, "t", 0, 0)
	checkSeqs(t, rows, 1, 1, numBody)
}

// TestNotifyPayloadFitsLongestThreadID appends to a thread with the
// longest id the Studio accepts and checks what a listener receives.
func TestNotifyPayloadFitsLongestThreadID(t *testing.T) {
	t.Parallel()
	a, _ := setup(t)
	ctx := context.Background()
	thread := strings.Repeat("aZ9._-", 22)[:128]
	conn, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var channel string
	if err := conn.QueryRow(ctx, `SELECT current_schema() || '.studio_events'`).Scan(&channel); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `LISTEN "`+channel+`"`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.Background(), "UNLISTEN *") //nolint:errcheck
	big := `{"text": "` + strings.Repeat("x", 20000) + `"}`
	if _, _, err := pgevents.Append(ctx, a, thread, "r", 0, [][]byte{[]byte(big), []byte(big)}); err != nil {
		t.Fatalf("append 40 kB of events to a 128-character thread: %v", err)
	}
	n, err := conn.Conn().WaitForNotification(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := thread + " 2"; n.Payload != want {
		t.Fatalf("payload %q, want %q", n.Payload, want)
	}
	if len(n.Payload) > 200 {
		t.Fatalf("payload of %d bytes for a 128-character thread: NOTIFY refuses 8000", len(n.Payload))
	}
}

func TestChannelNameFitsPostgresLimit(t *testing.T) {
	t.Parallel()
	a, _ := setup(t)
	for _, schema := range []string{"t_0123456789abcdef", strings.Repeat("s", 49), strings.Repeat("s", 50), strings.Repeat("é", 31)} {
		var channel string
		if err := a.QueryRow(context.Background(), pgevents.SQLChannelOf, schema).Scan(&channel); err != nil {
			t.Fatal(err)
		}
		if len(channel) > 63 {
			t.Errorf("schema %q: channel %q is %d bytes; Postgres truncates names beyond 63", schema, channel, len(channel))
		}
		if len(schema) <= 49 && channel != schema+".studio_events" {
			t.Errorf("schema %q: channel %q, want the schema's name then .studio_events", schema, channel)
		}
	}
}

func TestPruneKeepsNewestRows(t *testing.T) {
	t.Parallel()
	a, _ := setup(t)
	ctx := context.Background()
	appendN(t, a, "t", 1, 10)
	appendN(t, a, "u", 1, 2)
	if n, err := pgevents.Prune(ctx, a, 3, time.Hour); err != nil || n != 0 {
		t.Fatalf("prune of rows younger than an hour deleted %d, %v", n, err)
	}
	if n, err := pgevents.Prune(ctx, a, 3, 0); err != nil || n != 7 {
		t.Fatalf("prune keeping 3 per thread deleted %d, %v; want 7", n, err)
	}
	rows, _ := pgevents.Read(ctx, a, "t", 0, 0)
	checkSeqs(t, rows, 8, 10, numBody)
	if n, err := pgevents.Prune(ctx, a, 0, 0); err != nil || n != 3 {
		t.Fatalf("prune keeping none deleted %d, %v; want 3 (one kept per thread)", n, err)
	}
	// The thread goes on numbering from its newest row.
	appendN(t, a, "t", 11, 11)
	rows, _ = pgevents.Read(ctx, a, "t", 0, 0)
	checkSeqs(t, rows, 10, 11, numBody)
}

// TestConcurrentAppendsToOneThread: unfenced appends from two replicas at
// once each get seqs of their own, with no gap, and a follower reading
// meanwhile never sees a later row before an earlier one commits.
func TestConcurrentAppendsToOneThread(t *testing.T) {
	t.Parallel()
	a, b := setup(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, pool := range []*pgxpool.Pool{a, b, a, b} {
		wg.Go(func() {
			for range 50 {
				if _, _, err := pgevents.Append(ctx, pool, "t", "r", 0, [][]byte{[]byte(`{}`), []byte(`{}`)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var cursor int64
	var gaps int
	for cursor < 400 && !t.Failed() {
		rows, err := pgevents.Read(ctx, b, "t", cursor, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Seq != cursor+1 {
				gaps++
			}
			cursor = r.Seq
		}
	}
	wg.Wait()
	if gaps > 0 {
		t.Fatalf("a reader saw %d gaps in the log while appends ran", gaps)
	}
	rows, _ := pgevents.Read(ctx, a, "t", 0, 0)
	checkSeqs(t, rows, 1, 400, func(int64) string { return `{}` })
}
