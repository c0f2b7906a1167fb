package pgthreads_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
)

// TestFencedWritesAreRefusedOnceTakenOver: a run's registry and run-log
// writes carry its lease's fence; after another process took the thread
// over (the fence moved on) they are refused with checkpoints.ErrFenced
// and change nothing, while the current holder's go through.
func TestFencedWritesAreRefusedOnceTakenOver(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO studio_thread_leases (thread_id, fence, run_id, holder, expires_at) VALUES ('f1', 3, 'r1', 'a', now() + interval '1 minute')`); err != nil {
		t.Fatal(err)
	}
	store, log := pgthreads.New(pool), pgthreads.NewRunLog(pool)
	at := runs.Stamp(time.Now())
	old := checkpoints.WithFence(ctx, checkpoints.Fence{Thread: "f1", Token: 3})
	running := runs.ThreadRecord{ID: "f1", Graph: "g", Status: runs.StatusRunning, RunID: "r1", Updated: at, Owner: "a"}
	if err := store.SaveThread(old, running); err != nil {
		t.Fatal(err)
	}
	run := runs.RunRecord{Thread: "f1", RunID: "r1", Kind: runs.RunStart, Started: at, Status: runs.StatusRunning}
	if err := log.SaveRun(old, run); err != nil {
		t.Fatal(err)
	}

	if _, err := pool.Exec(ctx, `UPDATE studio_thread_leases SET fence = 4, holder = 'b'`); err != nil {
		t.Fatal(err)
	}
	stale := running
	stale.Status, stale.Owner = runs.StatusError, ""
	if err := store.SaveThread(old, stale); !errors.Is(err, checkpoints.ErrFenced) {
		t.Fatalf("registry write with the old fence: %v, want ErrFenced", err)
	}
	ended := run
	ended.Status, ended.Ended = runs.StatusError, at
	if err := log.SaveRun(old, ended); !errors.Is(err, checkpoints.ErrFenced) {
		t.Fatalf("run-log write with the old fence: %v, want ErrFenced", err)
	}
	if got, err := store.GetThread(ctx, "f1"); err != nil || got.Status != runs.StatusRunning {
		t.Fatalf("registry after the refused write: %+v %v", got, err)
	}
	if got, err := log.ListRuns(ctx, "f1", 0); err != nil || len(got) != 1 || got[0].Status != runs.StatusRunning {
		t.Fatalf("run log after the refused write: %+v %v", got, err)
	}

	current := checkpoints.WithFence(ctx, checkpoints.Fence{Thread: "f1", Token: 4})
	done := running
	done.Status, done.Owner = runs.StatusIdle, ""
	if err := store.SaveThread(current, done); err != nil {
		t.Fatalf("the holder's write: %v", err)
	}
	if err := log.SaveRun(current, ended); err != nil {
		t.Fatalf("the holder's run-log write: %v", err)
	}
}
