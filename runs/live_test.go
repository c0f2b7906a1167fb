package runs_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
)

type edgeState struct {
	Log []string `json:"log" reduce:"append"`
	Big string   `json:"big"`
	N   int      `json:"n"`
}

// edgeKinds has one edge of every kind the StateGraph compiles:
//
//	START → a (plain, from the input)
//	a → b, a → c (a router without a path map)
//	a → w twice (Sends)
//	b + c → d (a join)
//	b → fin (fin is deferred: it runs once the run goes quiet)
//	fin → tail (Command goto)
//	tail → last (plain, node to node)
func edgeKinds(t *testing.T) engine.Compiled {
	t.Helper()
	sg := engine.NewStateGraph[edgeState]()
	logs := func(name string) func(context.Context, edgeState) (engine.Output, error) {
		return func(context.Context, edgeState) (engine.Output, error) { return engine.Update{"log": name}, nil }
	}
	sg.AddNode("a", func(_ context.Context, s edgeState) (engine.Output, error) {
		return engine.Update{"log": "a", "n": s.N + 1, "big": strings.Repeat("x", 3*runs.ValuePreviewBytes)}, nil
	})
	sg.AddNode("b", logs("b"))
	sg.AddNode("c", logs("c"))
	sg.AddNode("d", logs("d"))
	engine.AddNodeFunc(sg, "w", func(_ context.Context, arg string) (engine.Output, error) {
		return engine.Update{"log": "w" + arg}, nil
	})
	sg.AddNode("fin", func(context.Context, edgeState) (engine.Output, error) {
		return engine.Command{Update: engine.Update{"log": "fin"}, Goto: []any{"tail"}}, nil
	}, engine.Defer(), engine.Destinations("tail"))
	sg.AddNode("tail", logs("tail"))
	sg.AddNode("last", logs("last"))
	sg.AddEdge(engine.Start, "a")
	sg.AddConditionalEdges("a", func(context.Context, edgeState) (engine.Route, error) {
		r := engine.To("b", "c")
		r.Sends = []engine.Send{{Node: "w", Arg: "1"}, {Node: "w", Arg: "2"}}
		return r, nil
	}, nil)
	sg.AddJoin([]string{"b", "c"}, "d")
	sg.AddEdge("b", "fin")
	sg.AddEdge("d", engine.End)
	sg.AddEdge("tail", "last")
	sg.AddEdge("last", engine.End)
	g, err := sg.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// untilFinished reads live events until run_finished.
func untilFinished(t *testing.T, sub *runs.Subscription) []runs.Event {
	t.Helper()
	var out []runs.Event
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				t.Fatal("subscription closed before the run finished")
			}
			out = append(out, *ev)
			if ev.Kind == runs.KindRunFinished {
				return out
			}
		case <-timeout:
			t.Fatal("no run_finished event")
		}
	}
}

// edgesByNode lists, per node, the edges its planned tasks carry in the
// last run of evs, as "from→to", sorted.
func edgesByNode(evs []runs.Event) map[string][]string {
	out := map[string][]string{}
	for _, ev := range evs {
		if ev.Kind == runs.KindRunStarted {
			clear(out)
		}
		if ev.Kind != runs.KindTaskPlanned {
			continue
		}
		for _, e := range ev.Edges {
			s := e[0] + "→" + e[1]
			if !slices.Contains(out[ev.Node], s) {
				out[ev.Node] = append(out[ev.Node], s)
			}
		}
		if _, ok := out[ev.Node]; !ok {
			out[ev.Node] = nil
		}
		sort.Strings(out[ev.Node])
	}
	return out
}

// The edges that caused each task, for every kind of edge, both as the
// run streams them and as a catch-up rebuilds them from checkpoints.
func TestFiredEdgesOfEveryEdgeKind(t *testing.T) {
	t.Parallel()
	m := manager(t, map[string]engine.Compiled{"kinds": edgeKinds(t)})
	ctx := context.Background()
	if _, err := m.Start(ctx, "kinds", "e", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, m, "e")
	_, sub, err := m.Subscribe(ctx, "e")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := m.Start(ctx, "kinds", "e", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	live := edgesByNode(untilFinished(t, sub))
	g, _ := m.Graph("kinds")
	catchup, err := runs.Catchup(ctx, g, "e")
	if err != nil {
		t.Fatal(err)
	}
	rebuilt := edgesByNode(catchup)
	for _, tc := range []struct {
		kind, node string
		want       []string
	}{
		{"plain from the input", "a", []string{"__start__→a"}},
		{"conditional", "b", []string{"a→b"}},
		{"conditional", "c", []string{"a→c"}},
		{"Send", "w", []string{"a→w"}},
		{"join", "d", []string{"b→d", "c→d"}},
		{"deferred", "fin", []string{"b→fin"}},
		{"Command goto", "tail", []string{"fin→tail"}},
		{"plain", "last", []string{"tail→last"}},
	} {
		if got := live[tc.node]; !slices.Equal(got, tc.want) {
			t.Errorf("%s edge: live edges of %s = %v, want %v", tc.kind, tc.node, got, tc.want)
		}
		if got := rebuilt[tc.node]; !slices.Equal(got, tc.want) {
			t.Errorf("%s edge: catch-up edges of %s = %v, want %v", tc.kind, tc.node, got, tc.want)
		}
	}
}

// panel is what a thread page shows, folded from events the way the
// page's script applies them.
type panel struct {
	values  map[string]string // key → previewed JSON
	changed []string          // keys marked as changed by the last step
	fired   []string          // edges fired in the last run
	tasks   map[string]string // step-task → status
}

func foldPanel(evs []runs.Event) panel {
	p := panel{values: map[string]string{}, tasks: map[string]string{}}
	for _, ev := range evs {
		switch ev.Kind {
		case runs.KindRunStarted:
			p.fired = nil
		case runs.KindCheckpoint:
			p.changed = nil
			if ev.Reset {
				clear(p.values)
			}
			for _, c := range ev.Values {
				if c.Op == runs.OpRemoved {
					delete(p.values, c.Key)
					continue
				}
				p.values[c.Key] = c.JSON
				if c.Op != "" {
					p.changed = append(p.changed, c.Key)
				}
			}
			sort.Strings(p.changed)
		case runs.KindTaskPlanned, runs.KindTaskFinished, runs.KindTaskFailed, runs.KindTaskInterrupted:
			p.tasks[fmt.Sprint(ev.Step, "-", ev.TaskID)] = string(ev.Kind)
			for _, e := range ev.Edges {
				if s := e[0] + "→" + e[1]; !slices.Contains(p.fired, s) {
					p.fired = append(p.fired, s)
				}
			}
		}
	}
	sort.Strings(p.fired)
	return p
}

// A tab that watched a run live ends with the same page as a tab that
// opens (or reloads) after it: values, changed marks, fired edges and
// task outcomes.
func TestLiveAndCatchupEndTheSame(t *testing.T) {
	t.Parallel()
	m := manager(t, map[string]engine.Compiled{"kinds": edgeKinds(t), "ask": approvals(t, false)})
	ctx := context.Background()
	for _, tc := range []struct {
		graph string
		input map[string]any
	}{
		{"kinds", map[string]any{"n": 1}},
		{"ask", map[string]any{"n": 2}}, // stops at an interrupt
	} {
		thread := "same-" + tc.graph
		if _, err := m.Start(ctx, tc.graph, thread, nil, runs.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		if th := wait(t, m, thread); th.Status == runs.StatusInterrupted {
			if _, err := m.Resume(ctx, thread, true); err != nil {
				t.Fatal(err)
			}
			wait(t, m, thread)
		}
		first, sub, err := m.Subscribe(ctx, thread)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Start(ctx, tc.graph, thread, tc.input, runs.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		watched := foldPanel(append(first, untilFinished(t, sub)...))
		sub.Close()
		wait(t, m, thread)
		reloaded, _, err := m.History(ctx, thread)
		if err != nil {
			t.Fatal(err)
		}
		opened := foldPanel(reloaded)
		if !maps.Equal(watched.values, opened.values) {
			t.Errorf("%s: values watched live %v, after reload %v", tc.graph, watched.values, opened.values)
		}
		if !slices.Equal(watched.changed, opened.changed) || len(opened.changed) == 0 {
			t.Errorf("%s: changed keys watched live %v, after reload %v (want the same, not none)", tc.graph, watched.changed, opened.changed)
		}
		if !slices.Equal(watched.fired, opened.fired) || len(opened.fired) == 0 {
			t.Errorf("%s: fired edges watched live %v, after reload %v (want the same, not none)", tc.graph, watched.fired, opened.fired)
		}
		for k, v := range opened.tasks {
			if watched.tasks[k] != v {
				t.Errorf("%s: task %s is %s after reload, %q live", tc.graph, k, v, watched.tasks[k])
			}
		}
	}
}

// A step's values event carries only the keys it changed, each cut to
// ValuePreviewBytes with its full size; unchanged keys are not sent.
func TestValuesEventsCarryOnlyChangedKeysPreviewed(t *testing.T) {
	t.Parallel()
	m := manager(t, map[string]engine.Compiled{"kinds": edgeKinds(t)})
	ctx := context.Background()
	if _, err := m.Start(ctx, "kinds", "v", map[string]any{"n": 5}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, m, "v")
	_, sub, err := m.Subscribe(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := m.Start(ctx, "kinds", "v", map[string]any{"n": 5}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	var sawBig, sawLogOnly bool
	for _, ev := range untilFinished(t, sub) {
		if ev.Kind != runs.KindCheckpoint {
			continue
		}
		if ev.Reset {
			t.Fatalf("a live step sent the whole state: %+v", ev)
		}
		keys := []string{}
		for _, c := range ev.Values {
			keys = append(keys, c.Key)
			if c.Key == "big" {
				sawBig = true
				full := strings.Repeat("x", 3*runs.ValuePreviewBytes)
				want, _ := runs.Preview(full, runs.ValuePreviewBytes)
				if !c.Truncated || c.JSON != want || c.Size != len(full)+2 || c.Op != runs.OpChanged {
					t.Errorf("big = %d bytes, truncated %v, size %d, op %q; want the page's preview, cut, size %d, changed", len(c.JSON), c.Truncated, c.Size, c.Op, len(full)+2)
				}
			}
		}
		if slices.Equal(keys, []string{"log"}) {
			sawLogOnly = true
		}
	}
	if !sawBig || !sawLogOnly {
		t.Fatalf("saw big changed %v, a step that changed only log %v", sawBig, sawLogOnly)
	}
}

// Reloading the page after a run in the same process keeps what only
// live events know: durations and attempts.
func TestHistoryKeepsLiveDurations(t *testing.T) {
	t.Parallel()
	// b is held for at least a millisecond, so its duration cannot round
	// to zero (a takes well under a microsecond, and may).
	gate := newGates()
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, gate)})
	ctx := context.Background()
	if _, err := m.Start(ctx, "linear", "d", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	<-gate.entered
	for held := time.Now(); time.Since(held) < time.Millisecond; {
		runtime.Gosched()
	}
	close(gate.release)
	wait(t, m, "d")
	g, _ := m.Graph("linear")
	plain, err := runs.Catchup(ctx, g, "d")
	if err != nil {
		t.Fatal(err)
	}
	evs, cursor, err := m.History(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	if cursor == "" {
		t.Fatal("History returned no cursor")
	}
	finished := 0
	for i, ev := range evs {
		if ev.Kind != runs.KindTaskFinished {
			continue
		}
		finished++
		if ev.DurationMS < 0 || (ev.Node == "b" && ev.DurationMS < 1) || ev.Attempt != 1 || !ev.Catchup {
			t.Errorf("after reload, %s finished: %+v; want its live duration (b: at least 1 ms) and 1 attempt", ev.Node, ev)
		}
		if plain[i].DurationMS != 0 {
			t.Errorf("checkpoints alone claim a duration for %s", ev.Node)
		}
	}
	if finished != 2 {
		t.Fatalf("history has %d finished tasks, want a and b", finished)
	}
}

// A tab resuming after a cursor gets only the live events after it; a
// cursor from elsewhere gets the full catch-up; a malformed one is an
// error.
func TestSubscribeFromResumesAfterTheCursor(t *testing.T) {
	t.Parallel()
	m := manager(t, map[string]engine.Compiled{"linear": linear(t, nil)})
	ctx := context.Background()
	if _, err := m.Start(ctx, "linear", "r", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, m, "r")
	_, cursor, err := m.History(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Start(ctx, "linear", "r", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(t, m, "r")
	evs, sub, err := m.SubscribeFrom(ctx, "r", cursor)
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	if len(evs) < 2 || evs[0].Kind != runs.KindRunStarted || evs[0].Catchup || evs[len(evs)-1].Kind != runs.KindCaughtUp {
		t.Fatalf("resume after the cursor = %+v; want the second run's live events, then caught_up", evs)
	}
	runs2 := 0
	for _, ev := range evs {
		if ev.Kind == runs.KindRunStarted {
			runs2++
		}
		if ev.Catchup && ev.Kind != runs.KindCaughtUp {
			t.Fatalf("a checkpoint catch-up event in a resume: %+v", ev)
		}
	}
	if runs2 != 1 {
		t.Fatalf("resume replays %d runs, want only the one after the cursor", runs2)
	}
	last := evs[len(evs)-1].Cursor
	again, sub, err := m.SubscribeFrom(ctx, "r", last)
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	if len(again) != 1 || again[0].Kind != runs.KindCaughtUp {
		t.Fatalf("resume at the newest cursor = %+v; want only caught_up", again)
	}
	full, sub, err := m.SubscribeFrom(ctx, "r", "zzz:3")
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	if !full[0].Catchup || full[0].Kind != runs.KindRunStarted {
		t.Fatalf("a foreign cursor got %+v; want the full catch-up", full[0])
	}
	if _, _, err := m.SubscribeFrom(ctx, "r", "no-seq"); !errors.Is(err, runs.ErrInvalidInput) {
		t.Fatalf("malformed cursor: %v, want ErrInvalidInput", err)
	}
}

// The tree page's next tasks, inferred from checkpoint headers, match the
// engine's own plan for every checkpoint it says it can tell.
func TestNextIndexMatchesTheEngine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		g    engine.Compiled
		// sends is how many checkpoints plan Sends (not inferable).
		sends int
	}{
		{"every edge kind", edgeKinds(t), 1},
		{"linear", linear(t, nil), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := manager(t, map[string]engine.Compiled{"g": tc.g})
			ctx := context.Background()
			if _, err := m.Start(ctx, "g", "n", nil, runs.StartOptions{}); err != nil {
				t.Fatal(err)
			}
			wait(t, m, "n")
			p := tc.g.Pregel()
			tups, err := p.Checkpointer().List(ctx, checkpoints.ListQuery{ThreadID: "n"}, checkpoints.ListOptions{MetadataOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			idx := runs.NewNextIndex(tc.g)
			inexact := 0
			for _, tup := range tups {
				got, exact := idx.Next(tup.Checkpoint)
				snap, err := p.GetState(ctx, checkpoints.Config{ThreadID: "n", CheckpointID: tup.Config.CheckpointID})
				if err != nil {
					t.Fatal(err)
				}
				if !exact {
					inexact++
					continue
				}
				if !slices.Equal(got, snap.Next) {
					t.Errorf("step %d: inferred next %v, engine plans %v", tup.Metadata.Step, got, snap.Next)
				}
			}
			if inexact != tc.sends {
				t.Errorf("%d checkpoints could not be inferred, want %d (those with Sends)", inexact, tc.sends)
			}
			known := m.KnownNext("n")
			for _, tup := range tups {
				snap, _ := p.GetState(ctx, checkpoints.Config{ThreadID: "n", CheckpointID: tup.Config.CheckpointID})
				if next, ok := known[tup.Config.CheckpointID]; !ok || !slices.Equal(next, snap.Next) && len(next)+len(snap.Next) > 0 {
					t.Errorf("step %d: live events announced next %v (%v), engine plans %v", tup.Metadata.Step, next, ok, snap.Next)
				}
			}
		})
	}
}
