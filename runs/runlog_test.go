package runs_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
)

// failing is START → ask (an interrupt) → bad and slow in parallel: bad
// fails, which cancels slow (it waits for its context).
func failing(t *testing.T, saver checkpoints.Saver) engine.Compiled {
	t.Helper()
	sg := engine.NewStateGraph[testState]()
	sg.AddNode("ask", func(ctx context.Context, _ testState) (engine.Output, error) {
		if _, err := engine.Interrupt(ctx, map[string]any{"question": "go?"}); err != nil {
			return nil, err
		}
		return engine.Set("log", "asked"), nil
	})
	sg.AddNode("bad", func(context.Context, testState) (engine.Output, error) { return nil, errors.New("no") })
	sg.AddNode("slow", func(ctx context.Context, _ testState) (engine.Output, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	sg.AddEdge(engine.Start, "ask").AddEdge("ask", "bad").AddEdge("ask", "slow").AddEdge("bad", engine.End).AddEdge("slow", engine.End)
	return compileOn(t, sg, saver)
}

// The run log outlives the Manager: after a restart, the catch-up of a
// thread whose resume failed still carries the answer (with its origin),
// the cancelled task, and the interrupted task's second run in the
// resume's run, as the live events did.
func TestRunLogSurvivesARestart(t *testing.T) {
	t.Parallel()
	for _, b := range []struct {
		name string
		make func(t *testing.T) (func() checkpoints.Saver, runs.ThreadStore, runs.RunLog)
	}{
		{"memory", func(*testing.T) (func() checkpoints.Saver, runs.ThreadStore, runs.RunLog) {
			mem := checkpoints.NewMemory()
			return func() checkpoints.Saver { return mem }, runs.NewMemoryThreads(), runs.NewMemoryRunLog()
		}},
		{"postgres", func(t *testing.T) (func() checkpoints.Saver, runs.ThreadStore, runs.RunLog) {
			pool := pgtest.Schema(t, nil)
			return func() checkpoints.Saver { return pgsaver.New(pool, nil) }, pgthreads.New(pool), pgthreads.NewRunLog(pool)
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			saver, store, log := b.make(t)
			m1, err := runs.NewManager(map[string]engine.Compiled{"f": failing(t, saver())}, runs.WithThreadStore(store), runs.WithRunLog(log))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m1.Start(ctx, "f", "t", nil, runs.StartOptions{}); err != nil {
				t.Fatal(err)
			}
			wait(t, m1, "t")
			_, sub, err := m1.Subscribe(ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m1.ResumeWith(ctx, "t", "yes", &runs.ResumeOptions{Origin: runs.OriginThreadPage}); err != nil {
				t.Fatal(err)
			}
			live := kinds(untilFinished(t, sub))
			sub.Close()
			if th := wait(t, m1, "t"); th.Status != runs.StatusError {
				t.Fatalf("status %s, want error", th.Status)
			}
			m1.Close()

			m2 := manager(t, map[string]engine.Compiled{"f": failing(t, saver())}, runs.WithThreadStore(store), runs.WithRunLog(log))
			evs, _, err := m2.History(ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			// The resume's run as the catch-up tells it, from its run_started.
			var resumed []runs.Event
			for i, ev := range evs {
				if ev.Kind == runs.KindRunStarted && ev.RunKind == runs.RunResume {
					resumed = evs[i:]
				}
			}
			if len(resumed) == 0 {
				t.Fatalf("no resume run in the catch-up: %v", kinds(evs))
			}
			if o := resumed[0].Origin; o != runs.OriginThreadPage {
				t.Errorf("resume origin %q", o)
			}
			got := kinds(resumed)
			for _, want := range []string{"interrupt_answered:ask", "task_finished:ask", "task_failed:bad", "task_cancelled:slow"} {
				if !slices.Contains(got, want) {
					t.Errorf("after a restart the resume lacks %s: %v", want, got)
				}
				if !slices.Contains(live, want) {
					t.Errorf("live, the resume lacked %s: %v", want, live)
				}
			}
			for _, ev := range resumed {
				if ev.Kind == runs.KindInterruptAnswered && (ev.Answer != `"yes"` || len(ev.Interrupts) != 1 || ev.Interrupts[0].Preview != `{"question":"go?"}`) {
					t.Errorf("answer event %+v", ev)
				}
			}
		})
	}
}

func kinds(evs []runs.Event) []string {
	out := make([]string, 0, len(evs))
	for _, ev := range evs {
		k := string(ev.Kind)
		if ev.Node != "" {
			k += ":" + ev.Node
		}
		out = append(out, k)
	}
	return out
}

// heldRunLog holds back every write of a run's end (of thread's runs
// only, when thread is set), while holding is set, until release is
// closed, as a slow database would; with refuse set it refuses them
// instead, as a database that is down would.
type heldRunLog struct {
	runs.RunLog
	holding, refuse atomic.Bool
	thread          string
	release         chan struct{}
	// held, deleted and refused, when made, hear that a held save
	// began, that a run was deleted and (if there is room) that a save
	// was refused.
	held, deleted, refused chan struct{}
}

func (l *heldRunLog) SaveRun(ctx context.Context, rec runs.RunRecord) error {
	if !rec.Ended.IsZero() && (l.thread == "" || rec.Thread == l.thread) {
		if l.refuse.Load() {
			select {
			case l.refused <- struct{}{}:
			default:
			}
			return errDown
		}
		if l.holding.Load() {
			if l.held != nil {
				l.held <- struct{}{}
			}
			<-l.release
		}
	}
	return l.RunLog.SaveRun(ctx, rec)
}

func (l *heldRunLog) DeleteRun(ctx context.Context, thread, runID string) error {
	err := l.RunLog.DeleteRun(ctx, thread, runID)
	if l.deleted != nil {
		l.deleted <- struct{}{}
	}
	return err
}

// A run that ended is reported ended by RunRecord and ThreadRuns as soon
// as its end is published (the thread is idle), while its record is
// still being written, and still after a next run on the thread has
// started: the Agent Server API's join answers once the thread is idle,
// and a client's next look at the run must not find it running.
func TestAnEndedRunIsReportedEndedWhileItsRecordIsWritten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := &heldRunLog{RunLog: runs.NewMemoryRunLog(), release: make(chan struct{})}
	defer close(log.release)
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, nil)}, runs.WithRunLog(log))
	// A first run makes the thread, so it can be subscribed to.
	if _, err := m.Start(ctx, "linear", "t", map[string]any{"log": "x"}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, m, "t")
	log.holding.Store(true)
	_, sub, err := m.Subscribe(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ended := func(runID string) {
		t.Helper()
		rec, err := m.RunRecord(ctx, "t", runID)
		if err != nil || rec.Ended.IsZero() || rec.Status != runs.StatusIdle {
			t.Fatalf("run %s: %+v, %v; want it ended, idle", runID, rec, err)
		}
		recs, err := m.ThreadRuns(ctx, "t", 0)
		i := slices.IndexFunc(recs, func(r runs.RunRecord) bool { return r.RunID == runID })
		if err != nil || i < 0 || recs[i].Ended.IsZero() {
			t.Fatalf("thread runs: %+v, %v; want %s ended", recs, err, runID)
		}
	}
	run := func() string {
		t.Helper()
		th, err := m.Start(ctx, "linear", "t", map[string]any{"log": "y"}, runs.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		collect(t, sub)
		if now, err := m.Thread(ctx, "t"); err != nil || now.Status != runs.StatusIdle {
			t.Fatalf("thread after run_finished: %+v, %v", now, err)
		}
		return th.RunID
	}
	first := run()
	ended(first)
	second := run()
	ended(first)
	ended(second)
}

// refusedEnd runs linear on thread t of a Manager whose run log refuses
// (log.refuse) the write of the run's end, and returns after the run.
func refusedEnd(t *testing.T) (*runs.Manager, *heldRunLog, string) {
	t.Helper()
	log := &heldRunLog{RunLog: runs.NewMemoryRunLog(), release: make(chan struct{})}
	log.refuse.Store(true)
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, nil)}, runs.WithRunLog(log), runs.WithErrorHandler(func(error) {}))
	th, err := m.Start(context.Background(), "linear", "t", map[string]any{"log": "x"}, runs.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, m, "t")
	return m, log, th.RunID
}

// A run whose end the run log refused is reported ended all the same
// (from the record waiting to be written again), and a thread whose run's
// end is still being written is not evicted with its record: its run is
// never reported running once it ended.
func TestAnEndedRunStaysEndedWhenItsRecordWaits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		m, _, runID := refusedEnd(t)
		if rec, err := m.RunRecord(ctx, "t", runID); err != nil || rec.Ended.IsZero() || rec.Status != runs.StatusIdle {
			t.Fatalf("run whose end the log refused: %+v, %v; want it ended, idle", rec, err)
		}
	})
	t.Run("evicted", func(t *testing.T) {
		t.Parallel()
		log := &heldRunLog{RunLog: runs.NewMemoryRunLog(), thread: "t", release: make(chan struct{})}
		defer close(log.release)
		log.holding.Store(true)
		m := manager(t, map[string]engine.Compiled{"linear": linear(t, nil)}, runs.WithRunLog(log), runs.WithIdleLimits(1, 1<<30))
		th, err := m.Start(ctx, "linear", "t", map[string]any{"log": "x"}, runs.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, sub, err := m.Subscribe(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		// The run may have ended before the subscription: its end is
		// held either way; wait for the thread to be idle.
		for {
			if cur, err := m.Thread(ctx, "t"); err == nil && cur.Status == runs.StatusIdle {
				break
			}
			select {
			case <-sub.C:
			case <-time.After(10 * time.Second):
				t.Fatal("thread t never went idle")
			}
		}
		sub.Close()
		// Another thread's run ends: the Manager evicts idle threads
		// beyond one.
		if _, err := m.Start(ctx, "linear", "u", map[string]any{"log": "y"}, runs.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		wait(t, m, "u")
		if rec, err := m.RunRecord(ctx, "t", th.RunID); err != nil || rec.Ended.IsZero() {
			t.Fatalf("run of t after u's run: %+v, %v; want it ended", rec, err)
		}
	})
}

// A deleted run stays deleted though its end's record waited to be
// written again (the run log refused it): DeleteRun drops the waiting
// record, and DeleteThread its runs', so none is read back, nor listed
// on a new thread of the same id.
func TestADeletedRunStaysDeletedWhenItsRecordWaited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("DeleteRun", func(t *testing.T) {
		t.Parallel()
		m, _, runID := refusedEnd(t)
		if err := m.DeleteRun(ctx, "t", runID, false); err != nil {
			t.Fatal(err)
		}
		if rec, err := m.RunRecord(ctx, "t", runID); !errors.Is(err, runs.ErrUnknownRun) {
			t.Fatalf("deleted run read back: %+v, %v; want ErrUnknownRun", rec, err)
		}
	})
	t.Run("DeleteThread", func(t *testing.T) {
		t.Parallel()
		m, log, oldRun := refusedEnd(t)
		if err := m.DeleteThread(ctx, "t"); err != nil {
			t.Fatal(err)
		}
		log.refuse.Store(false)
		if _, err := m.Start(ctx, "linear", "t", map[string]any{"log": "y"}, runs.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		wait(t, m, "t")
		recs, err := m.ThreadRuns(ctx, "t", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.RunID == oldRun {
				t.Fatalf("the new thread t lists the deleted thread's run %s: %+v", oldRun, recs)
			}
		}
	})
}

// A run deleted as soon as its end is heard (an Agent Server client's join
// answers once the thread is idle, before the run's record is written)
// stays deleted, and so do the runs of a thread deleted then: the delete
// waits for the end's record instead of being undone by it.
func TestARunDeletedAsItsEndIsWrittenStaysDeleted(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"DeleteRun", "DeleteThread"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			log := &heldRunLog{RunLog: runs.NewMemoryRunLog(), release: make(chan struct{}),
				held: make(chan struct{}, 1), deleted: make(chan struct{}, 4)}
			log.holding.Store(true)
			m := manager(t, map[string]engine.Compiled{"linear": linear(t, nil)}, runs.WithRunLog(log))
			th, err := m.Start(ctx, "linear", "t", map[string]any{"log": "x"}, runs.StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			hear(t, log.held, "the run's end was never written") // the run ended; its record waits
			deleteWaitsForEnd(t, log, how, func() error {
				if how == "DeleteRun" {
					return m.DeleteRun(ctx, "t", th.RunID, false)
				}
				return m.DeleteThread(ctx, "t")
			})
		})
	}
}

// A run deleted while the record of its end, refused once, is being
// written again stays deleted: the delete waits for that write too.
func TestARunDeletedAsItsEndIsWrittenAgainStaysDeleted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := &heldRunLog{RunLog: runs.NewMemoryRunLog(), release: make(chan struct{}),
		held: make(chan struct{}, 1), deleted: make(chan struct{}, 4), refused: make(chan struct{}, 1)}
	log.refuse.Store(true)
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, nil)}, runs.WithRunLog(log), runs.WithErrorHandler(func(error) {}))
	th, err := m.Start(ctx, "linear", "t", map[string]any{"log": "x"}, runs.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hear(t, log.refused, "the run's end was never written")
	// The next write of the end, the writer's, is held.
	log.holding.Store(true)
	log.refuse.Store(false)
	hear(t, log.held, "the refused end was never written again")
	deleteWaitsForEnd(t, log, "DeleteRun", func() error { return m.DeleteRun(ctx, "t", th.RunID, false) })
}

// hear waits for c, failing with what after 10 s.
func hear(t *testing.T, c chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatal(what)
	}
}

// deleteWaitsForEnd runs del (how names it) while log holds the write of
// thread t's run's end: it must neither delete nor return until the write
// is let go, and then leave nothing of the thread's runs in the log.
func deleteWaitsForEnd(t *testing.T, log *heldRunLog, how string, del func() error) {
	t.Helper()
	deleted := make(chan error, 1)
	go func() { deleted <- del() }()
	select {
	case <-log.deleted:
		t.Errorf("%s deleted the run while its end's record was still to be written", how)
	case err := <-deleted:
		t.Errorf("%s returned (%v) while the run's end's record was still to be written", how, err)
	case <-time.After(200 * time.Millisecond): // it waits, as it should
	}
	close(log.release)
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	if recs, err := log.RunLog.ListRuns(context.Background(), "t", 0); err != nil || len(recs) != 0 {
		t.Fatalf("after %s the run log holds %+v, %v; want nothing", how, recs, err)
	}
}
