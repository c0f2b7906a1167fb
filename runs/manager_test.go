package runs_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
)

type testState struct {
	Log    []string `json:"log" reduce:"append"`
	Answer string   `json:"answer"`
	N      int      `json:"n"`
}

// gates lets a test hold node "b" until it says so, and know when "b" has
// been entered.
type gates struct {
	entered chan struct{}
	release chan struct{}
}

func newGates() *gates {
	return &gates{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

// linear is START → a → b → END; b waits on g (nil: it does not wait).
func linear(t *testing.T, g *gates) engine.Compiled {
	t.Helper()
	return linearOn(t, g, checkpoints.NewMemory())
}

// linearOn is linear with its checkpoints in saver.
func linearOn(t *testing.T, g *gates, saver checkpoints.Saver) engine.Compiled {
	t.Helper()
	sg := engine.NewStateGraph[testState]()
	sg.AddNode("a", func(context.Context, testState) (engine.Output, error) {
		return engine.Update{"log": "a"}, nil
	})
	sg.AddNode("b", func(ctx context.Context, _ testState) (engine.Output, error) {
		if g != nil {
			g.entered <- struct{}{}
			select {
			case <-g.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return engine.Update{"log": "b"}, nil
	})
	sg.AddEdge(engine.Start, "a").AddEdge("a", "b").AddEdge("b", engine.End)
	return compileOn(t, sg, saver)
}

// approvals has one interrupting node "ask", or two in parallel ("ask"
// and "ask2") when two is set.
func approvals(t *testing.T, two bool) engine.Compiled {
	t.Helper()
	return approvalsOn(t, two, checkpoints.NewMemory())
}

// approvalsOn is approvals with its checkpoints in saver.
func approvalsOn(t *testing.T, two bool, saver checkpoints.Saver) engine.Compiled {
	t.Helper()
	sg := engine.NewStateGraph[testState]()
	ask := func(name string) func(ctx context.Context, _ testState) (engine.Output, error) {
		return func(ctx context.Context, _ testState) (engine.Output, error) {
			a, err := engine.Interrupt(ctx, map[string]any{"question": "ok to proceed from " + name + "?"})
			if err != nil {
				return nil, err
			}
			return engine.Update{"log": name + "=" + fmt.Sprint(a)}, nil
		}
	}
	sg.AddNode("ask", ask("ask"))
	sg.AddEdge(engine.Start, "ask").AddEdge("ask", engine.End)
	if two {
		sg.AddNode("ask2", ask("ask2"))
		sg.AddEdge(engine.Start, "ask2").AddEdge("ask2", engine.End)
	}
	return compileOn(t, sg, saver)
}

func compileOn(t *testing.T, sg *engine.StateGraph[testState], saver checkpoints.Saver) engine.Compiled {
	t.Helper()
	g, err := sg.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func manager(t *testing.T, graphs map[string]engine.Compiled, opts ...runs.ManagerOption) *runs.Manager {
	t.Helper()
	m, err := runs.NewManager(graphs, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func wait(t *testing.T, m *runs.Manager, thread string) runs.Thread {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	th, err := m.Wait(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

func state(t *testing.T, m *runs.Manager, graph, thread string) map[string]any {
	t.Helper()
	g, err := m.Graph(graph)
	if err != nil {
		t.Fatal(err)
	}
	s, err := g.Pregel().GetState(context.Background(), checkpoints.Config{ThreadID: thread})
	if err != nil {
		t.Fatal(err)
	}
	return s.Values
}

// collect reads sub until a run_finished event and returns the kinds of
// what it got, as "kind" or "kind:node".
func collect(t *testing.T, sub *runs.Subscription) []string {
	t.Helper()
	var out []string
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				t.Fatalf("subscription closed early (dropped=%v) after %v", sub.Dropped(), out)
			}
			s := string(ev.Kind)
			if ev.Node != "" {
				s += ":" + ev.Node
			}
			out = append(out, s)
			if ev.Kind == runs.KindRunFinished {
				out = append(out, "status:"+string(ev.Status))
				return out
			}
		case <-timeout:
			t.Fatalf("no run_finished; got %v", out)
		}
	}
}

func TestStartRunsTheGraphAndStreamsEvents(t *testing.T) {
	t.Parallel()
	g := newGates()
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, g)})
	ctx := context.Background()
	th, err := m.Start(ctx, "linear", "t1", map[string]any{"log": []any{"in"}}, runs.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if th.Status != runs.StatusRunning || th.Graph != "linear" || th.ID != "t1" {
		t.Fatalf("Start = %+v, want a running thread t1 of graph linear", th)
	}
	_, sub, err := m.Subscribe(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	<-g.entered
	close(g.release)
	got := collect(t, sub)
	for _, want := range []string{"task_finished:b", "barrier", "checkpoint", "run_finished", "status:idle"} {
		if !slices.Contains(got, want) {
			t.Errorf("events %v lack %q", got, want)
		}
	}
	if th := wait(t, m, "t1"); th.Status != runs.StatusIdle || th.Error != "" {
		t.Fatalf("after the run: %+v, want idle", th)
	}
	if log := state(t, m, "linear", "t1")["log"]; fmt.Sprint(log) != "[in a b]" {
		t.Fatalf("state log = %v, want [in a b]", log)
	}
}

func TestStartEventsCarryTriggersDurationsAndBumps(t *testing.T) {
	t.Parallel()
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, nil)})
	ctx := context.Background()
	// Start returns after the input checkpoint; subscribe before to see
	// everything, via a thread that already exists.
	if _, err := m.Start(ctx, "linear", "t", map[string]any{}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, m, "t")
	_, sub, err := m.Subscribe(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := m.Start(ctx, "linear", "t", map[string]any{"n": 2}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	var planned, finished, barrier *runs.Event
	for ev := range sub.C {
		switch {
		case ev.Kind == runs.KindTaskPlanned && ev.Node == "a":
			planned = ev
		case ev.Kind == runs.KindTaskFinished && ev.Node == "a":
			finished = ev
		case ev.Kind == runs.KindBarrier && barrier == nil && slices.ContainsFunc(ev.Bumps, func(b runs.Bump) bool { return b.Channel == "log" }):
			barrier = ev
		}
		if ev.Kind == runs.KindRunFinished {
			break
		}
	}
	if planned == nil || len(planned.Triggers) == 0 || planned.TaskID == "" {
		t.Fatalf("task_planned for a = %+v, want triggers and a task id", planned)
	}
	if finished == nil || finished.Attempt != 1 || finished.DurationMS < 0 || !slices.Contains(finished.Writes, "log") {
		t.Fatalf("task_finished for a = %+v, want attempt 1 and a write to log", finished)
	}
	if barrier == nil {
		t.Fatal("no barrier bumped log")
	}
	for _, b := range barrier.Bumps {
		if b.New <= b.Old {
			t.Errorf("bump %+v does not increase", b)
		}
	}
}

func TestSecondStartOnABusyThreadIsRefused(t *testing.T) {
	t.Parallel()
	g := newGates()
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, g)})
	ctx := context.Background()
	if _, err := m.Start(ctx, "linear", "busy", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	<-g.entered
	_, err := m.Start(ctx, "linear", "busy", nil, runs.StartOptions{})
	if !errors.Is(err, runs.ErrThreadBusy) {
		t.Fatalf("second Start = %v, want ErrThreadBusy", err)
	}
	if _, err := m.Resume(ctx, "busy", "x"); !errors.Is(err, runs.ErrThreadBusy) {
		t.Fatalf("Resume while running = %v, want ErrThreadBusy", err)
	}
	close(g.release)
	wait(t, m, "busy")
	if _, err := m.Start(ctx, "linear", "busy", nil, runs.StartOptions{}); err != nil {
		t.Fatalf("Start after the run ended = %v", err)
	}
	<-g.entered
	wait(t, m, "busy")
}

func TestCancelStopsTheRun(t *testing.T) {
	t.Parallel()
	g := newGates()
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, g)})
	ctx := context.Background()
	if _, err := m.Start(ctx, "linear", "c", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	<-g.entered
	// A cancel of another run (one that ended, say) leaves this one be.
	if err := m.CancelRun(ctx, "c", "an-ended-run"); !errors.Is(err, runs.ErrNotRunning) {
		t.Fatalf("CancelRun of a run that is not the active one = %v, want ErrNotRunning", err)
	}
	if th, _ := m.Thread(ctx, "c"); th.Status != runs.StatusRunning {
		t.Fatalf("after a cancel of another run the thread is %s", th.Status)
	}
	if err := m.Cancel(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	th := wait(t, m, "c")
	if th.Status != runs.StatusIdle || th.Error != "cancelled" {
		t.Fatalf("after Cancel: %+v, want idle and cancelled", th)
	}
	if err := m.Cancel(context.Background(), "c"); !errors.Is(err, runs.ErrNotRunning) {
		t.Fatalf("Cancel of an idle thread = %v, want ErrNotRunning", err)
	}
	if err := m.Cancel(context.Background(), "nope"); !errors.Is(err, runs.ErrUnknownThread) {
		t.Fatalf("Cancel of an unknown thread = %v, want ErrUnknownThread", err)
	}
}

func TestResumeAnswersTheInterrupt(t *testing.T) {
	t.Parallel()
	m := manager(t, map[string]engine.Compiled{"ask": approvals(t, false)})
	ctx := context.Background()
	if _, err := m.Resume(ctx, "r", "yes"); !errors.Is(err, runs.ErrUnknownThread) {
		t.Fatalf("Resume of an unknown thread = %v", err)
	}
	if _, err := m.Start(ctx, "ask", "r", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	th := wait(t, m, "r")
	if th.Status != runs.StatusInterrupted || len(th.Pending) != 1 || th.Pending[0].Node != "ask" {
		t.Fatalf("after Start: %+v, want one pending interrupt in ask", th)
	}
	if _, err := m.Resume(ctx, "r", "yes"); err != nil {
		t.Fatal(err)
	}
	th = wait(t, m, "r")
	if th.Status != runs.StatusIdle {
		t.Fatalf("after Resume: %+v, want idle", th)
	}
	if log := state(t, m, "ask", "r")["log"]; fmt.Sprint(log) != "[ask=yes]" {
		t.Fatalf("log = %v, want [ask=yes]", log)
	}
	if _, err := m.Resume(ctx, "r", "again"); !errors.Is(err, runs.ErrNotInterrupted) {
		t.Fatalf("Resume of an idle thread = %v, want ErrNotInterrupted", err)
	}
}

func TestResumeByInterruptID(t *testing.T) {
	t.Parallel()
	m := manager(t, map[string]engine.Compiled{"ask2": approvals(t, true)})
	ctx := context.Background()
	if _, err := m.Start(ctx, "ask2", "r2", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	th := wait(t, m, "r2")
	if len(th.Pending) != 2 {
		t.Fatalf("pending = %+v, want 2", th.Pending)
	}
	if _, err := m.Resume(ctx, "r2", "yes"); !errors.Is(err, runs.ErrInvalidInput) {
		t.Fatalf("a single answer for two interrupts = %v, want ErrInvalidInput", err)
	}
	if _, err := m.Resume(ctx, "r2", runs.ByID{"0123": "yes"}); !errors.Is(err, runs.ErrInvalidInput) {
		t.Fatalf("an unknown interrupt id = %v, want ErrInvalidInput", err)
	}
	answers := runs.ByID{}
	for _, p := range th.Pending {
		answers[p.ID] = "ok-" + p.Node
	}
	if _, err := m.Resume(ctx, "r2", answers); err != nil {
		t.Fatal(err)
	}
	if th := wait(t, m, "r2"); th.Status != runs.StatusIdle {
		t.Fatalf("after Resume: %+v", th)
	}
	if log := state(t, m, "ask2", "r2")["log"]; fmt.Sprint(log) != "[ask=ok-ask ask2=ok-ask2]" {
		t.Fatalf("log = %v", log)
	}
}

func TestBreakpointStopsAndContinues(t *testing.T) {
	t.Parallel()
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, nil)})
	ctx := context.Background()
	if _, err := m.Start(ctx, "linear", "bp", nil, runs.StartOptions{InterruptBefore: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	th := wait(t, m, "bp")
	if th.Status != runs.StatusInterrupted || !slices.Equal(th.Before, []string{"b"}) || len(th.Pending) != 0 {
		t.Fatalf("at the breakpoint: %+v, want interrupted before b", th)
	}
	if _, err := m.Resume(ctx, "bp", nil); err != nil {
		t.Fatal(err)
	}
	if th := wait(t, m, "bp"); th.Status != runs.StatusIdle {
		t.Fatalf("after continue: %+v", th)
	}
	if log := state(t, m, "linear", "bp")["log"]; fmt.Sprint(log) != "[a b]" {
		t.Fatalf("log = %v, want [a b]", log)
	}
}

func TestStartRejectsBadRequests(t *testing.T) {
	t.Parallel()
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, nil)})
	ctx := context.Background()
	for _, tc := range []struct {
		name, graph, thread string
		input               map[string]any
		opts                runs.StartOptions
		want                error
	}{
		{"unknown graph", "nope", "x", nil, runs.StartOptions{}, runs.ErrUnknownGraph},
		{"bad thread id", "linear", "a/b", nil, runs.StartOptions{}, runs.ErrInvalidInput},
		{"unknown key", "linear", "k", map[string]any{"nope": 1}, runs.StartOptions{}, runs.ErrInvalidInput},
		{"wrong type", "linear", "w", map[string]any{"n": "many"}, runs.StartOptions{}, runs.ErrInvalidInput},
		{"unknown breakpoint", "linear", "u", nil, runs.StartOptions{InterruptAfter: []string{"zzz"}}, runs.ErrInvalidInput},
		{"negative limit", "linear", "l", nil, runs.StartOptions{RecursionLimit: -1}, runs.ErrInvalidInput},
	} {
		_, err := m.Start(ctx, tc.graph, tc.thread, tc.input, tc.opts)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: Start = %v, want %v", tc.name, err, tc.want)
		}
		if _, err := m.Thread(context.Background(), tc.thread); !errors.Is(err, runs.ErrUnknownThread) {
			t.Errorf("%s: a rejected start left thread %q behind (%v)", tc.name, tc.thread, err)
		}
	}
}

func TestThreadIsBoundToItsGraph(t *testing.T) {
	t.Parallel()
	m := manager(t, map[string]engine.Compiled{"one": linear(t, nil), "two": linear(t, nil)})
	ctx := context.Background()
	if _, err := m.Start(ctx, "one", "th", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, m, "th")
	if _, err := m.Start(ctx, "two", "th", nil, runs.StartOptions{}); !errors.Is(err, runs.ErrGraphMismatch) {
		t.Fatalf("Start on another graph's thread = %v, want ErrGraphMismatch", err)
	}
}

func TestListThreadsFiltersByStatusAndGraph(t *testing.T) {
	t.Parallel()
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, nil), "ask": approvals(t, false)})
	ctx := context.Background()
	for _, s := range []struct{ graph, thread string }{{"linear", "l1"}, {"linear", "l2"}, {"ask", "a1"}} {
		if _, err := m.Start(ctx, s.graph, s.thread, nil, runs.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		wait(t, m, s.thread)
	}
	ids := func(ts []runs.Thread) []string {
		var out []string
		for _, th := range ts {
			out = append(out, th.ID)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		f    runs.ThreadFilter
		want []string
	}{
		{runs.ThreadFilter{}, []string{"a1", "l1", "l2"}},
		{runs.ThreadFilter{Graph: "linear"}, []string{"l1", "l2"}},
		{runs.ThreadFilter{Status: runs.StatusInterrupted}, []string{"a1"}},
		{runs.ThreadFilter{Status: runs.StatusIdle, Graph: "ask"}, nil},
	} {
		if got := ids(list(t, m, tc.f)); !slices.Equal(got, tc.want) {
			t.Errorf("ListThreads(%+v) = %v, want %v", tc.f, got, tc.want)
		}
	}
	all := list(t, m, runs.ThreadFilter{})
	if !all[0].Updated.After(all[2].Updated) && !all[0].Updated.Equal(all[2].Updated) {
		t.Errorf("threads not newest first: %+v", all)
	}
}

func TestNewManagerNeedsCheckpointers(t *testing.T) {
	t.Parallel()
	sg := engine.NewStateGraph[testState]()
	sg.AddNode("a", func(context.Context, testState) (engine.Output, error) { return nil, nil })
	sg.AddEdge(engine.Start, "a")
	g, err := sg.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runs.NewManager(map[string]engine.Compiled{"g": g}); err == nil {
		t.Fatal("a graph without a checkpointer was accepted")
	}
	if _, err := runs.NewManager(map[string]engine.Compiled{"bad name": linear(t, nil)}); err == nil {
		t.Fatal("a graph name with a space was accepted")
	}
}

// list is m.ListThreads for a test: a failure ends it.
func list(t *testing.T, m *runs.Manager, f runs.ThreadFilter) []runs.Thread {
	t.Helper()
	ts, err := m.ListThreads(context.Background(), f)
	if err != nil {
		t.Fatalf("ListThreads(%+v): %v", f, err)
	}
	return ts
}

// slowRegistry is a thread registry whose reads wait until their context
// ends (a database that stopped answering).
type slowRegistry struct{ runs.ThreadStore }

func (slowRegistry) GetThread(ctx context.Context, _ string) (runs.ThreadRecord, error) {
	<-ctx.Done()
	return runs.ThreadRecord{}, ctx.Err()
}

// Reading a thread the Manager does not hold asks the registry under the
// caller's context: a request that ends stops the read, instead of
// leaving it to run on its own timeout.
func TestRegistryReadsFollowTheCallersContext(t *testing.T) {
	t.Parallel()
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, nil)}, runs.WithThreadStore(slowRegistry{runs.NewMemoryThreads()}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, read := range map[string]func() error{
		"Thread":    func() error { _, err := m.Thread(ctx, "elsewhere"); return err },
		"Cancel":    func() error { return m.Cancel(ctx, "elsewhere") },
		"Subscribe": func() error { _, _, err := m.Subscribe(ctx, "elsewhere"); return err },
	} {
		if err := read(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with an ended context = %v, want context.Canceled", name, err)
		}
	}
}
