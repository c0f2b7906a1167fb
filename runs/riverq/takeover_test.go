package riverq_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
	"github.com/superstep-dev/superstep/runs/riverq"
)

type abState struct {
	Log []string `json:"log" reduce:"append"`
}

// crashQueue: once dead, renewals stop and Finish fails (the process
// died right before its finish transaction committed).
type crashQueue struct {
	*riverq.Queue
	dead *atomic.Bool
}

func (q crashQueue) Renew(ctx context.Context, l runs.Lease) (bool, error) {
	if q.dead.Load() {
		return false, nil
	}
	return q.Queue.Renew(ctx, l)
}
func (q crashQueue) Finish(ctx context.Context, l runs.Lease) error {
	if q.dead.Load() {
		return errors.New("connection reset (process killed)")
	}
	return q.Queue.Finish(ctx, l)
}

func startAB(t *testing.T, pool *pgxpool.Pool, id string, bRuns *atomic.Int32, dead *atomic.Bool, graphName string, compiledBefore ...string) (*runs.Manager, *riverq.Queue) {
	sg := engine.NewStateGraph[abState]()
	sg.AddNode("a", func(ctx context.Context, s abState) (engine.Output, error) {
		if dead != nil {
			dead.Store(true) // the process will die before its Finish commits
		}
		return engine.Update{"log": "a"}, nil
	})
	sg.AddNode("b", func(ctx context.Context, s abState) (engine.Output, error) {
		bRuns.Add(1)
		return engine.Update{"log": "b-" + id}, nil
	})
	sg.AddEdge(engine.Start, "a")
	sg.AddEdge("a", "b")
	sg.AddEdge("b", engine.End)
	g, err := sg.Compile(engine.CompileOptions{Checkpointer: pgsaver.New(pool, nil), InterruptBefore: compiledBefore})
	if err != nil {
		t.Fatal(err)
	}
	return serveQueued(t, pool, id, graphName, g, dead)
}

// serveQueued is a process on pool serving g as name through a river
// queue (1 s leases, reaped every 100 ms) and the Postgres registry, run
// log and event log; with dead, it stops renewing its leases once dead
// is set (crashQueue), as a killed process would.
func serveQueued(t *testing.T, pool *pgxpool.Pool, id, name string, g engine.Compiled, dead *atomic.Bool) (*runs.Manager, *riverq.Queue) {
	t.Helper()
	q, err := riverq.New(pool, riverq.Config{ID: id, LeaseTTL: time.Second, ReapEvery: 100 * time.Millisecond,
		OnError: func(err error) { t.Logf("%s: %v", id, err) }})
	if err != nil {
		t.Fatal(err)
	}
	var qq runs.Queue = q
	if dead != nil {
		qq = crashQueue{q, dead}
	}
	m, err := runs.NewManager(map[string]engine.Compiled{name: g},
		runs.WithThreadStore(pgthreads.New(pool)), runs.WithRunLog(pgthreads.NewRunLog(pool)),
		runs.WithQueue(qq), runs.WithRenewEvery(100*time.Millisecond), runs.WithEventLog(evlog(t, pool)),
		runs.WithErrorHandler(func(err error) { t.Logf("%s: %v", id, err) }))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = q.Stop(ctx)
	})
	return m, q
}

// TestTakeoverOfARunStoppedAtABreakpointDoesNotPassIt: a run stops at a
// breakpoint (interrupt_before b); its process dies after writing the end
// but before the finish transaction commits. The takeover records the
// stop and never runs b: nobody approved it (a nil input, which continues
// a run, would have passed the breakpoint).
func TestTakeoverOfARunStoppedAtABreakpointDoesNotPassIt(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"run", "graph"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			breakpointTakeover(t, where == "graph")
		})
	}
}

// breakpointTakeover is one case of
// TestTakeoverOfARunStoppedAtABreakpointDoesNotPassIt: the breakpoint is
// the run's option, or compiled into the graph.
func breakpointTakeover(t *testing.T, compiled bool) {
	pool := pgtest.Schema(t, nil)
	var opts runs.StartOptions
	var graphBefore []string
	if compiled {
		graphBefore = []string{"b"}
	} else {
		opts.InterruptBefore = []string{"b"}
	}
	var bRuns atomic.Int32
	var deadA atomic.Bool
	ma, qa := startAB(t, pool, "a", &bRuns, &deadA, "ab", graphBefore...)
	mb, qb := startAB(t, pool, "b", &bRuns, nil, "ab", graphBefore...)
	ctx := context.Background()
	if _, err := ma.Start(ctx, "ab", "bp", nil, opts); err != nil {
		t.Fatal(err)
	}
	th, err := ma.Wait(ctx, "bp")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("A after its run: %s %q", th.Status, th.Error)
	// A is dead: it takes nothing over either.
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := qa.Stop(sctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, active, err := qb.Active(ctx, "bp")
		if err != nil {
			t.Fatal(err)
		}
		if !active && time.Since(deadline) > -8*time.Second {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("run never released")
		}
		time.Sleep(50 * time.Millisecond)
	}
	th, err = mb.Thread(ctx, "bp")
	t.Logf("B reads the thread: %s %q err=%v", th.Status, th.Error, err)
	if n := bRuns.Load(); n != 0 {
		t.Fatalf("node b ran %d times past its breakpoint without an answer", n)
	}
	if th.Status != runs.StatusInterrupted {
		t.Fatalf("thread %s, want interrupted", th.Status)
	}
}

// TestUnservableRunIsHandedOnLaterAndCancellable: a run whose process
// died is taken over by a process that does not serve its graph (a
// rolling deploy that renamed it): it is handed back with a growing
// delay, not in a tight loop, and a cancel asked meanwhile ends it as
// cancelled on the next attempt, freeing the thread.
func TestUnservableRunIsHandedOnLaterAndCancellable(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	var bRuns atomic.Int32
	var deadA atomic.Bool
	ma, qa := startAB(t, pool, "a", &bRuns, &deadA, "ab")
	mb, qb := startAB(t, pool, "b", &bRuns, nil, "other")
	ctx := context.Background()
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = qa.Stop(sctx) // A's workers are gone (it is dying)
	if _, err := ma.Start(ctx, "ab", "p1", nil, runs.StartOptions{InterruptBefore: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	// A's node a marked it dead: its lease expires and B takes over,
	// fails (no graph "ab"), and hands back with a delay of 1 s, then 2 s.
	time.Sleep(2500 * time.Millisecond)
	var attempts int
	if err := pool.QueryRow(ctx, `SELECT attempts FROM studio_run_queue WHERE thread_id = 'p1'`).Scan(&attempts); err != nil {
		t.Fatal(err)
	}
	if attempts > 3 {
		t.Fatalf("%d attempts in 2.5 s: the hand-backs are not delayed", attempts)
	}
	if err := mb.Cancel(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the cancelled run to end", 15*time.Second, func() bool {
		_, active, err := qb.Active(ctx, "p1")
		return err == nil && !active
	})
	th, err := mb.Thread(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if th.Status != runs.StatusIdle || th.Error != "cancelled" {
		t.Fatalf("the cancelled run's thread: %s %q", th.Status, th.Error)
	}
	if n := bRuns.Load(); n != 0 {
		t.Fatalf("node b ran %d times", n)
	}
}

func evlog(t *testing.T, pool *pgxpool.Pool) *riverq.EventLog {
	l := riverq.NewEventLog(pool, func(err error) { t.Logf("events: %v", err) })
	t.Cleanup(l.Close)
	return l
}
