package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/engine/channels"
	"github.com/superstep-dev/superstep/runs"
)

// A Studio that stops mid-run (Manager.Close) records the run as cut off
// by the stop, as a restart after a crash would, not as cancelled by
// someone.
func TestStopMidRunIsRecordedAsCutOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := runs.NewMemoryThreads()
	gate := newGates()
	m, err := runs.NewManager(map[string]engine.Compiled{"linear": linear(t, gate)}, runs.WithThreadStore(store))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Start(ctx, "linear", "stopped", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	<-gate.entered
	m.Close()
	rec, err := store.GetThread(ctx, "stopped")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != runs.StatusError || rec.Error != runs.StoppedReason {
		t.Fatalf("registry after a stop mid-run: %s %q, want error %q", rec.Status, rec.Error, runs.StoppedReason)
	}
}

// heldStore holds the first write of an idle status of a thread until
// released.
type heldStore struct {
	runs.ThreadStore
	id      string
	once    sync.Once
	held    chan struct{}
	release chan struct{}
}

func (s *heldStore) SaveThread(ctx context.Context, rec runs.ThreadRecord) error {
	if rec.ID == s.id && rec.Status == runs.StatusIdle {
		s.once.Do(func() {
			close(s.held)
			<-s.release
		})
	}
	return s.ThreadStore.SaveThread(ctx, rec)
}

// A run's run_finished reaches subscribers before anything of the next
// run on the thread, even while the registry is slow to take its status.
func TestRunFinishedComesBeforeTheNextRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := &heldStore{ThreadStore: runs.NewMemoryThreads(), id: "seq", held: make(chan struct{}), release: make(chan struct{})}
	gate := newGates()
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, gate)}, runs.WithThreadStore(store))
	first, err := m.Start(ctx, "linear", "seq", nil, runs.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-gate.entered
	_, sub, err := m.Subscribe(ctx, "seq")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	close(gate.release)
	<-store.held // the first run is over; its status is being written
	second := make(chan error, 1)
	go func() {
		_, err := m.Start(ctx, "linear", "seq", nil, runs.StartOptions{})
		second <- err
	}()
	var got []string
	finishedFirst := false
	timeout := time.After(10 * time.Second)
	for next := false; !next; {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				t.Fatal("subscription closed")
			}
			if ev.Kind == runs.KindRunStarted || ev.Kind == runs.KindRunFinished {
				got = append(got, string(ev.Kind)+" of run "+map[bool]string{true: "1", false: "2"}[ev.RunID == first.RunID])
			}
			finishedFirst = finishedFirst || ev.Kind == runs.KindRunFinished && ev.RunID == first.RunID
			next = ev.Kind == runs.KindRunStarted && ev.RunID != first.RunID
		case <-timeout:
			t.Fatalf("the second run sent nothing; got %v", got)
		}
	}
	if !finishedFirst {
		t.Errorf("live events %v: the second run started before the first one finished", got)
	}
	close(store.release)
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	wait(t, m, "seq")
}

// gatedGets holds the first registry read of a thread until released.
type gatedGets struct {
	runs.ThreadStore
	id      string
	armed   chan struct{}
	taken   atomic.Bool
	in      chan struct{}
	release chan struct{}
}

func (s *gatedGets) GetThread(ctx context.Context, id string) (runs.ThreadRecord, error) {
	rec, err := s.ThreadStore.GetThread(ctx, id)
	select {
	case <-s.armed:
		if id == s.id && s.taken.CompareAndSwap(false, true) {
			close(s.in)
			<-s.release
		}
	default:
	}
	return rec, err
}

// A thread read from the registry while it is resumed and dropped from
// memory again comes back as the newer record, not the one read: its
// answered interrupt cannot be answered twice.
func TestRegistryReadRacingAnEvictionKeepsTheNewerRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := &gatedGets{ThreadStore: runs.NewMemoryThreads(), id: "raced", armed: make(chan struct{}), in: make(chan struct{}), release: make(chan struct{})}
	m := manager(t, map[string]engine.Compiled{"ask": approvals(t, false), "linear": linear(t, nil)},
		runs.WithThreadStore(store), runs.WithIdleLimits(1, runs.DefaultIdleEventBytes))
	if _, err := m.Start(ctx, "ask", "raced", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	asked := wait(t, m, "raced")
	evictWith := func(id string) {
		t.Helper()
		if _, err := m.Start(ctx, "linear", id, nil, runs.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		wait(t, m, id)
		if held, _ := m.Held(); held != 1 {
			t.Fatalf("the Manager holds %d threads, want 1", held)
		}
	}
	evictWith("other")
	close(store.armed)
	stale := make(chan runs.Thread, 1)
	go func() {
		th, err := m.Thread(ctx, "raced") // reads the interrupted record, then waits
		if err != nil {
			t.Error(err)
		}
		stale <- th
	}()
	<-store.in
	if _, err := m.Resume(ctx, "raced", "yes"); err != nil {
		t.Fatal(err)
	}
	resumed := wait(t, m, "raced")
	evictWith("third")
	close(store.release)
	th := <-stale
	if th.Status != runs.StatusIdle || th.RunID != resumed.RunID {
		t.Fatalf("after the race the thread is %s (run %s); want idle (run %s), not the interrupted record of run %s", th.Status, th.RunID, resumed.RunID, asked.RunID)
	}
	if _, err := m.Resume(ctx, "raced", "again"); !errors.Is(err, runs.ErrNotInterrupted) {
		t.Fatalf("a second answer to the same interrupt = %v, want ErrNotInterrupted", err)
	}
}

// failingSaver holds its first Put until released, then fails it: the
// disk filled up under the first checkpoint of a run.
type failingSaver struct {
	checkpoints.Saver
	once    sync.Once
	in      chan struct{}
	release chan struct{}
}

var errDiskFull = errors.New("disk full")

func (s *failingSaver) Put(ctx context.Context, cfg checkpoints.Config, cp *checkpoints.Checkpoint, md checkpoints.Metadata, nv map[string]int64) (checkpoints.Config, error) {
	failed := false
	s.once.Do(func() {
		close(s.in)
		<-s.release
		failed = true
	})
	if failed {
		return checkpoints.Config{}, errDiskFull
	}
	return s.Saver.Put(ctx, cfg, cp, md, nv)
}

// A start that fails before the run got going because the checkpointer
// failed is reported as that failure, not as bad input; a tab subscribed
// to the new thread is told and let go, and the id starts afresh later.
func TestStartFailingOnTheCheckpointerIsNotBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	saver := &failingSaver{Saver: checkpoints.NewMemory(), in: make(chan struct{}), release: make(chan struct{})}
	m := manager(t, map[string]engine.Compiled{"linear": linearOn(t, nil, saver)})
	started := make(chan error, 1)
	go func() {
		_, err := m.Start(ctx, "linear", "z", nil, runs.StartOptions{})
		started <- err
	}()
	<-saver.in
	_, sub, err := m.Subscribe(ctx, "z")
	if err != nil {
		t.Fatal(err)
	}
	close(saver.release)
	err = <-started
	if !errors.Is(err, errDiskFull) || errors.Is(err, runs.ErrInvalidInput) {
		t.Fatalf("Start = %v; want the checkpointer's error, not ErrInvalidInput", err)
	}
	var kinds []string
	timeout := time.After(10 * time.Second)
	for closed := false; !closed; {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				closed = true
				break
			}
			kinds = append(kinds, string(ev.Kind))
			if ev.Kind == runs.KindRunFinished && !strings.Contains(ev.Error, "disk full") {
				t.Errorf("run_finished error %q does not say why", ev.Error)
			}
		case <-timeout:
			t.Fatalf("the subscription of a thread that never started stays open after %v", kinds)
		}
	}
	if len(kinds) == 0 || kinds[len(kinds)-1] != string(runs.KindRunFinished) {
		t.Fatalf("events before the subscription closed: %v, want run_finished last", kinds)
	}
	if _, err := m.Start(ctx, "linear", "z", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if th := wait(t, m, "z"); th.Status != runs.StatusIdle {
		t.Fatalf("the second start: %+v", th)
	}
}

// The bytes a thread's retained events are counted for cover what they
// hold: here a step that bumps 300 channels.
func TestRetainedEventsAreCountedInFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	chans := map[string]channels.Channel{"in": channels.NewLastValue(nil)}
	var outs []any
	for i := range 300 {
		name := "a-fairly-long-channel-name-" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		chans[name] = channels.NewLastValue(nil)
		outs = append(outs, name)
	}
	fan, err := engine.NewNode().SubscribeOnly("in").
		Do(func(_ context.Context, in any) (any, error) { return in, nil }).
		WriteTo(outs...).Build()
	if err != nil {
		t.Fatal(err)
	}
	fan.Name = "fan"
	p, err := engine.NewPregel(engine.PregelConfig{Channels: chans, Nodes: []*engine.Node{fan},
		InputChannels: []string{"in"}, OutputChannels: []string{"in"}, Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	m := manager(t, map[string]engine.Compiled{"fan": p})
	if _, err := m.Start(ctx, "fan", "wide", map[string]any{"in": 1}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, m, "wide")
	evs, _, err := m.History(ctx, "wide")
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(evs)
	if err != nil {
		t.Fatal(err)
	}
	if _, counted := m.Held(); counted < len(body) {
		t.Fatalf("retained events counted as %d bytes; their JSON alone is %d", counted, len(body))
	}
}

// countedGets counts the registry reads of one thread.
type countedGets struct {
	gatedGets
	reads atomic.Int32
}

func (s *countedGets) GetThread(ctx context.Context, id string) (runs.ThreadRecord, error) {
	if id == s.id {
		s.reads.Add(1)
	}
	return s.gatedGets.GetThread(ctx, id)
}

// Other threads dropped from memory while a thread is read from the
// registry do not make its lookup read again: only its own eviction does.
func TestRegistryReadIsNotRepeatedForOtherThreadsEvictions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := &countedGets{gatedGets: gatedGets{ThreadStore: runs.NewMemoryThreads(), id: "nobody", armed: make(chan struct{}), in: make(chan struct{}), release: make(chan struct{})}}
	close(store.armed)
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, nil)}, runs.WithThreadStore(store), runs.WithIdleLimits(1, runs.DefaultIdleEventBytes))
	looked := make(chan error, 1)
	go func() {
		_, err := m.Thread(ctx, "nobody")
		looked <- err
	}()
	<-store.in
	for _, id := range []string{"x1", "x2", "x3"} { // each evicts the one before
		if _, err := m.Start(ctx, "linear", id, nil, runs.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		wait(t, m, id)
	}
	close(store.release)
	if err := <-looked; !errors.Is(err, runs.ErrUnknownThread) {
		t.Fatalf("lookup of an unknown thread = %v", err)
	}
	if n := store.reads.Load(); n != 1 {
		t.Fatalf("the registry was read %d times for one lookup, while other threads were evicted", n)
	}
}
