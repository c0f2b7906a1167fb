package runs_test

import (
	"context"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
)

// TestCatchupFromTheRunLogShowsTakeovers: a thread's page rebuilt from
// its checkpoints and run log (another process, or this one restarted)
// tells that its run was taken over, after the run's start, as the
// record keeps it.
func TestCatchupFromTheRunLogShowsTakeovers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	saver, log := checkpoints.NewMemory(), runs.NewMemoryRunLog()
	store := runs.NewMemoryThreads()
	graphs := map[string]engine.Compiled{"linear": linearOn(t, nil, saver)}
	m1 := manager(t, graphs, runs.WithThreadStore(store), runs.WithRunLog(log))
	th, err := m1.Start(ctx, "linear", "moved", nil, runs.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, m1, "moved")
	m1.Close()
	rec, err := log.ListRuns(ctx, "moved", 0)
	if err != nil || len(rec) != 1 {
		t.Fatalf("run log: %v %v", rec, err)
	}
	at := time.Date(2026, 11, 26, 3, 4, 5, 0, time.UTC)
	rec[0].Takeovers = []runs.Takeover{{Attempt: 2, At: at}}
	if err := log.SaveRun(ctx, rec[0]); err != nil {
		t.Fatal(err)
	}

	m2 := manager(t, graphs, runs.WithThreadStore(store), runs.WithRunLog(log))
	evs, _, err := m2.History(ctx, "moved")
	if err != nil {
		t.Fatal(err)
	}
	started := -1
	for i, ev := range evs {
		switch ev.Kind {
		case runs.KindRunStarted:
			if ev.RunID == th.RunID {
				started = i
			}
		case runs.KindRunTakeover:
			if started < 0 || ev.RunID != th.RunID || ev.Attempt != 2 || !ev.Time.Equal(at) || !ev.Catchup {
				t.Fatalf("takeover event %+v at %d (run started at %d); want attempt 2 at %v after the run's start", ev, i, started, at)
			}
			return
		}
	}
	t.Fatalf("the catch-up %v tells nothing of the takeover", evs)
}
