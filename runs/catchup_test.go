package runs_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
)

// A tab that opens mid-run first sees what the checkpoints say (a finished
// while b runs), then the live rest of the run.
func TestSubscriberMidRunCatchesUpThenGoesLive(t *testing.T) {
	t.Parallel()
	g := newGates()
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, g)})
	ctx := context.Background()
	if _, err := m.Start(ctx, "linear", "mid", map[string]any{}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	<-g.entered // a's checkpoint is saved; b runs
	catchup, sub, err := m.Subscribe(ctx, "mid")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var kinds []string
	for _, ev := range catchup {
		if !ev.Catchup {
			t.Errorf("catch-up event %+v lacks Catchup", ev)
		}
		k := string(ev.Kind)
		if ev.Node != "" {
			k += ":" + ev.Node
		}
		kinds = append(kinds, k)
	}
	for _, want := range []string{"run_started", "checkpoint", "task_finished:a", "task_planned:b"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("catch-up %v lacks %q", kinds, want)
		}
	}
	if !slices.Contains(kinds, "task_started:b") {
		t.Errorf("catch-up %v does not say b is running", kinds)
	}
	if slices.Contains(kinds, "task_finished:b") {
		t.Errorf("catch-up %v claims b finished while it runs", kinds)
	}
	last := catchup[len(catchup)-1]
	if last.Kind != runs.KindCaughtUp || last.Status != runs.StatusRunning {
		t.Fatalf("catch-up ends with %+v, want caught_up with status running", last)
	}
	close(g.release)
	live := collect(t, sub)
	if !slices.Contains(live, "task_finished:b") || live[len(live)-1] != "status:idle" {
		t.Fatalf("live events %v lack b's finish and the idle status", live)
	}
}

func TestCatchupShowsBumpsAndInterrupts(t *testing.T) {
	t.Parallel()
	m := manager(t, map[string]engine.Compiled{"ask": approvals(t, false)})
	ctx := context.Background()
	if _, err := m.Start(ctx, "ask", "c", map[string]any{"n": 1}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, m, "c")
	catchup, sub, err := m.Subscribe(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	var sawBump, sawInterrupt bool
	for _, ev := range catchup {
		if ev.Kind == runs.KindBarrier && slices.ContainsFunc(ev.Bumps, func(b runs.Bump) bool { return b.Channel == "n" && b.Old == 0 && b.New > 0 }) {
			sawBump = true
		}
		if ev.Kind == runs.KindTaskInterrupted && ev.Node == "ask" && len(ev.Interrupts) == 1 && ev.Interrupts[0].ID != "" {
			sawInterrupt = true
		}
	}
	if !sawBump || !sawInterrupt {
		t.Fatalf("catch-up %+v: bump of n seen %v, interrupt of ask seen %v", catchup, sawBump, sawInterrupt)
	}
	last := catchup[len(catchup)-1]
	if last.Status != runs.StatusInterrupted || len(last.Interrupts) != 1 {
		t.Fatalf("caught_up = %+v, want interrupted with one interrupt", last)
	}
	if _, _, err := m.Subscribe(ctx, "none"); err == nil {
		t.Fatal("Subscribe to an unknown thread succeeded")
	}
}

// A subscriber that never reads is dropped; the run finishes anyway and a
// reading subscriber gets every event in order.
func TestSlowSubscriberIsDroppedNeverBlocksTheRun(t *testing.T) {
	t.Parallel()
	type loopState struct {
		N int `json:"n"`
	}
	sg := engine.NewStateGraph[loopState]()
	sg.AddNode("inc", func(_ context.Context, s loopState) (engine.Output, error) {
		return engine.Update{"n": s.N + 1}, nil
	})
	sg.AddEdge(engine.Start, "inc")
	sg.AddConditionalEdges("inc", func(_ context.Context, s loopState) (engine.Route, error) {
		if s.N >= 150 {
			return engine.To(engine.End), nil
		}
		return engine.To("inc"), nil
	}, nil)
	g, err := sg.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	m := manager(t, map[string]engine.Compiled{"loop": g})
	ctx := context.Background()
	if _, err := m.Start(ctx, "loop", "slow", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, m, "slow")
	_, stalled, err := m.Subscribe(ctx, "slow")
	if err != nil {
		t.Fatal(err)
	}
	_, reader, err := m.Subscribe(ctx, "slow")
	if err != nil {
		t.Fatal(err)
	}
	var got []runs.Event
	var wg sync.WaitGroup
	wg.Go(func() {
		for ev := range reader.C {
			got = append(got, *ev)
			if ev.Kind == runs.KindRunFinished {
				return
			}
		}
	})
	if _, err := m.Start(ctx, "loop", "slow", map[string]any{"n": 0}, runs.StartOptions{RecursionLimit: 1000}); err != nil {
		t.Fatal(err)
	}
	if th := wait(t, m, "slow"); th.Status != runs.StatusIdle {
		t.Fatalf("run with a stalled subscriber: %+v", th)
	}
	wg.Wait()
	reader.Close()
	if !stalled.Dropped() {
		t.Fatal("the stalled subscriber was not dropped")
	}
	if len(got) < runs.SubscriberBuffer {
		t.Fatalf("reader got %d events, want more than the buffer (%d) for this test to mean anything", len(got), runs.SubscriberBuffer)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Seq != got[i-1].Seq+1 {
			t.Fatalf("event %d has seq %d after %d: the reader missed events", i, got[i].Seq, got[i-1].Seq)
		}
	}
	if m.Subscribers("slow") != 0 {
		t.Fatalf("%d subscribers left after both ended", m.Subscribers("slow"))
	}
}

// countingSaver counts the reads of a thread's checkpoints.
type countingSaver struct {
	checkpoints.Saver
	mu    sync.Mutex
	reads int
}

func (s *countingSaver) List(ctx context.Context, q checkpoints.ListQuery, opts checkpoints.ListOptions) ([]*checkpoints.Tuple, error) {
	s.mu.Lock()
	s.reads++
	s.mu.Unlock()
	return s.Saver.List(ctx, q, opts)
}

func (s *countingSaver) Get(ctx context.Context, cfg checkpoints.Config) (*checkpoints.Tuple, error) {
	s.mu.Lock()
	s.reads++
	s.mu.Unlock()
	return s.Saver.Get(ctx, cfg)
}

// A catch-up (every page load, every tab that connects) reads the
// thread's history from the checkpointer once, not once for the edges and
// again for the values.
func TestCatchupReadsTheHistoryOnce(t *testing.T) {
	t.Parallel()
	saver := &countingSaver{Saver: checkpoints.NewMemory()}
	g := linearOn(t, nil, saver)
	m := manager(t, map[string]engine.Compiled{"linear": g})
	ctx := context.Background()
	if _, err := m.Start(ctx, "linear", "once", map[string]any{}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, m, "once")
	saver.mu.Lock()
	saver.reads = 0
	saver.mu.Unlock()
	evs, err := runs.Catchup(ctx, g, "once")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(ev runs.Event) bool { return ev.Kind == runs.KindTaskFinished && ev.Node == "b" }) {
		t.Fatalf("catch-up %+v lacks b's outcome", evs)
	}
	saver.mu.Lock()
	defer saver.mu.Unlock()
	if saver.reads != 1 {
		t.Fatalf("Catchup read the checkpointer %d times, want 1", saver.reads)
	}
}
