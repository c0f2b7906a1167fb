package runs_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/researchsubgraph"
	"github.com/superstep-dev/superstep/runs"
)

// researchManager runs the researchsubgraph example: a question that
// weighs options goes to the research subgraph (plan, search, review,
// summarise), which stops at review for a person.
func researchManager(t *testing.T) *runs.Manager {
	t.Helper()
	g, err := researchsubgraph.New(researchsubgraph.Options{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	return manager(t, map[string]engine.Compiled{"research": g})
}

const compareQuestion = "Compare Postgres and SQLite for a multi-user web app"

// label names a task event as "kind path:node" (or "kind node" at the top).
func label(ev runs.Event) string {
	if ev.Path != "" {
		return string(ev.Kind) + " " + ev.Path + ":" + ev.Node
	}
	return string(ev.Kind) + " " + ev.Node
}

// subgraphLeak reports an event that shows the subgraph's own channels or
// state as if they were the thread graph's: the research subgraph's plan
// and findings never cross its boundary.
func subgraphLeak(ev runs.Event) string {
	inner := func(s string) bool { return s == "queries" || s == "findings" || s == "searched" || s == "approved" }
	for _, b := range ev.Bumps {
		if inner(b.Channel) {
			return "a barrier bumps the subgraph's channel " + b.Channel
		}
	}
	for _, v := range ev.Values {
		if inner(v.Key) {
			return "a checkpoint shows the subgraph's key " + v.Key
		}
	}
	return ""
}

// A subgraph's task events carry its path, so a page lights the nodes of
// the expanded subgraph; its barriers and checkpoints stay out of the
// thread's channels and values. Live, and in the catch-up a page is
// rendered from, where they follow the thread graph's research task.
func TestSubgraphTaskEventsCarryTheirPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := researchManager(t)
	if _, err := m.Start(ctx, "research", "compare", map[string]any{"question": compareQuestion}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if th := wait(t, m, "compare"); th.Status != runs.StatusInterrupted {
		t.Fatalf("thread %+v, want it waiting at review", th)
	}

	catchup, sub, err := m.Subscribe(ctx, "compare")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var got []string
	for _, ev := range catchup {
		if leak := subgraphLeak(ev); leak != "" {
			t.Errorf("catch-up: %s: %+v", leak, ev)
		}
		if strings.HasPrefix(string(ev.Kind), "task_") {
			got = append(got, label(ev))
		}
	}
	// The subgraph's tasks come right after the research task is planned.
	at := slices.Index(got, "task_planned research")
	if at < 0 {
		t.Fatalf("catch-up tasks %q: research is not planned", got)
	}
	for _, want := range []string{"task_finished research:plan", "task_finished research:search", "task_interrupted research:review"} {
		i := slices.Index(got, want)
		if i < at {
			t.Errorf("catch-up tasks %q: want %q after research is planned", got, want)
		}
	}

	if _, err := m.Resume(ctx, "compare", "yes"); err != nil {
		t.Fatal(err)
	}
	var live []string
	for e := range sub.C {
		ev := *e
		if leak := subgraphLeak(ev); leak != "" {
			t.Errorf("live: %s: %+v", leak, ev)
		}
		if ev.Path != "" && ev.Kind == runs.KindTaskPlanned && len(ev.Edges) > 0 {
			t.Errorf("live: subgraph task %s carries the thread graph's edges %v", label(ev), ev.Edges)
		}
		if strings.HasPrefix(string(ev.Kind), "task_") {
			live = append(live, label(ev))
		}
		if ev.Kind == runs.KindRunFinished {
			break
		}
	}
	for _, want := range []string{"task_started research", "task_finished research:review", "task_finished research:summarise", "task_finished research"} {
		if !slices.Contains(live, want) {
			t.Errorf("live tasks %q lack %q", live, want)
		}
	}
	if slices.Index(live, "task_finished research:summarise") > slices.Index(live, "task_finished research") {
		t.Errorf("live tasks %q: the subgraph finished after the research task", live)
	}
}
