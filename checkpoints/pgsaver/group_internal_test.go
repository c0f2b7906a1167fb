package pgsaver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
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
	pool = pgtest.Schema(t, nil)
	s = New(pool, &Options{MaxTransactions: 1})
	release = holdThread(t, pool, "slow")
	done := slowPut(s, "slow")
	// The slow put holds the place once it waits for the lock.
	waitLocked(t, pool, "slow")
	return s, pool, release, done
}

// holdThread takes thread's lock exclusively until release is called, so
// that a put with a blob on it (slowPut) waits.
func holdThread(t *testing.T, pool *pgxpool.Pool, thread string) (release func()) {
	t.Helper()
	ctx := context.Background()
	blocker, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = blocker.Rollback(context.Background()) })
	if _, err := blocker.Exec(ctx, `SELECT pg_advisory_xact_lock($1::int, $2::int)`, lockClass, threadLock(thread)); err != nil {
		t.Fatal(err)
	}
	return func() { _ = blocker.Commit(context.Background()) }
}

// slowPut puts a checkpoint with a blob on thread in the background: its
// blob's shared lock waits while holdThread holds the thread's.
func slowPut(s *Saver, thread string) <-chan error {
	done := make(chan error, 1)
	go func() {
		big := json.RawMessage(`"` + strings.Repeat("x", 2*inlineMax) + `"`)
		_, err := s.Put(context.Background(), checkpoints.Config{ThreadID: thread}, groupCheckpoint(thread+"-1", map[string]json.RawMessage{"doc": big}), checkpoints.Metadata{}, map[string]int64{"doc": 1})
		done <- err
	}()
	return done
}

// waitLocked waits until a put waits for thread's lock.
func waitLocked(t *testing.T, pool *pgxpool.Pool, thread string) {
	t.Helper()
	waitFor(t, func() bool {
		var waiting bool
		err := pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND classid = $1 AND objid::text = ($2::bigint & 4294967295)::text AND objsubid = 2)`, lockClass, threadLock(thread)).Scan(&waiting)
		return err == nil && waiting
	})
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

// A frame is lent to PutFrame for the call only (checkpoints.Frame), and a
// write in a group may be sent after its caller stopped waiting: what
// lands is the frame as it was put, whatever the caller wrote into it
// once PutFrame returned.
func TestGroupCommitFrameOfACallerThatLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool, release, slowDone := groupSetup(t)
	releaseHeld := holdThread(t, pool, "held")
	heldDone := slowPut(s, "held")
	f := &checkpoints.Frame{ID: "f1", TS: time.Now().UTC().Truncate(time.Microsecond), Channels: []string{"a", "b"}, Versions: []int64{3, 1},
		New:  []checkpoints.FrameValue{{Index: 0, Value: json.RawMessage(`"a3"`)}, {Index: 1, Value: json.RawMessage(`true`)}},
		Seen: []checkpoints.SeenVersions{{Node: "n", Channels: []string{"a"}, Versions: []int64{2}}}, Next: []string{"n"}}
	want, _, err := f.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	want.VersionsSeen = map[string]map[string]int64{"n": {"a": 2}}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := s.PutFrame(cctx, checkpoints.Config{ThreadID: "frame"}, nil, f, checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: 3})
		done <- err
	}()
	waitFor(t, func() bool { return s.commit.waiting() == 2 })
	// The two go as one transaction, which waits for "held"'s lock.
	release()
	if err := <-slowDone; err != nil {
		t.Fatal(err)
	}
	waitLocked(t, pool, "held")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("put of a caller that left = %v, want context.Canceled", err)
	}
	for i := range f.Versions {
		f.Versions[i] = 99
	}
	for i := range f.New {
		f.New[i] = checkpoints.FrameValue{Index: 1, Value: json.RawMessage(`"scribbled"`)}
	}
	f.Seen[0] = checkpoints.SeenVersions{Node: "scribbled"}
	releaseHeld()
	if err := <-heldDone; err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, checkpoints.Config{ThreadID: "frame"})
	if err != nil || got == nil {
		t.Fatalf("the left caller's frame: %+v, %v", got, err)
	}
	if cp := got.Checkpoint; !maps.Equal(cp.ChannelVersions, want.ChannelVersions) || string(cp.ChannelValues["a"]) != `"a3"` ||
		string(cp.ChannelValues["b"]) != "true" || !reflect.DeepEqual(cp.VersionsSeen, want.VersionsSeen) {
		t.Errorf("the left caller's frame landed as %+v, want %+v with a=\"a3\", b=true", *cp, *want)
	}
}
