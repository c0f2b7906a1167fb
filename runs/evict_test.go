package runs_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
)

// Looking at many threads (their page, websocket, checkpoints) keeps only
// a bounded number of idle ones in memory; a thread dropped from memory
// still lists, opens, catches up and resumes, from the registry and its
// checkpoints; a thread with a subscriber is never dropped, so its
// subscriber sees its next run.
func TestIdleThreadsAreEvictedAndComeBack(t *testing.T) {
	t.Parallel()
	const limit = 3
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, nil), "ask": approvals(t, false)}, runs.WithIdleLimits(limit, runs.DefaultIdleEventBytes))
	ctx := context.Background()
	if _, err := m.Start(ctx, "ask", "asking", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, m, "asking")
	if _, err := m.Start(ctx, "linear", "watched", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, m, "watched")
	_, watcher, err := m.Subscribe(ctx, "watched")
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()

	const looked = 20
	for i := range looked {
		id := fmt.Sprintf("t%02d", i)
		if _, err := m.Start(ctx, "linear", id, nil, runs.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		wait(t, m, id)
		if _, err := m.Thread(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, _, err := m.History(ctx, id); err != nil {
			t.Fatal(err)
		}
		_, sub, err := m.Subscribe(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		sub.Close()
		// The watched thread has a subscriber, so it is not idle.
		if held, _ := m.Held(); held > limit+1 {
			t.Fatalf("after looking at %d threads the Manager holds %d; want at most %d idle ones and the watched one", i+1, held, limit)
		}
	}
	if m.Holds("asking") {
		t.Fatal("the least recently used thread is still held")
	}
	if !m.Holds("watched") {
		t.Fatal("a thread with a subscriber was dropped")
	}

	all := list(t, m, runs.ThreadFilter{})
	if len(all) != looked+2 {
		t.Fatalf("ListThreads lists %d threads, want %d", len(all), looked+2)
	}
	if waiting := list(t, m, runs.ThreadFilter{Status: runs.StatusInterrupted}); len(waiting) != 1 || waiting[0].ID != "asking" {
		t.Fatalf("interrupted threads = %+v, want asking", waiting)
	}
	th, err := m.Thread(ctx, "asking")
	if err != nil || th.Status != runs.StatusInterrupted || len(th.Pending) != 1 || th.Pending[0].Node != "ask" {
		t.Fatalf("the dropped thread reads back as %+v (%v), want interrupted in ask", th, err)
	}
	evs, _, err := m.History(ctx, "asking")
	if err != nil || !slices.ContainsFunc(evs, func(ev runs.Event) bool { return ev.Kind == runs.KindTaskInterrupted && ev.Node == "ask" }) {
		t.Fatalf("the dropped thread's history = %+v (%v), want ask interrupted", evs, err)
	}
	if _, err := m.Resume(ctx, "asking", "yes"); err != nil {
		t.Fatal(err)
	}
	if th := wait(t, m, "asking"); th.Status != runs.StatusIdle {
		t.Fatalf("after Resume: %+v, want idle", th)
	}
	if log := state(t, m, "ask", "asking")["log"]; fmt.Sprint(log) != "[ask=yes]" {
		t.Fatalf("log = %v, want [ask=yes]", log)
	}

	if _, err := m.Start(ctx, "linear", "watched", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, watcher); !slices.Contains(got, "task_finished:b") {
		t.Fatalf("the watcher saw %v of the watched thread's next run, want b finished", got)
	}
}

// The retained events of idle threads are bounded in bytes too: with no
// budget, a thread that finishes with nobody watching keeps none of them.
func TestIdleEventBytesAreBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		budget   int
		retained bool
	}{
		{"default budget keeps the events", runs.DefaultIdleEventBytes, true},
		{"no budget", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := manager(t, map[string]engine.Compiled{"linear": linear(t, nil)}, runs.WithIdleLimits(runs.DefaultIdleThreads, tc.budget))
			for i := range 5 {
				id := fmt.Sprintf("t%d", i)
				if _, err := m.Start(context.Background(), "linear", id, nil, runs.StartOptions{}); err != nil {
					t.Fatal(err)
				}
				wait(t, m, id)
			}
			if _, bytes := m.Held(); (bytes > 0) != tc.retained || bytes > tc.budget {
				t.Fatalf("idle threads retain %d bytes of events; budget %d", bytes, tc.budget)
			}
		})
	}
}

func TestIdleLimitsAreChecked(t *testing.T) {
	t.Parallel()
	for _, l := range [][2]int{{0, 1}, {-1, 1}, {1, -1}} {
		if _, err := runs.NewManager(map[string]engine.Compiled{"linear": linear(t, nil)}, runs.WithIdleLimits(l[0], l[1])); err == nil {
			t.Errorf("WithIdleLimits(%d, %d) was accepted", l[0], l[1])
		}
	}
}

// recordingStore counts each thread's writes and fails those fail picks.
type recordingStore struct {
	runs.ThreadStore
	fail   func(runs.ThreadRecord) bool
	mu     sync.Mutex
	writes map[string]int
}

func newRecordingStore(fail func(runs.ThreadRecord) bool) *recordingStore {
	return &recordingStore{ThreadStore: runs.NewMemoryThreads(), fail: fail, writes: map[string]int{}}
}

func (s *recordingStore) SaveThread(ctx context.Context, rec runs.ThreadRecord) error {
	s.mu.Lock()
	s.writes[rec.ID]++
	s.mu.Unlock()
	if s.fail != nil && s.fail(rec) {
		return errDown
	}
	return s.ThreadStore.SaveThread(ctx, rec)
}

func (s *recordingStore) count(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes[id]
}

// A thread whose last status the registry could not take is listed as the
// Manager holds it, in the order its own update time gives, and a limit
// keeps it when it is among the newest; a thread with an unwritten status
// is not dropped from memory either.
func TestListThreadsOrdersHeldThreadsByTheirOwnTime(t *testing.T) {
	t.Parallel()
	// The registry keeps "b" running: its end is never written.
	store := newRecordingStore(func(rec runs.ThreadRecord) bool { return rec.ID == "b" && rec.Status != runs.StatusRunning })
	g := newGates()
	m := manager(t, map[string]engine.Compiled{"gated": linear(t, g), "free": linear(t, nil)},
		runs.WithThreadStore(store), runs.WithIdleLimits(1, 0), runs.WithErrorHandler(func(error) {}))
	ctx := context.Background()
	if _, err := m.Start(ctx, "gated", "b", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	<-g.entered
	if _, err := m.Start(ctx, "free", "a", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, m, "a")
	close(g.release)
	wait(t, m, "b")
	ids := func(ts []runs.Thread) []string {
		var out []string
		for _, th := range ts {
			out = append(out, th.ID+":"+string(th.Status))
		}
		return out
	}
	for _, tc := range []struct {
		f    runs.ThreadFilter
		want []string
	}{
		{runs.ThreadFilter{}, []string{"b:idle", "a:idle"}},
		{runs.ThreadFilter{Limit: 1}, []string{"b:idle"}},
		{runs.ThreadFilter{Status: runs.StatusRunning}, nil},
		{runs.ThreadFilter{Graph: "gated"}, []string{"b:idle"}},
	} {
		if got := ids(list(t, m, tc.f)); !slices.Equal(got, tc.want) {
			t.Errorf("ListThreads(%+v) = %v, want %v", tc.f, got, tc.want)
		}
	}
	if !m.Holds("b") {
		t.Fatal("a thread whose status the registry lacks was dropped from memory")
	}
}

// A start the graph rejects on an existing thread leaves the thread as it
// was, and writes nothing: the registry already holds that.
func TestRejectedStartOnAnExistingThreadWritesNothing(t *testing.T) {
	t.Parallel()
	store := newRecordingStore(nil)
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, nil)}, runs.WithThreadStore(store))
	ctx := context.Background()
	if _, err := m.Start(ctx, "linear", "x", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	before := wait(t, m, "x")
	writes := store.count("x")
	if _, err := m.Start(ctx, "linear", "x", map[string]any{"nope": 1}, runs.StartOptions{}); !errors.Is(err, runs.ErrInvalidInput) {
		t.Fatalf("Start with an unknown key = %v, want ErrInvalidInput", err)
	}
	after := wait(t, m, "x")
	if after.Status != before.Status || after.RunID != before.RunID || !after.Updated.Equal(before.Updated) {
		t.Fatalf("after a rejected start: %+v, want %+v", after, before)
	}
	if n := store.count("x"); n != writes {
		t.Fatalf("a rejected start wrote the thread %d times", n-writes)
	}
}
