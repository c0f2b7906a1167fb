package runs_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
)

// history lists the thread's checkpoints newest first.
func history(t *testing.T, m *runs.Manager, graph, thread string) []*engine.StateSnapshot {
	t.Helper()
	g, err := m.Graph(graph)
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Pregel().GetStateHistory(context.Background(), checkpoints.Config{ThreadID: thread}, engine.HistoryOptions{MetadataOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestUpdateStateForksAnOlderCheckpoint(t *testing.T) {
	t.Parallel()
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, nil)})
	if _, err := m.Start(context.Background(), "linear", "th", map[string]any{"n": 1}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, m, "th")
	h := history(t, m, "linear", "th")
	// Newest first: the checkpoint before "a" ran is the one at step 0.
	var old *engine.StateSnapshot
	for _, s := range h {
		if s.Metadata.Step == 0 {
			old = s
		}
	}
	if old == nil {
		t.Fatalf("no step-0 checkpoint in %d", len(h))
	}
	sub, _ := subscribe(t, m, "th")
	id, err := m.UpdateState(context.Background(), "th", old.Config.CheckpointID, map[string]any{"n": 42.0}, "a")
	if err != nil {
		t.Fatal(err)
	}
	g, _ := m.Graph("linear")
	s, err := g.Pregel().GetState(context.Background(), checkpoints.Config{ThreadID: "th", CheckpointID: id})
	if err != nil {
		t.Fatal(err)
	}
	if s.ParentConfig == nil || s.ParentConfig.CheckpointID != old.Config.CheckpointID || s.Metadata.Source != checkpoints.SourceUpdate {
		t.Fatalf("the edit is not a child of the edited checkpoint: parent %v, source %s", s.ParentConfig, s.Metadata.Source)
	}
	if s.Values["n"] != 42 {
		t.Fatalf("n = %#v, want 42 converted to int", s.Values["n"])
	}
	if head := state(t, m, "linear", "th"); head["n"] != 42 {
		t.Fatalf("the head is not the fork: %v", head)
	}
	ev := <-sub.C
	if ev.Kind != runs.KindBarrier && ev.Kind != runs.KindCheckpoint {
		t.Fatalf("open tabs got %s, want the edit's barrier or checkpoint", ev.Kind)
	}
}

func TestUpdateStateRefusesBadInput(t *testing.T) {
	t.Parallel()
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, nil)})
	if _, err := m.Start(context.Background(), "linear", "th", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, m, "th")
	before := len(history(t, m, "linear", "th"))
	for _, tc := range []struct {
		name   string
		thread string
		ckpt   string
		values map[string]any
		asNode string
		want   error
	}{
		{"wrong type", "th", "", map[string]any{"n": "many"}, "a", runs.ErrInvalidInput},
		{"unknown key", "th", "", map[string]any{"nope": 1}, "a", runs.ErrInvalidInput},
		{"unknown node", "th", "", map[string]any{"n": 1}, "ghost", runs.ErrInvalidInput},
		{"start is no node to update as", "th", "", map[string]any{"n": 1}, engine.Start, runs.ErrInvalidInput},
		{"unknown checkpoint", "th", "1f000000-0000-7000-8000-000000000000", map[string]any{"n": 1}, "a", runs.ErrUnknownCheckpoint},
		{"unknown thread", "ghost", "", map[string]any{"n": 1}, "a", runs.ErrUnknownThread},
	} {
		_, err := m.UpdateState(context.Background(), tc.thread, tc.ckpt, tc.values, tc.asNode)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if after := len(history(t, m, "linear", "th")); after != before {
		t.Fatalf("refused updates wrote checkpoints: %d → %d", before, after)
	}
}

func TestUpdateStateAndRunFromAreRefusedWhileRunning(t *testing.T) {
	t.Parallel()
	g := newGates()
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, g)})
	if _, err := m.Start(context.Background(), "linear", "th", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	<-g.entered
	if _, err := m.UpdateState(context.Background(), "th", "", map[string]any{"n": 1}, "a"); !errors.Is(err, runs.ErrThreadBusy) {
		t.Errorf("update while running: %v, want ErrThreadBusy", err)
	}
	if _, err := m.RunFrom(context.Background(), "th", ""); !errors.Is(err, runs.ErrThreadBusy) {
		t.Errorf("run from head while running: %v, want ErrThreadBusy", err)
	}
	close(g.release)
	wait(t, m, "th")
}

func TestRunFromAnOlderCheckpointRunsItsTasksAgain(t *testing.T) {
	t.Parallel()
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, nil)})
	if _, err := m.Start(context.Background(), "linear", "th", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, m, "th")
	var beforeB string
	for _, s := range history(t, m, "linear", "th") {
		if s.Metadata.Step == 1 { // after a, before b
			beforeB = s.Config.CheckpointID
		}
	}
	sub, _ := subscribe(t, m, "th")
	if _, err := m.RunFrom(context.Background(), "th", beforeB); err != nil {
		t.Fatal(err)
	}
	got := collect(t, sub)
	if !containsAll(got, "task_finished:b", "status:idle") || containsAll(got, "task_finished:a") {
		t.Fatalf("re-run events = %v; want b to run again and a not", got)
	}
	if v := state(t, m, "linear", "th"); fmt.Sprint(v["log"]) != "[a b]" {
		t.Fatalf("log after re-running b = %v, want [a b] (the fork starts before b wrote)", v["log"])
	}
	if _, err := m.RunFrom(context.Background(), "th", "1f000000-0000-7000-8000-000000000000"); !errors.Is(err, runs.ErrUnknownCheckpoint) {
		t.Fatalf("unknown checkpoint: %v", err)
	}
}

func subscribe(t *testing.T, m *runs.Manager, thread string) (*runs.Subscription, []runs.Event) {
	t.Helper()
	catchup, sub, err := m.Subscribe(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	return sub, catchup
}

func containsAll(list []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, s := range list {
			if s == w {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
