package pgsaver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/internal/pgtest"
)

// groupSetup is a saver that runs one write transaction at a time, and a
// write holding that one place: a put on thread "slow" that waits for
// release to be called (its blob's shared lock waits for an exclusive
// one held until then). Writes started meanwhile wait for the place.
func groupSetup(t *testing.T) (s *Saver, pool *pgxpool.Pool, release func(), slowDone <-chan error) {
	t.Helper()
	ctx := context.Background()
	pool = pgtest.Schema(t, nil)
	s = New(pool, &Options{MaxTransactions: 1})
	blocker, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = blocker.Rollback(context.Background()) })
	if _, err := blocker.Exec(ctx, `SELECT pg_advisory_xact_lock($1::int, $2::int)`, lockClass, threadLock("slow")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		big := json.RawMessage(`"` + strings.Repeat("x", 2*inlineMax) + `"`)
		_, err := s.Put(ctx, checkpoints.Config{ThreadID: "slow"}, groupCheckpoint("slow-1", map[string]json.RawMessage{"doc": big}), checkpoints.Metadata{}, map[string]int64{"doc": 1})
		done <- err
	}()
	// The slow put holds the place once it waits for the lock.
	waitFor(t, func() bool {
		var waiting bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND classid = $1 AND objid::text = ($2::bigint & 4294967295)::text AND objsubid = 2)`, lockClass, threadLock("slow")).Scan(&waiting)
		return err == nil && waiting
	})
	return s, pool, func() { _ = blocker.Commit(context.Background()) }, done
}

func groupCheckpoint(id string, values map[string]json.RawMessage) *checkpoints.Checkpoint {
	cp := &checkpoints.Checkpoint{V: checkpoints.FormatVersion, ID: id, TS: time.Now().UTC(),
		ChannelValues: values, ChannelVersions: map[string]int64{}, VersionsSeen: map[string]map[string]int64{}}
	for ch := range values {
		cp.ChannelVersions[ch] = 1
	}
	return cp
}

// waitFor polls cond: what it waits for happens in another goroutine or
// in the database, which send no event.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

func (c *committer) waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// Writes that wait for a transaction are sent together, as one
// transaction, and each keeps its own outcome: one refused by its fence
// fails alone and writes nothing; the others, rolled back with it, are
// sent again and land, steps and pending writes alike.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool, release, slowDone := groupSetup(t)
	HoldLease(t, pool, "fenced", 2)
	const n = 8
	errs := make([]error, n+2)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			thread := fmt.Sprint("t", i)
			writes := []checkpoints.TaskWrites{{TaskID: "task", Writes: []checkpoints.Write{{Channel: "n", Value: json.RawMessage(fmt.Sprint(i))}}}}
			_, errs[i] = s.PutStep(ctx, checkpoints.Config{ThreadID: thread, CheckpointID: "parent"}, writes,
				groupCheckpoint("child", map[string]json.RawMessage{"n": json.RawMessage(fmt.Sprint(i))}), checkpoints.Metadata{}, map[string]int64{"n": 1})
		})
	}
	wg.Go(func() {
		// A stale fence: the lease is at 2.
		fctx := checkpoints.WithFence(ctx, checkpoints.Fence{Thread: "fenced", Token: 1})
		_, errs[n] = s.Put(fctx, checkpoints.Config{ThreadID: "fenced"}, groupCheckpoint("f", map[string]json.RawMessage{"n": json.RawMessage("1")}), checkpoints.Metadata{}, map[string]int64{"n": 1})
	})
	wg.Go(func() {
		errs[n+1] = s.PutWrites(ctx, checkpoints.Config{ThreadID: "w", CheckpointID: "c"}, []checkpoints.Write{{Channel: "n", Value: json.RawMessage("7")}}, "task", "")
	})
	waitFor(t, func() bool { return s.commit.waiting() == n+2 })
	release()
	if err := <-slowDone; err != nil {
		t.Fatalf("slow put: %v", err)
	}
	wg.Wait()
	for i, err := range errs {
		switch {
		case i == n && !errors.Is(err, checkpoints.ErrFenced):
			t.Errorf("put with a stale fence = %v, want ErrFenced", err)
		case i != n && err != nil:
			t.Errorf("write %d: %v", i, err)
		}
	}
	var cps, writes, txs int
	var fenced bool
	err := pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM checkpoints WHERE thread_id LIKE 't%'),
		`+WritesStored("thread_id LIKE 't%' OR thread_id = 'w'")+`,
		(SELECT count(DISTINCT xmin::text) FROM (SELECT xmin FROM checkpoints WHERE thread_id LIKE 't%'
		                                        UNION ALL SELECT xmin FROM checkpoint_writes WHERE thread_id LIKE 't%' OR thread_id = 'w') x),
		EXISTS (SELECT 1 FROM checkpoints WHERE thread_id = 'fenced')`).Scan(&cps, &writes, &txs, &fenced)
	if err != nil {
		t.Fatal(err)
	}
	if cps != n || writes != n+1 || fenced {
		t.Errorf("%d checkpoints and %d writes landed (want %d and %d); the fenced put's landed: %v", cps, writes, n, n+1, fenced)
	}
	// Sent again without the refused put, the others shared one commit.
	if txs != 1 {
		t.Errorf("the waiting writes committed in %d transactions, want 1", txs)
	}
	for i := range n {
		tu, err := s.Get(ctx, checkpoints.Config{ThreadID: fmt.Sprint("t", i)})
		if err != nil || tu == nil || string(tu.Checkpoint.ChannelValues["n"]) != fmt.Sprint(i) {
			t.Errorf("thread t%d reads %+v, %v", i, tu, err)
		}
	}
}

// A write whose caller's context ends while it waits for a transaction
// returns the context's error at once and is never sent.
func TestGroupCommitCancelWhileWaiting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool, release, slowDone := groupSetup(t)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := s.Put(cctx, checkpoints.Config{ThreadID: "gone"}, groupCheckpoint("g", map[string]json.RawMessage{"n": json.RawMessage("1")}), checkpoints.Metadata{}, map[string]int64{"n": 1})
		done <- err
	}()
	waitFor(t, func() bool { return s.commit.waiting() == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled put = %v, want context.Canceled", err)
	}
	if n := s.commit.waiting(); n != 0 {
		t.Errorf("%d writes still wait after their caller left", n)
	}
	release()
	if err := <-slowDone; err != nil {
		t.Fatal(err)
	}
	// The place is free again: a write goes at once, alone.
	if _, err := s.Put(ctx, checkpoints.Config{ThreadID: "after"}, groupCheckpoint("a", map[string]json.RawMessage{"n": json.RawMessage("1")}), checkpoints.Metadata{}, map[string]int64{"n": 1}); err != nil {
		t.Fatal(err)
	}
	var landed bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM checkpoints WHERE thread_id = 'gone')`).Scan(&landed); err != nil || landed {
		t.Errorf("the cancelled put landed: %v, %v", landed, err)
	}
}
