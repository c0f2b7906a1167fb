package riverq_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/internal/pgtest"

	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/riverq"
)

// enqueue keeps a run of the counting graph pending on thread, logging
// tag first.
func enqueue(t *testing.T, m *runs.Manager, thread, tag string, delay time.Duration) string {
	t.Helper()
	id := uuid.NewString()
	err := m.Enqueue(context.Background(), runs.RunRequest{Graph: "count", Thread: thread, RunID: id,
		Input: map[string]any{"log": []string{tag}}}, delay, runs.QueueLimits{})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestPendingRunsStartInOrderInAnotherProcess: two runs queued in A
// behind A's held run; A stops (handing its run back): B continues the
// run, then starts the queued ones in their order.
func TestPendingRunsStartInOrderInAnotherProcess(t *testing.T) {
	t.Parallel()
	_, _, a, b := runHeld(t, 2, false, "order")
	first := enqueue(t, a.m, "order", "p1", 0)
	second := enqueue(t, a.m, "order", "p2", 0)
	pend, err := b.m.PendingRuns(context.Background(), "order")
	if err != nil {
		t.Fatal(err)
	}
	if len(pend) != 2 || pend[0].RunID != first || pend[1].RunID != second {
		t.Fatalf("B lists the pending runs %v, want %s then %s", pend, first, second)
	}
	if err := a.q.Shutdown(context.Background(), a.m, 0); err != nil { // hands the held run back
		t.Fatal(err)
	}
	// A run's record ends just after its last checkpoint: wait for both.
	waitFor(t, "B to run the queued runs", 15*time.Second, func() bool {
		if s := finalState(t, b.m, "order"); s.N != steps+2 {
			return false
		}
		rec, err := b.m.RunRecord(context.Background(), "order", second)
		return err == nil && !rec.Ended.IsZero()
	})
	s := finalState(t, b.m, "order")
	i, j := slices.Index(s.Log, "p1"), slices.Index(s.Log, "p2")
	if i < 0 || j < i || s.Log[i+1] != "b:6" || s.Log[j+1] != "b:7" {
		t.Fatalf("log %v: want p1 then its step, then p2 and its step, run by B", s.Log)
	}
	for _, id := range []string{first, second} {
		rec, err := b.m.RunRecord(context.Background(), "order", id)
		if err != nil || rec.Status != runs.StatusIdle || rec.Ended.IsZero() {
			t.Fatalf("queued run %s: %+v %v, want ended", id, rec, err)
		}
	}
}

// TestPendingRunsMakeTheThreadBusy: a run delayed on a free thread makes
// it busy: a new run does not jump ahead of it, nor does a second process
// start it before its time.
func TestPendingRunsMakeTheThreadBusy(t *testing.T) {
	t.Parallel()
	_, _, a, b := runHeld(t, 1, false, "other")
	close(a.release)
	if _, err := a.m.Start(context.Background(), "count", "busy", map[string]any{"n": 0}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first run to end and let the thread go", 10*time.Second, func() bool {
		_, ok, err := a.q.Active(context.Background(), "busy")
		return err == nil && !ok
	})
	id := enqueue(t, a.m, "busy", "later", time.Hour)
	_, err := b.m.Start(context.Background(), "count", "busy", map[string]any{"log": []string{"now"}}, runs.StartOptions{})
	if !errors.Is(err, runs.ErrThreadBusy) {
		t.Fatalf("a run on a thread with a queued run: %v, want ErrThreadBusy", err)
	}
	if _, ok, err := b.m.PendingRun(context.Background(), id); !ok || err != nil {
		t.Fatalf("the delayed run is no longer pending (%v): it started before its time", err)
	}
	// Cancelled, it frees the thread, and reads as cancelled before it
	// started.
	taken, err := b.m.CancelPending(context.Background(), "busy", id, false)
	if err != nil || len(taken) != 1 {
		t.Fatalf("cancel = %v %v", taken, err)
	}
	rec, err := a.m.RunRecord(context.Background(), "busy", id)
	if err != nil || rec.Meta == nil || rec.Meta.NotStarted != runs.NotStartedCancelled || rec.Error != "cancelled" {
		t.Fatalf("the cancelled queued run's record: %+v %v", rec, err)
	}
	if _, err := b.m.Start(context.Background(), "count", "busy", map[string]any{"log": []string{"now"}}, runs.StartOptions{}); err != nil {
		t.Fatalf("a run once the queue is empty: %v", err)
	}
}

// TestQueueLimits: a thread's queue, and all queues together, hold at
// most as many runs as the limits say.
func TestQueueLimits(t *testing.T) {
	t.Parallel()
	_, _, a, _ := runHeld(t, 2, false, "full")
	ctx := context.Background()
	limits := runs.QueueLimits{PerThread: 2, Total: 3}
	add := func(thread string) error {
		return a.m.Enqueue(ctx, runs.RunRequest{Graph: "count", Thread: thread, RunID: uuid.NewString(), Input: map[string]any{}}, time.Hour, limits)
	}
	for _, th := range []string{"full", "full", "another"} {
		if err := add(th); err != nil {
			t.Fatal(err)
		}
	}
	if err := add("full"); !errors.Is(err, runs.ErrQueueFull) {
		t.Fatalf("a third run on a thread: %v, want ErrQueueFull", err)
	}
	if err := add("third"); !errors.Is(err, runs.ErrQueueFull) {
		t.Fatalf("a fourth run in all: %v, want ErrQueueFull", err)
	}
	// /healthz's queue depth.
	if st, err := a.q.Stats(ctx); err != nil || st.Queued != 3 || st.Active != 1 {
		t.Fatalf("stats %+v %v, want 3 queued and 1 active", st, err)
	}
}

// TestLostStartJobIsReplaced: the job that would start a thread's next
// run was taken by a worker that died: the reaper gives it another.
func TestLostStartJobIsReplaced(t *testing.T) {
	t.Parallel()
	pool, _, a, b := runHeld(t, 1, false, "held")
	close(a.release)
	ctx := context.Background()
	id := enqueue(t, b.m, "lost-start", "queued", 200*time.Millisecond)
	// As a dead worker leaves it: its job gone, its dispatch long ago.
	if _, err := pool.Exec(ctx, `DELETE FROM river_job WHERE id = (SELECT job_id FROM studio_run_queue WHERE run_id = $1)`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE studio_run_queue SET job_id = 999999, dispatched_at = now() - interval '1 hour' WHERE run_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the queued run to run", 15*time.Second, func() bool {
		rec, err := a.m.RunRecord(ctx, "lost-start", id)
		return err == nil && !rec.Ended.IsZero()
	})
	if s := finalState(t, a.m, "lost-start"); s.N != steps || s.Log[0] != "queued" {
		t.Fatalf("state %+v", s)
	}
}

// TestHoldKeepsPendingRunsWaiting: a held thread's queued run does not
// start when the thread goes free, but once the hold is released; a hold
// whose process died lapses on its own.
func TestHoldKeepsPendingRunsWaiting(t *testing.T) {
	t.Parallel()
	_, _, a, b := runHeld(t, 2, false, "hold")
	ctx := context.Background()
	release, err := a.m.HoldQueue(ctx, "hold")
	if err != nil {
		t.Fatal(err)
	}
	id := enqueue(t, b.m, "hold", "next", 0)
	close(a.release)
	waitFor(t, "the held run to end", 10*time.Second, func() bool {
		th, err := a.m.Thread(ctx, "hold")
		return err == nil && th.Status == runs.StatusIdle
	})
	// Not a synchronisation: the time of several polls and reaps, in
	// which nothing may start the queued run.
	time.Sleep(300 * time.Millisecond)
	if _, ok, err := a.m.PendingRun(ctx, id); !ok || err != nil {
		t.Fatalf("the queued run started while its thread was held (%v)", err)
	}
	release()
	waitFor(t, "the queued run to run once released", 10*time.Second, func() bool {
		rec, err := a.m.RunRecord(ctx, "hold", id)
		return err == nil && !rec.Ended.IsZero()
	})
}

// TestHoldLapses: a hold whose process never released it (it died) stops
// holding the thread's queued runs once its time is up.
func TestHoldLapses(t *testing.T) {
	t.Parallel()
	pool, _, a, b := runHeld(t, 1, false, "held-elsewhere")
	close(a.release)
	ctx := context.Background()
	// As a process that died holding the thread leaves it: its hold no
	// longer renewed.
	if _, err := pool.Exec(ctx, `INSERT INTO studio_queue_holds (thread_id, hold_id, until) VALUES ('lapse', 'dead', now() + interval '400 milliseconds')`); err != nil {
		t.Fatal(err)
	}
	held := time.Now()
	id := enqueue(t, b.m, "lapse", "after", 0)
	waitFor(t, "the queued run to run once the hold lapsed", 10*time.Second, func() bool {
		rec, err := a.m.RunRecord(ctx, "lapse", id)
		return err == nil && !rec.Ended.IsZero()
	})
	rec, _ := a.m.RunRecord(ctx, "lapse", id)
	if rec.Ended.Sub(held) < 400*time.Millisecond {
		t.Fatalf("the queued run ended %s after the hold began: it did not wait for it", rec.Ended.Sub(held))
	}
}

// TestLongEditKeepsItsLease: an edit that takes longer than the lease
// (its registry write waits on a lock) renews it like a run: it is not
// taken for a dead process's change, and it lands.
func TestLongEditKeepsItsLease(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	p := start(t, pool, "a", &effects{}, 0, false)
	start(t, pool, "b", &effects{}, 0, false) // a second process's reaper
	ctx := context.Background()
	if _, err := p.m.Start(ctx, "count", "long", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.m.Wait(ctx, "long"); err != nil {
		t.Fatal(err)
	}
	// Another transaction keeps the edit from reading the checkpoints
	// (before any of its writes) for twice the lease (1 s).
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE checkpoints IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(2 * time.Second)
		_ = tx.Rollback(ctx)
	}()
	if _, err := p.m.UpdateState(ctx, "long", "", map[string]any{"n": 0}, ""); err != nil {
		t.Fatalf("an edit longer than the lease: %v", err)
	}
	if s := finalState(t, p.m, "long"); s.N != 0 {
		t.Fatalf("n = %d after the edit", s.N)
	}
}

// TestTabOnAnotherProcessResumesFromItsCursor: a tab on process B,
// following a run process A executes, drops and reconnects to B with the
// cursor of the last event it saw: it gets the events it missed, not a
// catch-up of the whole thread.
func TestTabOnAnotherProcessResumesFromItsCursor(t *testing.T) {
	t.Parallel()
	_, _, a, b := runHeld(t, 2, false, "resume")
	ctx := context.Background()
	catchup, sub, err := b.m.Subscribe(ctx, "resume")
	if err != nil {
		t.Fatal(err)
	}
	cursor := catchup[len(catchup)-1].Cursor
	if catchup[len(catchup)-1].Kind != runs.KindCaughtUp || cursor == "" {
		t.Fatalf("catch-up ends with %+v, want caught_up with a cursor", catchup[len(catchup)-1])
	}
	close(a.release)
	// The tab sees a few live events of A's run, then drops.
	var seen []runs.Event
	for len(seen) < 4 {
		select {
		case ev := <-sub.C:
			seen = append(seen, *ev)
		case <-time.After(15 * time.Second):
			t.Fatalf("the tab on B saw only %v", seen)
		}
	}
	sub.Close()
	last := seen[len(seen)-1]
	epoch, _, _ := strings.Cut(cursor, ":")
	cursor = fmt.Sprintf("%s:%d", epoch, last.Seq)
	if _, err := a.m.Wait(ctx, "resume"); err != nil {
		t.Fatal(err)
	}
	missed, sub2, err := b.m.SubscribeFrom(ctx, "resume", cursor)
	if err != nil {
		t.Fatal(err)
	}
	defer sub2.Close()
	if len(missed) < 2 || missed[0].Catchup || missed[0].Seq != last.Seq+1 {
		t.Fatalf("reconnected after seq %d, the tab got %+v first; want the next live event, not a catch-up", last.Seq, missed[0])
	}
	if missed[len(missed)-1].Kind != runs.KindCaughtUp {
		t.Fatalf("the resumed tab's catch-up ends with %+v, want caught_up", missed[len(missed)-1])
	}
	// The rest (B follows A's log a flush behind) comes live, to the
	// run's end; nothing retells the run's start.
	all := missed
	for !slices.ContainsFunc(all, func(ev runs.Event) bool { return ev.Kind == runs.KindRunFinished }) {
		select {
		case ev := <-sub2.C:
			all = append(all, *ev)
		case <-time.After(15 * time.Second):
			t.Fatalf("the resumed tab never heard of the run's end: %d events", len(all))
		}
	}
	for _, ev := range all {
		if ev.Kind == runs.KindRunStarted {
			t.Fatalf("the resumed tab was told the run started again: %+v", ev)
		}
	}
}

// TestHoldIsRenewed: a hold lasts as long as its process holds it, past
// its duration, and ends when released.
func TestHoldIsRenewed(t *testing.T) {
	t.Parallel()
	_, _, a, b := runHeld(t, 1, false, "renew-other")
	close(a.release)
	ctx := context.Background()
	release, err := a.q.Hold(ctx, "renewed", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	id := enqueue(t, b.m, "renewed", "after", 0)
	// Not a synchronisation: three times the hold's duration, in which
	// its renewals must keep the queued run waiting.
	time.Sleep(900 * time.Millisecond)
	if _, ok, err := a.m.PendingRun(ctx, id); !ok || err != nil {
		t.Fatalf("the queued run started while its thread was held by a live process (%v)", err)
	}
	if err := release(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the queued run to run once released", 10*time.Second, func() bool {
		rec, err := a.m.RunRecord(ctx, "renewed", id)
		return err == nil && !rec.Ended.IsZero()
	})
}

// TestClaimSeesARunEnqueuedWhileItWaited: an enqueue and a claim of one
// free thread arrive together; the enqueue gets the thread's lock first.
// The claim, granted the lock once the enqueue committed, finds the
// queued run and is refused: a new run never jumps the queue.
func TestClaimSeesARunEnqueuedWhileItWaited(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	p := start(t, pool, "a", &effects{}, 0, false)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO studio_thread_leases (thread_id) VALUES ('race')`); err != nil {
		t.Fatal(err)
	}
	lock, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Rollback(ctx) }) // a failed test lets the waiters go
	var holder int
	if err := lock.QueryRow(ctx, `SELECT pg_backend_pid() FROM studio_thread_leases WHERE thread_id = 'race' FOR UPDATE`).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	waiting := func(n int) {
		t.Helper()
		waitFor(t, fmt.Sprintf("%d statements waiting for the thread's lock", n), 10*time.Second, func() bool {
			var got int
			// Waiting for the holder, or for a waiter ahead of it in the
			// row's queue.
			err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity a WHERE $1 = ANY(pg_blocking_pids(a.pid))
				OR EXISTS (SELECT 1 FROM pg_stat_activity b WHERE $1 = ANY(pg_blocking_pids(b.pid)) AND b.pid = ANY(pg_blocking_pids(a.pid)))`,
				holder).Scan(&got)
			return err == nil && got >= n
		})
	}
	enqueued := make(chan error, 1)
	go func() {
		enqueued <- p.q.Enqueue(ctx, runs.QueuedRun{Graph: "count", Thread: "race", RunID: uuid.NewString(), Kind: runs.RunStart,
			Started: time.Now(), NotBefore: time.Now().Add(time.Hour)}, runs.QueueLimits{})
	}()
	waiting(1)
	claimed := make(chan error, 1)
	go func() {
		_, err := p.q.Claim(ctx, runs.QueuedRun{Graph: "count", Thread: "race", RunID: uuid.NewString(), Kind: runs.RunStart, Started: time.Now()})
		claimed <- err
	}()
	waiting(2)
	if err := lock.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-enqueued; err != nil {
		t.Fatal(err)
	}
	if err := <-claimed; !errors.Is(err, runs.ErrThreadBusy) {
		t.Fatalf("a claim granted the lock after an enqueue committed: %v, want ErrThreadBusy (the queued run goes first)", err)
	}
}

// TestReaperAndStartDoNotDeadlock: the reaper and a start of the same
// thread's queued run lock the lease row, then the queue's row, in that
// order both: the reaper waits for the start instead of deadlocking it.
func TestReaperAndStartDoNotDeadlock(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	ctx := context.Background()
	q, err := riverq.New(pool, riverq.Config{ID: "a", LeaseTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO studio_thread_leases (thread_id, pending) VALUES ('th', 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO studio_run_queue (run_id, thread_id, state, request, dispatched_at)
		VALUES ('r1', 'th', 'pending', '{}', now() - interval '1 minute')`); err != nil {
		t.Fatal(err)
	}
	// A start, half way: the lease row locked.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var holder int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid() FROM studio_thread_leases WHERE thread_id = 'th' FOR UPDATE`).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	// The start's lock is visible to the reaper: it waits (or, as it
	// skips a thread locked now, passes it by: the thread is looked at
	// again next round).
	if n, err := q.ReapOnce(ctx); err != nil || n != 0 {
		t.Fatalf("a reap while a start holds the thread: %d, %v; want it passed by", n, err)
	}
	reaped := make(chan error, 1)
	go func() { _, err := q.ReapOnce(ctx); reaped <- err }()
	// The start's second half: the queued run becomes the active one.
	if _, err := tx.Exec(ctx, `UPDATE studio_run_queue SET state = 'active' WHERE run_id = 'r1'`); err != nil {
		t.Fatalf("the start, with the reaper waiting: %v", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE studio_thread_leases SET run_id = 'r1', pending = 0 WHERE thread_id = 'th'`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-reaped; err != nil {
		t.Fatalf("the reaper: %v", err)
	}
}
