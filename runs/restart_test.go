package runs_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
)

// backend is what a Studio keeps across a restart: its checkpoints and its
// thread registry. saver gives each process its own saver on the same
// storage (a Postgres saver caches per process).
type backend struct {
	name    string
	threads func(t *testing.T) (saver func() checkpoints.Saver, store runs.ThreadStore)
}

var backends = []backend{
	{"memory", func(*testing.T) (func() checkpoints.Saver, runs.ThreadStore) {
		mem := checkpoints.NewMemory()
		return func() checkpoints.Saver { return mem }, runs.NewMemoryThreads()
	}},
	{"postgres", func(t *testing.T) (func() checkpoints.Saver, runs.ThreadStore) {
		pool := pgtest.Schema(t, nil)
		return func() checkpoints.Saver { return pgsaver.New(pool, nil) }, pgthreads.New(pool)
	}},
}

// TestRestartKeepsThreadsAndInterruptsAnswerable: manager 1 runs threads to
// an interrupt, a breakpoint and the end, then closes; manager 2, on the
// same storage, lists them as they were, restores the pending interrupt
// from the checkpoints and resumes both waiting threads to the end.
func TestRestartKeepsThreadsAndInterruptsAnswerable(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			saver, store := b.threads(t)
			graphs := func(s checkpoints.Saver) map[string]engine.Compiled {
				return map[string]engine.Compiled{"ask": approvalsOn(t, false, s), "linear": linearOn(t, nil, s)}
			}

			m1, err := runs.NewManager(graphs(saver()), runs.WithThreadStore(store))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []struct {
				graph, thread string
				opts          runs.StartOptions
			}{
				{"ask", "asking", runs.StartOptions{RecursionLimit: 7}},
				{"linear", "paused", runs.StartOptions{InterruptBefore: []string{"b"}}},
				{"linear", "done", runs.StartOptions{}},
			} {
				if _, err := m1.Start(ctx, s.graph, s.thread, nil, s.opts); err != nil {
					t.Fatal(err)
				}
				wait(t, m1, s.thread)
			}
			before, err := m1.Thread(context.Background(), "asking")
			if err != nil {
				t.Fatal(err)
			}
			if len(before.Pending) != 1 {
				t.Fatalf("manager 1: %+v, want one pending interrupt", before)
			}
			m1.Close()

			m2 := manager(t, graphs(saver()), runs.WithThreadStore(store))
			status := map[string]runs.Status{}
			for _, th := range list(t, m2, runs.ThreadFilter{}) {
				status[th.ID] = th.Status
			}
			want := map[string]runs.Status{"asking": runs.StatusInterrupted, "paused": runs.StatusInterrupted, "done": runs.StatusIdle}
			if fmt.Sprint(status) != fmt.Sprint(want) {
				t.Fatalf("manager 2 lists %v, want %v", status, want)
			}
			waiting := list(t, m2, runs.ThreadFilter{Status: runs.StatusInterrupted, Graph: "ask"})
			if len(waiting) != 1 || waiting[0].ID != "asking" || waiting[0].RunID != before.RunID {
				t.Fatalf("interrupted threads of ask: %+v, want asking from run %s", waiting, before.RunID)
			}

			th, err := m2.Thread(context.Background(), "asking")
			if err != nil {
				t.Fatal(err)
			}
			if th.Status != runs.StatusInterrupted || len(th.Pending) != 1 || th.Pending[0].ID != before.Pending[0].ID || th.Pending[0].Node != "ask" {
				t.Fatalf("manager 2: %+v, want the pending interrupt %+v", th, before.Pending)
			}
			if fmt.Sprint(th.Pending[0].Value) != fmt.Sprint(before.Pending[0].Value) || th.Options.RecursionLimit != 7 {
				t.Fatalf("manager 2: interrupt value %v and options %+v, want %v and recursion limit 7", th.Pending[0].Value, th.Options, before.Pending[0].Value)
			}
			if _, err := m2.Resume(ctx, "asking", runs.ByID{th.Pending[0].ID: "yes"}); err != nil {
				t.Fatal(err)
			}
			if th := wait(t, m2, "asking"); th.Status != runs.StatusIdle {
				t.Fatalf("after resuming on manager 2: %+v, want idle", th)
			}
			if log := state(t, m2, "ask", "asking")["log"]; fmt.Sprint(log) != "[ask=yes]" {
				t.Fatalf("log = %v, want [ask=yes]", log)
			}

			paused, err := m2.Thread(context.Background(), "paused")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(paused.Before, []string{"b"}) || len(paused.Pending) != 0 || !slices.Equal(paused.Options.InterruptBefore, []string{"b"}) {
				t.Fatalf("manager 2: %+v, want stopped before b with the breakpoint kept", paused)
			}
			if _, err := m2.Resume(ctx, "paused", nil); err != nil {
				t.Fatal(err)
			}
			if th := wait(t, m2, "paused"); th.Status != runs.StatusIdle {
				t.Fatalf("after continuing on manager 2: %+v", th)
			}
			if log := state(t, m2, "linear", "paused")["log"]; fmt.Sprint(log) != "[a b]" {
				t.Fatalf("log = %v, want [a b]", log)
			}
			// The registry has the outcome, for a third process.
			for _, id := range []string{"asking", "paused"} {
				if rec, err := store.GetThread(ctx, id); err != nil || rec.Status != runs.StatusIdle {
					t.Errorf("registry has %s as %+v, %v; want idle", id, rec, err)
				}
			}
		})
	}
}

// TestRestartFailsRunsOfAStoppedProcess: a thread the registry calls
// running when a Manager starts was running in a process that died; it is
// shown as failed, and can be run again.
func TestRestartFailsRunsOfAStoppedProcess(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			saver, store := b.threads(t)
			gr := map[string]engine.Compiled{"linear": linearOn(t, nil, saver())}
			// What a process that died mid-run leaves behind.
			crashed := runs.ThreadRecord{ID: "crashed", Graph: "linear", Status: runs.StatusRunning, RunID: "run-1", Updated: time.Now()}
			if err := store.SaveThread(ctx, crashed); err != nil {
				t.Fatal(err)
			}
			m := manager(t, gr, runs.WithThreadStore(store))
			th, err := m.Thread(context.Background(), "crashed")
			if err != nil {
				t.Fatal(err)
			}
			if th.Status != runs.StatusError || th.Error != runs.StoppedReason || th.RunID != "run-1" {
				t.Fatalf("after the restart: %+v, want error %q", th, runs.StoppedReason)
			}
			if err := m.Cancel(context.Background(), "crashed"); !errors.Is(err, runs.ErrNotRunning) {
				t.Fatalf("Cancel = %v, want ErrNotRunning", err)
			}
			if _, err := m.Start(ctx, "linear", "crashed", nil, runs.StartOptions{}); err != nil {
				t.Fatalf("Start on the failed thread = %v", err)
			}
			if th := wait(t, m, "crashed"); th.Status != runs.StatusIdle {
				t.Fatalf("the new run: %+v, want idle", th)
			}
		})
	}
}

// TestRegistryFollowsEveryStatusChange: what the registry holds is what
// the Manager says, after a run starts, stops at an interrupt, is resumed,
// is cancelled, is edited; a rejected start writes nothing.
func TestRegistryFollowsEveryStatusChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := runs.NewMemoryThreads()
	g := newGates()
	m := manager(t, map[string]engine.Compiled{"ask": approvals(t, false), "linear": linear(t, g)}, runs.WithThreadStore(store))
	check := func(id string) {
		t.Helper()
		th, err := m.Thread(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := store.GetThread(ctx, id)
		if err != nil {
			t.Fatalf("registry: %v", err)
		}
		if rec.Status != th.Status || rec.RunID != th.RunID || rec.Error != th.Error || !rec.Updated.Equal(th.Updated) {
			t.Fatalf("registry has %+v, manager says %+v", rec, th)
		}
	}
	if _, err := m.Start(ctx, "linear", "l", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	<-g.entered
	check("l") // running
	if err := m.Cancel(context.Background(), "l"); err != nil {
		t.Fatal(err)
	}
	wait(t, m, "l")
	check("l") // idle, cancelled

	if _, err := m.Start(ctx, "ask", "a", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, m, "a")
	check("a") // interrupted
	if _, err := m.UpdateState(ctx, "a", "", map[string]any{"answer": "edited"}, "ask"); err != nil {
		t.Fatal(err)
	}
	check("a") // idle after the edit

	if _, err := m.Start(ctx, "linear", "rejected", map[string]any{"nope": 1}, runs.StartOptions{}); !errors.Is(err, runs.ErrInvalidInput) {
		t.Fatalf("Start with a bad key = %v", err)
	}
	if _, err := store.GetThread(ctx, "rejected"); !errors.Is(err, runs.ErrUnknownThread) {
		t.Fatalf("a rejected start reached the registry: %v", err)
	}
}

// TestBackToBackRunsLeaveTheLastStatus: a run's final write and the next
// run's first one race; the registry must end with the last run's outcome.
func TestBackToBackRunsLeaveTheLastStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := runs.NewMemoryThreads()
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, nil)}, runs.WithThreadStore(store))
	for range 20 {
		if _, err := m.Start(ctx, "linear", "t", nil, runs.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		th := wait(t, m, "t")
		rec, err := store.GetThread(ctx, "t")
		if err != nil || rec.Status != runs.StatusIdle || rec.RunID != th.RunID {
			t.Fatalf("registry has %+v (%v) after run %s ended", rec, err, th.RunID)
		}
	}
}

// failingStore refuses every write, as a database that went away does.
type failingStore struct{ runs.ThreadStore }

var errDown = errors.New("database is down")

func (failingStore) SaveThread(context.Context, runs.ThreadRecord) error { return errDown }

// TestRegistryWriteFailuresAreReported: a status the registry cannot take
// goes to the error handler; the run and this process's view of it go on.
func TestRegistryWriteFailuresAreReported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	var reported []error
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, nil)},
		runs.WithThreadStore(failingStore{runs.NewMemoryThreads()}),
		runs.WithErrorHandler(func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() }))
	if _, err := m.Start(ctx, "linear", "t", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if th := wait(t, m, "t"); th.Status != runs.StatusIdle {
		t.Fatalf("run: %+v, want idle", th)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 2 || !errors.Is(reported[0], errDown) {
		t.Fatalf("reported %v, want the failed writes of running and idle", reported)
	}
}

// TestRestartSubscribeToAThreadOfTheRegistry: after a restart a thread
// known only from the registry can be watched: Subscribe sends its
// catch-up from the checkpoints and then its live events; a cursor of the
// earlier process gets the full catch-up; an unknown thread is still
// ErrUnknownThread.
func TestRestartSubscribeToAThreadOfTheRegistry(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			saver, store := b.threads(t)
			graphs := func(s checkpoints.Saver) map[string]engine.Compiled {
				return map[string]engine.Compiled{"ask": approvalsOn(t, false, s), "linear": linearOn(t, nil, s)}
			}
			m1, err := runs.NewManager(graphs(saver()), runs.WithThreadStore(store))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []struct{ graph, thread string }{{"linear", "done"}, {"ask", "asking"}} {
				if _, err := m1.Start(ctx, s.graph, s.thread, nil, runs.StartOptions{}); err != nil {
					t.Fatal(err)
				}
				wait(t, m1, s.thread)
			}
			_, oldCursor, err := m1.History(ctx, "asking")
			if err != nil {
				t.Fatal(err)
			}
			m1.Close()

			m2 := manager(t, graphs(saver()), runs.WithThreadStore(store))
			kinds := func(evs []runs.Event) []string {
				var out []string
				for _, ev := range evs {
					if ev.Node != "" {
						out = append(out, string(ev.Kind)+":"+ev.Node)
					} else {
						out = append(out, string(ev.Kind))
					}
				}
				return out
			}
			catchup, sub, err := m2.Subscribe(ctx, "done")
			if err != nil {
				t.Fatalf("Subscribe to a thread of the registry: %v", err)
			}
			defer sub.Close()
			got := kinds(catchup)
			last := catchup[len(catchup)-1]
			if !slices.Contains(got, "task_finished:a") || !slices.Contains(got, "task_finished:b") || last.Kind != runs.KindCaughtUp || last.Status != runs.StatusIdle {
				t.Fatalf("catch-up of done = %v (last %+v); want a and b finished, then caught_up idle", got, last)
			}
			if _, err := m2.Start(ctx, "linear", "done", nil, runs.StartOptions{}); err != nil {
				t.Fatal(err)
			}
			if live := collect(t, sub); !slices.Contains(live, "task_finished:b") {
				t.Fatalf("live events after the restart = %v, want b finished", live)
			}

			catchup, sub2, err := m2.SubscribeFrom(ctx, "asking", oldCursor)
			if err != nil {
				t.Fatalf("SubscribeFrom with the earlier process's cursor: %v", err)
			}
			defer sub2.Close()
			last = catchup[len(catchup)-1]
			if got := kinds(catchup); !slices.Contains(got, "task_interrupted:ask") || last.Kind != runs.KindCaughtUp ||
				last.Status != runs.StatusInterrupted || len(last.Interrupts) != 1 {
				t.Fatalf("catch-up of asking = %v (last %+v); want the full catch-up ending interrupted with one interrupt", got, last)
			}
			if _, _, err := m2.Subscribe(ctx, "nobody"); !errors.Is(err, runs.ErrUnknownThread) {
				t.Fatalf("Subscribe to an unknown thread = %v, want ErrUnknownThread", err)
			}
		})
	}
}

// outage is a backend that can be down: its writes then fail with errDown.
type outage struct {
	mu   sync.Mutex
	down bool
}

func (o *outage) setDown(down bool) {
	o.mu.Lock()
	o.down = down
	o.mu.Unlock()
}

func (o *outage) isDown() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.down
}

// flakyStore refuses writes while down, as a database that is restarting
// does, and tells each record it stores on saved.
type flakyStore struct {
	runs.ThreadStore
	outage
	saved chan runs.ThreadRecord
}

func (s *flakyStore) SaveThread(ctx context.Context, rec runs.ThreadRecord) error {
	if s.isDown() {
		return errDown
	}
	if err := s.ThreadStore.SaveThread(ctx, rec); err != nil {
		return err
	}
	s.saved <- rec
	return nil
}

// A registry write that fails is not dropped: once the registry takes
// writes again, the thread's latest record lands, so the registry never
// keeps showing a run no process is executing.
func TestFailedRegistryWritesAreRetriedUntilTheyLand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := &flakyStore{ThreadStore: runs.NewMemoryThreads(), saved: make(chan runs.ThreadRecord, 64)}
	g := newGates()
	m := manager(t, map[string]engine.Compiled{"gated": linear(t, g)}, runs.WithThreadStore(store), runs.WithErrorHandler(func(error) {}))
	if _, err := m.Start(ctx, "gated", "t", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if rec := <-store.saved; rec.Status != runs.StatusRunning {
		t.Fatalf("first write %+v, want running", rec)
	}
	<-g.entered
	store.setDown(true) // the run's end cannot be written
	close(g.release)
	th := wait(t, m, "t")
	if rec, err := store.ThreadStore.GetThread(ctx, "t"); err != nil || rec.Status != runs.StatusRunning {
		t.Fatalf("registry while down: %+v, %v; want the stale running record", rec, err)
	}
	store.setDown(false)
	select {
	case rec := <-store.saved:
		if rec.Status != runs.StatusIdle || rec.RunID != th.RunID {
			t.Fatalf("retried write %+v, want the run's end", rec)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run's end never reached the registry")
	}
	if rec, err := store.ThreadStore.GetThread(ctx, "t"); err != nil || rec.Status != runs.StatusIdle {
		t.Fatalf("registry after the retry: %+v, %v", rec, err)
	}
}

// A process died with runs going whose ends the registry never got. The
// next Manager settles each from its checkpoints: a finished run is idle,
// one waiting on an interrupt is interrupted, one cut off mid-run is an
// error with StoppedReason. A running thread of another live Manager on
// the same registry (its heartbeat is fresh) is left alone.
func TestRestartSettlesOrphansFromTheirCheckpoints(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			saver, store := b.threads(t)
			graphs := func() map[string]engine.Compiled {
				return map[string]engine.Compiled{"linear": linearOn(t, nil, saver()), "ask": approvalsOn(t, false, saver())}
			}
			m1, err := runs.NewManager(graphs(), runs.WithThreadStore(store))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []struct{ graph, thread string }{{"linear", "finished"}, {"ask", "asking"}} {
				if _, err := m1.Start(ctx, s.graph, s.thread, nil, runs.StartOptions{}); err != nil {
					t.Fatal(err)
				}
				wait(t, m1, s.thread)
			}
			if _, err := m1.Start(ctx, "linear", "cut", nil, runs.StartOptions{InterruptBefore: []string{"b"}}); err != nil {
				t.Fatal(err)
			}
			wait(t, m1, "cut")
			m1.Close()
			// What the registry holds when the process died before its
			// last writes: every thread still running, owned by it; it
			// beat a minute ago. "live" belongs to a Studio still alive.
			now := time.Now()
			if err := store.Heartbeat(ctx, "dead-process", now.Add(-time.Minute)); err != nil {
				t.Fatal(err)
			}
			if err := store.Heartbeat(ctx, "live-process", now); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"finished", "asking", "cut", "live"} {
				rec, err := store.GetThread(ctx, id)
				if err != nil {
					rec = runs.ThreadRecord{ID: id, Graph: "linear", RunID: "r"}
				}
				rec.Status, rec.Error, rec.Before, rec.Owner, rec.Updated = runs.StatusRunning, "", nil, "dead-process", now.Add(-time.Minute)
				if id == "live" {
					rec.Owner = "live-process"
				}
				if err := store.SaveThread(ctx, rec); err != nil {
					t.Fatal(err)
				}
			}
			m2 := manager(t, graphs(), runs.WithThreadStore(store))
			for id, want := range map[string]runs.Status{"finished": runs.StatusIdle, "asking": runs.StatusInterrupted, "cut": runs.StatusError, "live": runs.StatusRunning} {
				rec, err := store.GetThread(ctx, id)
				if err != nil || rec.Status != want {
					t.Errorf("%s after the restart: %+v, %v; want %s", id, rec, err, want)
				}
			}
			if rec, _ := store.GetThread(ctx, "cut"); rec.Error != runs.StoppedReason || rec.Owner != "" {
				t.Errorf("cut off: %+v, want error %q and no owner", rec, runs.StoppedReason)
			}
			// The interrupted one can be answered at once.
			if _, err := m2.Resume(ctx, "asking", true); err != nil {
				t.Fatalf("resume the settled interrupt: %v", err)
			}
			if th := wait(t, m2, "asking"); th.Status != runs.StatusIdle {
				t.Fatalf("after the answer: %+v", th)
			}
		})
	}
}

// flakyRunLog refuses run-log writes while down and tells each record it
// stores on saved.
type flakyRunLog struct {
	runs.RunLog
	outage
	saved chan runs.RunRecord
}

func (l *flakyRunLog) SaveRun(ctx context.Context, rec runs.RunRecord) error {
	if l.isDown() {
		return errDown
	}
	if err := l.RunLog.SaveRun(ctx, rec); err != nil {
		return err
	}
	l.saved <- rec
	return nil
}

// A run-log write that fails is kept and written again once the log takes
// writes, so a reload keeps what the live tab showed (the run's end, its
// tasks), and Close makes one last, bounded attempt; Close twice is fine.
func TestFailedRunLogWritesAreRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := &flakyRunLog{RunLog: runs.NewMemoryRunLog(), saved: make(chan runs.RunRecord, 64)}
	log.setDown(true)
	m, err := runs.NewManager(map[string]engine.Compiled{"linear": linear(t, nil)}, runs.WithRunLog(log), runs.WithErrorHandler(func(error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Start(ctx, "linear", "t", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	th := wait(t, m, "t")
	log.setDown(false)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case rec := <-log.saved:
			if rec.RunID == th.RunID && rec.Status == runs.StatusIdle && !rec.Ended.IsZero() {
				got, err := log.RunLog.ListRuns(ctx, "t", 0)
				if err != nil || len(got) != 1 || got[0].Status != runs.StatusIdle || len(got[0].Tasks) == 0 {
					t.Fatalf("run log after the retry: %+v, %v", got, err)
				}
				m.Close()
				m.Close()
				return
			}
		case <-deadline:
			t.Fatal("the run's end never reached the run log")
		}
	}
}

// downSaver refuses checkpoint puts while down, so a start is refused.
type downSaver struct {
	checkpoints.Saver
	outage
}

func (s *downSaver) Put(ctx context.Context, cfg checkpoints.Config, cp *checkpoints.Checkpoint, md checkpoints.Metadata, nv map[string]int64) (checkpoints.Config, error) {
	if s.isDown() {
		return checkpoints.Config{}, errDown
	}
	return s.Saver.Put(ctx, cfg, cp, md, nv)
}

// A run's end that the registry did not take, then a start that is
// refused: the refusal restores the thread, and the registry still gets
// the run's end once it takes writes (it was marked written before).
func TestRefusedStartAfterAFailedWriteStillWritesTheEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := &flakyStore{ThreadStore: runs.NewMemoryThreads(), saved: make(chan runs.ThreadRecord, 1024)}
	saver := &downSaver{Saver: checkpoints.NewMemory()}
	g := newGates()
	m := manager(t, map[string]engine.Compiled{"gated": linearOn(t, g, saver)}, runs.WithThreadStore(store), runs.WithErrorHandler(func(error) {}))
	if _, err := m.Start(ctx, "gated", "t", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	<-g.entered
	store.setDown(true)
	close(g.release)
	th := wait(t, m, "t")
	saver.setDown(true)
	if _, err := m.Start(ctx, "gated", "t", nil, runs.StartOptions{}); err == nil {
		t.Fatal("a start with the checkpointer down was not refused")
	}
	saver.setDown(false)
	store.setDown(false)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case rec := <-store.saved:
			if rec.Status == runs.StatusIdle && rec.RunID == th.RunID {
				return
			}
		case <-deadline:
			rec, err := store.ThreadStore.GetThread(ctx, "t")
			t.Fatalf("the registry never got the run's end: %+v, %v", rec, err)
		}
	}
}
