package riverq_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
	"github.com/superstep-dev/superstep/runs/riverq"
)

type countState struct {
	N   int      `json:"n"`
	Log []string `json:"log" reduce:"append"`
}

// steps is how many times the counting graph's node runs.
const steps = 5

// effects counts each step's executions across every process of a test
// (the side effects a takeover may repeat).
type effects struct {
	mu sync.Mutex
	n  map[int]int
}

func (e *effects) add(step int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == nil {
		e.n = map[int]int{}
	}
	e.n[step]++
}

func (e *effects) get(step int) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n[step]
}

// process is one Studio process: its own saver, registry, queue and
// Manager on the shared schema. hang, when set, is the step at which
// this process's node blocks until release is closed or its run's
// context ends (ignoring it when deaf is set: a paused process).
type process struct {
	m       *runs.Manager
	q       *riverq.Queue
	hang    int
	deaf    bool
	entered chan struct{}
	release chan struct{}
	paused  atomic.Bool // stops renewing (pausedQueue)
	// renewFrom, when set, stops the renewals of leases with an older
	// fence only (a process whose renewals of one run failed).
	renewFrom atomic.Int64
}

// runID is the id of the thread's active run in p.
func (p *process) runID(t *testing.T, thread string) string {
	t.Helper()
	id, ok, err := p.q.Active(context.Background(), thread)
	if err != nil || !ok {
		t.Fatalf("thread %s has no active run (%v)", thread, err)
	}
	return id
}

// pause makes p behave as a paused process: its runs stop renewing
// their leases, and it takes no run over (its river workers stop).
func (p *process) pause(t *testing.T) {
	t.Helper()
	p.paused.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.q.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// pausedQueue is a process's queue whose renewals stop while the
// process is paused, as a SIGSTOPped process's would.
type pausedQueue struct {
	*riverq.Queue
	p *process
}

func (q pausedQueue) Renew(ctx context.Context, l runs.Lease) (bool, error) {
	if q.p.paused.Load() || l.Fence < q.p.renewFrom.Load() {
		return false, nil
	}
	return q.Queue.Renew(ctx, l)
}

func start(t *testing.T, pool *pgxpool.Pool, id string, fx *effects, hang int, deaf bool) *process {
	t.Helper()
	p := &process{hang: hang, deaf: deaf, entered: make(chan struct{}, 1), release: make(chan struct{})}
	sg := engine.NewStateGraph[countState]()
	sg.AddNode("count", func(ctx context.Context, s countState) (engine.Output, error) {
		step := s.N + 1
		if step == p.hang {
			p.entered <- struct{}{}
			if p.deaf {
				<-p.release
			} else {
				select {
				case <-p.release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
		}
		fx.add(step)
		return engine.Update{"n": step, "log": fmt.Sprintf("%s:%d", id, step)}, nil
	})
	sg.AddEdge(engine.Start, "count")
	sg.AddConditionalEdges("count", func(_ context.Context, s countState) (engine.Route, error) {
		if s.N >= steps {
			return engine.To(engine.End), nil
		}
		return engine.To("count"), nil
	}, nil)
	g, err := sg.Compile(engine.CompileOptions{Checkpointer: pgsaver.New(pool, nil)})
	if err != nil {
		t.Fatal(err)
	}
	q, err := riverq.New(pool, riverq.Config{ID: id, LeaseTTL: time.Second, ReapEvery: 100 * time.Millisecond,
		OnError: func(err error) { t.Logf("%s: %v", id, err) }})
	if err != nil {
		t.Fatal(err)
	}
	p.q = q
	events := riverq.NewEventLog(pool, func(err error) { t.Logf("%s: events: %v", id, err) })
	t.Cleanup(events.Close)
	m, err := runs.NewManager(map[string]engine.Compiled{"count": g},
		runs.WithThreadStore(pgthreads.New(pool)), runs.WithRunLog(pgthreads.NewRunLog(pool)),
		runs.WithQueue(pausedQueue{q, p}), runs.WithRenewEvery(100*time.Millisecond), runs.WithEventLog(events),
		runs.WithErrorHandler(func(err error) { t.Logf("%s: %v", id, err) }))
	if err != nil {
		t.Fatal(err)
	}
	p.m = m
	if err := q.Start(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-p.release:
		default:
			close(p.release)
		}
		m.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = q.Stop(ctx)
	})
	return p
}

// runHeld starts processes a and b on a fresh schema and a run of the
// counting graph on thread in a, held in step hang (deaf: ignoring its
// context), and returns once the run is there.
func runHeld(t *testing.T, hang int, deaf bool, thread string) (*pgxpool.Pool, *effects, *process, *process) {
	t.Helper()
	pool := pgtest.Schema(t, nil)
	fx := &effects{}
	a := start(t, pool, "a", fx, hang, deaf)
	b := start(t, pool, "b", fx, 0, false)
	if _, err := a.m.Start(context.Background(), "count", thread, nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	<-a.entered
	return pool, fx, a, b
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func finalState(t *testing.T, m *runs.Manager, thread string) countState {
	t.Helper()
	g, err := m.Graph("count")
	if err != nil {
		t.Fatal(err)
	}
	st, err := g.Pregel().GetState(context.Background(), checkpoints.Config{ThreadID: thread})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(st.Values)
	if err != nil {
		t.Fatal(err)
	}
	var s countState
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPausedProcessIsTakenOverAndFencedOut: process A hangs in step 3 and
// stops renewing its lease (as a paused process would); process B's
// reaper finds the lease expired and B's worker continues the run from
// A's last checkpoint to the end. When A wakes, its write is refused by
// the fence: nothing it does after the takeover lands, and the thread
// ends as if nothing happened, with step 3 done twice and no other step
// repeated.
func TestPausedProcessIsTakenOverAndFencedOut(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	fx := &effects{}
	a := start(t, pool, "a", fx, 3, true)
	b := start(t, pool, "b", fx, 0, false)
	ctx := context.Background()

	if _, err := a.m.Start(ctx, "count", "t1", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	<-a.entered
	a.pause(t)
	// B refuses a second run while A's lease lives, and after.
	if _, err := b.m.Start(ctx, "count", "t1", nil, runs.StartOptions{}); !errors.Is(err, runs.ErrThreadBusy) {
		t.Fatalf("second run on another process: %v, want ErrThreadBusy", err)
	}
	waitFor(t, "B to finish the run", 15*time.Second, func() bool {
		th, err := b.m.Thread(ctx, "t1")
		return err == nil && th.Status == runs.StatusIdle
	})
	close(a.release) // A wakes and tries to write step 3
	waitFor(t, "A to give the run up", 10*time.Second, func() bool {
		th, err := a.m.Thread(ctx, "t1")
		return err == nil && th.Status == runs.StatusIdle
	})

	s := finalState(t, b.m, "t1")
	if s.N != steps {
		t.Fatalf("final n = %d, want %d (log %v)", s.N, steps, s.Log)
	}
	want := []string{"a:1", "a:2", "b:3", "b:4", "b:5"}
	if fmt.Sprint(s.Log) != fmt.Sprint(want) {
		t.Fatalf("log %v, want %v: A's late step 3 must not land", s.Log, want)
	}
	for step := 1; step <= steps; step++ {
		want := 1
		if step == 3 {
			want = 2 // cut in A, done again in B
		}
		if got := fx.get(step); got != want {
			t.Errorf("step %d ran %d times, want %d", step, got, want)
		}
	}
	th, err := a.m.Thread(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if th.Status != runs.StatusIdle || th.Error != "" {
		t.Fatalf("thread as A reads it: %+v", th)
	}
	// Every checkpoint has its parent: no fork from A's late write.
	g, _ := b.m.Graph("count")
	tups, err := g.Pregel().Checkpointer().List(ctx, checkpoints.ListQuery{ThreadID: "t1"}, checkpoints.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, tup := range tups {
		ids[tup.Config.CheckpointID] = true
	}
	for _, tup := range tups {
		if p := tup.ParentConfig; p != nil && !ids[p.CheckpointID] {
			t.Errorf("checkpoint %s has a missing parent %s", tup.Config.CheckpointID, p.CheckpointID)
		}
	}
	if len(tups) != steps+2 { // the input, then one per step
		t.Errorf("%d checkpoints, want %d", len(tups), steps+2)
	}
	// The event log tells of the takeover, once, and of one start.
	var takeovers, starts int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE body->>'kind' = 'run_takeover'),
		count(*) FILTER (WHERE body->>'kind' = 'run_started') FROM studio_events WHERE thread_id = 't1'`).Scan(&takeovers, &starts); err != nil {
		t.Fatal(err)
	}
	if takeovers != 1 || starts != 1 {
		t.Errorf("event log: %d run_takeover and %d run_started events, want 1 and 1", takeovers, starts)
	}
	// The thread is free again, in every process (the lease goes just
	// after the end is published).
	waitFor(t, "the lease's release after the end", 10*time.Second, func() bool {
		_, ok, err := b.q.Active(ctx, "t1")
		return err == nil && !ok
	})
	if _, err := a.m.Start(ctx, "count", "t2", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestCancelReachesAnotherProcess: a cancel asked in B stops the run A
// executes, within a second.
func TestCancelReachesAnotherProcess(t *testing.T) {
	t.Parallel()
	_, _, a, b := runHeld(t, 2, false, "c1")
	ctx := context.Background()
	// A cancel of another run (one that ended, say) does not reach it.
	if err := b.m.CancelRun(ctx, "c1", "an-ended-run"); !errors.Is(err, runs.ErrNotRunning) {
		t.Fatalf("a cancel of a run that is not the active one: %v, want ErrNotRunning", err)
	}
	asked := time.Now()
	if err := b.m.CancelRun(ctx, "c1", a.runID(t, "c1")); err != nil {
		t.Fatal(err)
	}
	th, err := a.m.Wait(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(asked); took > time.Second {
		t.Errorf("the cancel took %s to stop the run", took)
	}
	if th.Status != runs.StatusIdle || th.Error != "cancelled" {
		t.Fatalf("after the cancel: %+v", th)
	}
	if err := b.m.Cancel(ctx, "c1"); !errors.Is(err, runs.ErrNotRunning) {
		t.Fatalf("cancel of an ended run: %v", err)
	}
}

// TestCloseHandsRunsBack: a process that closes mid-run hands the run
// back at once, and another finishes it without waiting for the lease
// to expire.
func TestCloseHandsRunsBack(t *testing.T) {
	t.Parallel()
	_, _, a, b := runHeld(t, 2, false, "h1")
	ctx := context.Background()
	closed := time.Now()
	if err := a.q.Shutdown(ctx, a.m, 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "B to finish the handed-back run", 10*time.Second, func() bool {
		th, err := b.m.Thread(ctx, "h1")
		return err == nil && th.Status == runs.StatusIdle
	})
	if took := time.Since(closed); took > 900*time.Millisecond {
		t.Errorf("the hand-back took %s: the lease expiry (1s) was awaited", took)
	}
	if s := finalState(t, b.m, "h1"); s.N != steps {
		t.Fatalf("final n = %d", s.N)
	}
}

// TestTabsOnTwoProcessesSeeOneRun: a subscriber on process B sees, live
// and in order, the events of a run process A executes: the same events
// A's own subscriber sees, ending with the run's end.
func TestTabsOnTwoProcessesSeeOneRun(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	fx := &effects{}
	a := start(t, pool, "a", fx, 2, false)
	b := start(t, pool, "b", fx, 0, false)
	ctx := context.Background()
	if _, err := a.m.Start(ctx, "count", "e1", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	<-a.entered // the run is in step 2: both tabs open now
	_, subA, err := a.m.Subscribe(ctx, "e1")
	if err != nil {
		t.Fatal(err)
	}
	defer subA.Close()
	_, subB, err := b.m.Subscribe(ctx, "e1")
	if err != nil {
		t.Fatal(err)
	}
	defer subB.Close()
	close(a.release)
	read := func(sub *runs.Subscription) []string {
		var got []string
		timeout := time.After(15 * time.Second)
		for {
			select {
			case ev := <-sub.C:
				got = append(got, fmt.Sprintf("%s/%d/%s", ev.Kind, ev.Step, ev.Node))
				if ev.Kind == runs.KindRunFinished {
					if ev.Status != runs.StatusIdle {
						t.Errorf("run_finished with status %s", ev.Status)
					}
					return got
				}
			case <-timeout:
				t.Fatalf("no run_finished after %v", got)
			}
		}
	}
	gotA, gotB := read(subA), read(subB)
	// B's subscription starts at the log's end when it subscribed, which
	// may lag A's hub by a flush: B may also get a few earlier events
	// (applied idempotently, as a catch-up's repeats are). From there on
	// both see the same events in the same order.
	if len(gotB) < len(gotA) || fmt.Sprint(gotB[len(gotB)-len(gotA):]) != fmt.Sprint(gotA) {
		t.Fatalf("tab on B saw\n%v\ntab on A saw\n%v", gotB, gotA)
	}
	if len(gotB) < 3*steps {
		t.Fatalf("tab on B saw only %v", gotB)
	}
}

// TestWaitCoversRunsOfOtherProcesses: Wait on B returns once the run A
// executes has ended, with the thread as it ended; and a run B starts
// right after finds the thread free.
func TestWaitCoversRunsOfOtherProcesses(t *testing.T) {
	t.Parallel()
	_, _, a, b := runHeld(t, 2, false, "w1")
	ctx := context.Background()
	waited := make(chan runs.Thread, 1)
	go func() {
		th, err := b.m.Wait(ctx, "w1")
		if err != nil {
			t.Error(err)
		}
		waited <- th
	}()
	select {
	case th := <-waited:
		t.Fatalf("Wait returned while the run was held in step 2: %+v", th)
	case <-time.After(300 * time.Millisecond):
	}
	close(a.release)
	th := <-waited
	if th.Status != runs.StatusIdle || th.Error != "" {
		t.Fatalf("after Wait: %+v", th)
	}
	if s := finalState(t, b.m, "w1"); s.N != steps {
		t.Fatalf("n = %d when Wait returned", s.N)
	}
	if _, err := b.m.Start(ctx, "count", "w1", nil, runs.StartOptions{}); err != nil {
		t.Fatalf("a run right after Wait: %v", err)
	}
}

// TestOrphansWithoutALeaseAreStillSettled: a thread a process without a
// queue left running (a Studio from before durable runs, stopped) has no
// lease, so no process takes it over: a process with a queue settles it
// as before. A running thread whose run holds a lease is left to its
// takeover.
func TestOrphansWithoutALeaseAreStillSettled(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	ctx := context.Background()
	store := pgthreads.New(pool)
	at := runs.Stamp(time.Now().Add(-time.Hour))
	for _, id := range []string{"old", "leased"} {
		if err := store.SaveThread(ctx, runs.ThreadRecord{ID: id, Graph: "count", Status: runs.StatusRunning, RunID: "r-" + id, Updated: at, Owner: "gone"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO studio_thread_leases (thread_id, fence, run_id, holder) VALUES ('leased', 1, 'r-leased', '')`); err != nil {
		t.Fatal(err)
	}
	p := start(t, pool, "a", &effects{}, 0, false)
	th, err := p.m.Thread(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if th.Status != runs.StatusError || th.Error != runs.StoppedReason {
		t.Fatalf("the orphan without a lease: %+v, want settled as stopped", th)
	}
	if th, err := p.m.Thread(ctx, "leased"); err != nil || th.Status != runs.StatusRunning {
		t.Fatalf("the thread whose run holds a lease: %+v %v, want running (left to its takeover)", th, err)
	}
}

// TestEditsTakeTheLease: a state edit takes the thread's lease as a run
// does: refused while a run of another process holds it (even one the
// registry does not show yet), and the thread is free again after it.
func TestEditsTakeTheLease(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	p := start(t, pool, "a", &effects{}, 0, false)
	ctx := context.Background()
	if _, err := p.m.Start(ctx, "count", "ed", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.m.Wait(ctx, "ed"); err != nil {
		t.Fatal(err)
	}
	// Another process has just claimed a run: its lease is held, the
	// registry still says idle.
	if _, err := pool.Exec(ctx, `UPDATE studio_thread_leases SET run_id = 'elsewhere', holder = 'b', fence = fence + 1,
		expires_at = now() + interval '1 minute' WHERE thread_id = 'ed'`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.m.UpdateState(ctx, "ed", "", map[string]any{"n": 0}, ""); !errors.Is(err, runs.ErrThreadBusy) {
		t.Fatalf("an edit while another process holds the thread: %v, want ErrThreadBusy", err)
	}
	if _, err := pool.Exec(ctx, `UPDATE studio_thread_leases SET run_id = NULL, holder = '', expires_at = NULL WHERE thread_id = 'ed'`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.m.UpdateState(ctx, "ed", "", map[string]any{"n": 0}, ""); err != nil {
		t.Fatalf("an edit of a free thread: %v", err)
	}
	if _, ok, err := p.q.Active(ctx, "ed"); err != nil || ok {
		t.Fatalf("after the edit the thread is held: %v %v", ok, err)
	}
	if s := finalState(t, p.m, "ed"); s.N != 0 {
		t.Fatalf("n = %d after the edit", s.N)
	}
}

// TestLostTakeoverJobIsReplaced: a run waiting for a worker whose job was
// lost (the worker that fetched it died before taking the lease, so river
// holds it "running" for an hour) gets a new job once a lease's length
// has passed, and another process finishes it.
func TestLostTakeoverJobIsReplaced(t *testing.T) {
	t.Parallel()
	pool, _, a, b := runHeld(t, 2, true, "lost")
	ctx := context.Background()
	a.pause(t)
	// As a reaper leaves it, with the job it made taken by a worker that
	// then died: no worker will ever hold job 999999.
	if _, err := pool.Exec(ctx, `UPDATE studio_thread_leases SET holder = '', expires_at = NULL, fence = fence + 1,
		job_id = 999999, redispatch_at = now() + interval '300 milliseconds' WHERE thread_id = 'lost'`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "another process to finish the run", 15*time.Second, func() bool {
		th, err := b.m.Thread(ctx, "lost")
		return err == nil && th.Status == runs.StatusIdle
	})
	if s := finalState(t, b.m, "lost"); s.N != steps {
		t.Fatalf("n = %d", s.N)
	}
}

// TestTakeoverStopsAStaleLocalRun: a process whose renewals of a run
// failed past the lease (its database link flapped) still runs it when
// its own worker takes the run over: the stale run is stopped, writing
// nothing more, and the takeover continues the run to the end.
func TestTakeoverStopsAStaleLocalRun(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	fx := &effects{}
	a := start(t, pool, "a", fx, 2, false)
	ctx := context.Background()
	if _, err := a.m.Start(ctx, "count", "stale", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	<-a.entered
	var fence int64
	if err := pool.QueryRow(ctx, `SELECT fence FROM studio_thread_leases WHERE thread_id = 'stale'`).Scan(&fence); err != nil {
		t.Fatal(err)
	}
	a.renewFrom.Store(fence + 1) // this run's renewals fail from now on
	select {
	case <-a.entered: // the takeover, in this process, reached step 2 again
	case <-time.After(15 * time.Second):
		t.Fatal("the run was not taken over")
	}
	close(a.release)
	waitFor(t, "the run to end", 15*time.Second, func() bool {
		th, err := a.m.Thread(ctx, "stale")
		return err == nil && th.Status == runs.StatusIdle
	})
	if s := finalState(t, a.m, "stale"); s.N != steps {
		t.Fatalf("n = %d", s.N)
	}
	if fx.get(2) != 1 {
		t.Fatalf("step 2 ran %d times to its end, want 1 (the stale run was stopped in it)", fx.get(2))
	}
}

// TestClaimedRunIsVisibleAtOnce: a run is visible from its claim, before
// its process has written it anywhere else (a client whose request's
// answer was lost finds it, rather than starting a second run); and a run
// whose input is refused leaves no thread behind.
func TestClaimedRunIsVisibleAtOnce(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	p := start(t, pool, "a", &effects{}, 0, false)
	ctx := context.Background()
	// As a process leaves it that died right after its claim committed.
	l, err := p.q.Claim(ctx, runs.QueuedRun{Graph: "count", Thread: "fresh", RunID: "r1", Kind: runs.RunStart, Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	th, err := p.m.Thread(ctx, "fresh")
	if err != nil || th.Status != runs.StatusRunning || th.RunID != "r1" {
		t.Fatalf("the claimed run's thread: %+v %v, want running r1", th, err)
	}
	recs, err := p.m.ThreadRuns(ctx, "fresh", 0)
	if err != nil || len(recs) != 1 || recs[0].RunID != "r1" || recs[0].Status != runs.StatusRunning {
		t.Fatalf("the claimed run's thread lists %+v %v, want r1 running", recs, err)
	}
	if _, err := p.m.Start(ctx, "count", "fresh", nil, runs.StartOptions{}); !errors.Is(err, runs.ErrThreadBusy) {
		t.Fatalf("a second run: %v, want ErrThreadBusy", err)
	}
	// The claim ends without the thread ever being written (its input
	// refused in the other process): the thread is gone, not running for
	// ever.
	if err := p.q.Finish(ctx, l); err != nil {
		t.Fatal(err)
	}
	if th, err := p.m.Thread(ctx, "fresh"); !errors.Is(err, runs.ErrUnknownThread) {
		t.Fatalf("the thread of an ended claim: %+v %v, want ErrUnknownThread", th, err)
	}
	// A refused input leaves nothing behind, though the queue knew the
	// thread during the attempt.
	if _, err := p.m.Start(ctx, "count", "refused", map[string]any{"unknown_key": 1}, runs.StartOptions{}); !errors.Is(err, runs.ErrInvalidInput) {
		t.Fatalf("a refused input: %v, want ErrInvalidInput", err)
	}
	if _, err := p.m.Thread(ctx, "refused"); !errors.Is(err, runs.ErrUnknownThread) {
		t.Fatalf("the thread of a refused input: %v, want ErrUnknownThread", err)
	}
}

// TestRunNoProcessCanRunEndsAfterMaxTakeovers: a run that fails every
// takeover (here: its graph is served by no process) is ended as failed
// at the MaxTakeovers-th, freeing its thread, with a record that says why.
func TestRunNoProcessCanRunEndsAfterMaxTakeovers(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	p := start(t, pool, "a", &effects{}, 0, false)
	ctx := context.Background()
	if _, err := p.q.Claim(ctx, runs.QueuedRun{Graph: "retired", Thread: "capped", RunID: "rc", Kind: runs.RunStart, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// Its process died, and it has been tried all but once already.
	if _, err := pool.Exec(ctx, `UPDATE studio_run_queue SET attempts = $1 - 1 WHERE run_id = 'rc'`, runs.MaxTakeovers); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE studio_thread_leases SET expires_at = now() - interval '1 second' WHERE thread_id = 'capped'`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the run to be ended", 15*time.Second, func() bool {
		_, active, err := p.q.Active(ctx, "capped")
		return err == nil && !active
	})
	recs, err := p.m.ThreadRuns(ctx, "capped", 0)
	if err != nil || len(recs) != 1 || recs[0].Status != runs.StatusError || !strings.Contains(recs[0].Error, "could not be taken over") {
		t.Fatalf("the ended run's record: %+v %v", recs, err)
	}
}

// TestShutdownLetsRunsFinishWithinTheGrace: a process shutting down with a
// grace lets its run finish there (not handed back: no takeover) and
// refuses new runs meanwhile; one that outlasts the grace is handed back
// and finished elsewhere.
func TestShutdownLetsRunsFinishWithinTheGrace(t *testing.T) {
	t.Parallel()
	pool, fx, a, b := runHeld(t, 2, false, "g1")
	ctx := context.Background()
	done := make(chan error, 1)
	go func() { done <- a.q.Shutdown(ctx, a.m, 10*time.Second) }()
	// Drain begins as Shutdown starts: a new run is refused (polled, as
	// Shutdown runs in its own goroutine; a run started before is let be).
	waitFor(t, "the process to drain", 5*time.Second, func() bool {
		_, err := a.m.Start(ctx, "count", "", map[string]any{"n": steps}, runs.StartOptions{})
		return errors.Is(err, runs.ErrThreadBusy) && strings.Contains(err.Error(), "stopping")
	})
	close(a.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	th, err := b.m.Thread(ctx, "g1")
	if err != nil || th.Status != runs.StatusIdle || th.Error != "" {
		t.Fatalf("the run after the shutdown: %+v %v", th, err)
	}
	var takeovers int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM studio_events WHERE thread_id = 'g1' AND body->>'kind' = 'run_takeover'`).Scan(&takeovers); err != nil {
		t.Fatal(err)
	}
	if takeovers != 0 || fx.get(2) != 1 {
		t.Fatalf("%d takeovers, step 2 ran %d times: the run should have finished where it ran", takeovers, fx.get(2))
	}
}
