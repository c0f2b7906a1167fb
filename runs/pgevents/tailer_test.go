package pgevents_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/runs/pgevents"
)

// TestFollowDeliversLiveAcrossPools follows on one pool (one replica)
// what a writer on another appends while the follower watches.
func TestFollowDeliversLiveAcrossPools(t *testing.T) {
	t.Parallel()
	a, b := setup(t)
	tl := newTailer(t, a, nil)
	var got collector
	stop := tl.Follow("t", 0, got.add)
	defer stop()
	w := pgevents.NewWriter(b, "t", "r", 0, nil)
	for n := int64(1); n <= 300; n++ {
		w.Add([]byte(numBody(n)))
		if n%50 == 0 {
			// Live: each part arrives before the next is written.
			got.waitRows(t, int(n))
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkSeqs(t, got.waitRows(t, 300), 1, 300, numBody)
	// Nothing comes twice after the fact.
	appendN(t, b, "t", 301, 301)
	checkSeqs(t, got.waitRows(t, 301), 1, 301, numBody)
}

func TestFollowThreeInterleavedRuns(t *testing.T) {
	t.Parallel()
	a, b := setup(t)
	tl := newTailer(t, a, nil)
	const threads, events = 3, 200
	got := make([]collector, threads)
	for i := range threads {
		defer tl.Follow(fmt.Sprintf("t%d", i), 0, got[i].add)()
	}
	var wg sync.WaitGroup
	for i := range threads {
		wg.Go(func() {
			thread := fmt.Sprintf("t%d", i)
			w := pgevents.NewWriter(b, thread, "run-"+thread, 0, nil)
			for n := int64(1); n <= events; n++ {
				w.Add(fmt.Appendf(nil, `{"n": %d, "thread": "%s"}`, n, thread))
				if n%20 == 0 {
					w.Close() //nolint:errcheck // checked below through the rows
					w = pgevents.NewWriter(b, thread, "run-"+thread, 0, nil)
				}
			}
			if err := w.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := range threads {
		thread := fmt.Sprintf("t%d", i)
		checkSeqs(t, got[i].waitRows(t, events), 1, events, func(n int64) string {
			return fmt.Sprintf(`{"n": %d, "thread": "%s"}`, n, thread)
		})
	}
}

func TestFollowReplaysFromAfter(t *testing.T) {
	t.Parallel()
	a, b := setup(t)
	appendN(t, b, "t", 1, 10)
	tl := newTailer(t, a, nil)
	var late, all collector
	defer tl.Follow("t", 4, late.add)()
	checkSeqs(t, late.waitRows(t, 6), 5, 10, numBody)
	defer tl.Follow("t", 0, all.add)()
	checkSeqs(t, all.waitRows(t, 10), 1, 10, numBody)
	appendN(t, b, "t", 11, 12)
	checkSeqs(t, late.waitRows(t, 8), 5, 12, numBody)
	checkSeqs(t, all.waitRows(t, 12), 1, 12, numBody)
}

// TestFollowAtOnceMissesNothing follows and appends before the tailer can
// have connected: what it appends then is not notified to it.
func TestFollowAtOnceMissesNothing(t *testing.T) {
	t.Parallel()
	a, b := setup(t)
	tl := newTailer(t, a, nil)
	var got collector
	defer tl.Follow("t", 0, got.add)()
	appendN(t, b, "t", 1, 3)
	checkSeqs(t, got.waitRows(t, 3), 1, 3, numBody)
}

func TestStoppedFollowerGetsNothingMore(t *testing.T) {
	t.Parallel()
	a, b := setup(t)
	tl := newTailer(t, a, nil)
	var gone, stays collector
	stop := tl.Follow("t", 0, gone.add)
	defer tl.Follow("t", 0, stays.add)()
	appendN(t, b, "t", 1, 2)
	gone.waitRows(t, 2)
	stays.waitRows(t, 2)
	stop()
	appendN(t, b, "t", 3, 4)
	checkSeqs(t, stays.waitRows(t, 4), 1, 4, numBody)
	if rows := gone.snapshot(); len(rows) != 2 {
		t.Fatalf("a stopped follower got %d rows, want the 2 before stop", len(rows))
	}
}

// listenerPID is the backend of a tailer LISTENing on pool's schema.
func listenerPID(t *testing.T, pool *pgxpool.Pool) int32 {
	t.Helper()
	var pid int32
	waitFor(t, "the tailer to LISTEN", func() bool {
		pid = pidOrZero(pool)
		return pid != 0
	})
	return pid
}

// TestTailerReconnectsWithoutLossOrDuplicates terminates the tailer's
// connection twice: once while another replica keeps appending, and once
// with the only appends made while no LISTEN is active (the tailer's
// backoff is long enough for them), which only the catch-up after the
// new LISTEN can deliver.
func TestTailerReconnectsWithoutLossOrDuplicates(t *testing.T) {
	t.Parallel()
	a, b := setup(t)
	ctx := context.Background()
	var failures atomic.Int32
	tl := newTailer(t, a, &pgevents.TailerOptions{
		MinBackoff: 300 * time.Millisecond,
		OnError:    func(error) { failures.Add(1) },
	})
	var got collector
	defer tl.Follow("t", 0, got.add)()
	kill := func() {
		pid := listenerPID(t, b)
		before := failures.Load()
		if _, err := b.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the tailer to notice", func() bool { return failures.Load() > before })
	}
	relistened := func() {
		waitFor(t, "the tailer to LISTEN again", func() bool { return pidOrZero(b) != 0 })
	}
	appendN(t, b, "t", 1, 50)
	got.waitRows(t, 50)

	var done atomic.Bool
	var wg sync.WaitGroup
	next := int64(51)
	wg.Go(func() {
		// Appends until the tailer is back, then 50 more.
		for more := 50; more > 0; next++ {
			if _, _, err := pgevents.Append(ctx, b, "t", "r", 0, [][]byte{[]byte(numBody(next))}); err != nil {
				t.Error(err)
				return
			}
			if done.Load() {
				more--
			}
		}
	})
	kill()
	relistened()
	done.Store(true)
	wg.Wait()
	checkSeqs(t, got.waitRows(t, int(next-1)), 1, next-1, numBody)

	kill()
	appendN(t, b, "t", next, next+29) // notified to nobody
	relistened()
	checkSeqs(t, got.waitRows(t, int(next+29)), 1, next+29, numBody)
}

// pidOrZero is the backend of a tailer LISTENing on pool's schema, or 0.
func pidOrZero(pool *pgxpool.Pool) int32 {
	var pid int32
	_ = pool.QueryRow(context.Background(), sqlListener).Scan(&pid)
	return pid
}

const sqlListener = `
SELECT pid FROM pg_stat_activity
WHERE datname = current_database() AND query = 'LISTEN "' || current_schema() || '.studio_events"'`

// TestSlowFollowerDoesNotDelayOtherThreads blocks one thread's follower
// while another thread's events flow.
func TestSlowFollowerDoesNotDelayOtherThreads(t *testing.T) {
	t.Parallel()
	a, b := setup(t)
	tl := newTailer(t, a, nil)
	release := make(chan struct{})
	unblock := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unblock) // before the tailer's Close, which waits for the follower
	var slow, fast collector
	defer tl.Follow("slow", 0, func(rows []pgevents.Row) {
		slow.add(rows)
		<-release
	})()
	defer tl.Follow("fast", 0, fast.add)()
	appendN(t, b, "slow", 1, 1)
	slow.waitRows(t, 1) // now stuck in its follower
	appendN(t, b, "slow", 2, 3)
	appendN(t, b, "fast", 1, 20)
	checkSeqs(t, fast.waitRows(t, 20), 1, 20, numBody)
	unblock()
	checkSeqs(t, slow.waitRows(t, 3), 1, 3, numBody)
}

// TestFollowersOfOneThreadKeepTheirOwnCursors: one read serves followers
// that started at different places; each gets only what it asked for.
func TestFollowersOfOneThreadKeepTheirOwnCursors(t *testing.T) {
	t.Parallel()
	a, b := setup(t)
	tl := newTailer(t, a, nil)
	var from7, from2 collector
	defer tl.Follow("t", 7, from7.add)()
	defer tl.Follow("t", 2, from2.add)()
	listenerPID(t, b)
	w := pgevents.NewWriter(b, "t", "r", 0, nil)
	for n := int64(1); n <= 10; n++ {
		w.Add([]byte(numBody(n)))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkSeqs(t, from2.waitRows(t, 8), 3, 10, numBody)
	checkSeqs(t, from7.waitRows(t, 3), 8, 10, numBody)
}

func TestFollowerMayStopItself(t *testing.T) {
	t.Parallel()
	a, b := setup(t)
	tl := newTailer(t, a, nil)
	var once, stays collector
	var stop func()
	var mu sync.Mutex
	mu.Lock()
	stop = tl.Follow("t", 0, func(rows []pgevents.Row) {
		once.add(rows)
		mu.Lock()
		defer mu.Unlock()
		stop()
	})
	mu.Unlock()
	defer tl.Follow("t", 0, stays.add)()
	appendN(t, b, "t", 1, 1)
	checkSeqs(t, once.waitRows(t, 1), 1, 1, numBody)
	stays.waitRows(t, 1)
	appendN(t, b, "t", 2, 3)
	checkSeqs(t, stays.waitRows(t, 3), 1, 3, numBody)
	checkSeqs(t, once.snapshot(), 1, 1, numBody)
}
