// Package enginetest is the part of the engine's conformance suite that
// depends on a checkpointer, written once and run on every
// checkpoints.Saver, in the manner of river's riverdrivertest. A saver's
// test calls
//
//	enginetest.Exercise(t, func(t *testing.T) checkpoints.Saver { ... })
//
// and Exercise runs each scenario as a parallel subtest on a saver of its
// own. The engine package runs it on the memory saver; the Postgres saver
// runs it on a fresh schema per scenario. A scenario that passes on one
// saver and fails on another points at a saver (or at engine code that
// relies on something one saver happens to do): the engine must behave the
// same whichever saver keeps its checkpoints.
//
// # What it covers
//
// The checkpointed cases of reference/langgraph-semantics.md §11: 4 (the
// waiting edge with a checkpointer), 7, 13, 14 (under each durability, as
// upstream), 15, 18, 19, 20, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34
// (subgraph namespaces and interrupts), 36 and 37 (under each
// durability), plus a human-approval flow, UpdateState's errors and a
// parent replay that keeps its subgraph's state. Each subtest's name
// starts with the case number it ports ("x" for scenarios that are not
// upstream cases).
//
// Not here: case 22 (parallel subgraph interrupts via Send), which the
// engine's own time-travel tests run on the memory saver only.
//
// Scenarios use their own thread ids (derived from the subtest's name), so
// they also pass on a saver shared by several scenarios; they must not
// rely on that, since a scenario may list every thread of its saver.
package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// Exercise runs every scenario of the suite as a parallel subtest.
// newSaver is called once per subtest and must return an empty saver; it
// may register cleanups on t.
func Exercise(t *testing.T, newSaver func(t *testing.T) checkpoints.Saver) {
	t.Helper()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			sc.run(t, newSaver(t))
		})
	}
}

// ScenarioCount returns the number of subtests Exercise runs.
func ScenarioCount() int { return len(scenarios) }

type scenario struct {
	name string
	run  func(t *testing.T, s checkpoints.Saver)
}

// scenarios is filled by the init functions of this package's files, one
// file per area of the engine.
var scenarios []scenario

func register(name string, run func(t *testing.T, s checkpoints.Saver)) {
	for _, sc := range scenarios {
		if sc.name == name {
			panic("enginetest: scenario " + name + " registered twice")
		}
	}
	scenarios = append(scenarios, scenario{name, run})
}

// durabilities are the three durability modes, named as upstream's.
var durabilities = []struct {
	name string
	d    engine.Durability
}{
	{"sync", engine.DurabilitySync},
	{"async", engine.DurabilityAsync},
	{"exit", engine.DurabilityExit},
}

// registerDurabilities registers one scenario per durability, for the
// cases upstream runs under each.
func registerDurabilities(name string, run func(t *testing.T, s checkpoints.Saver, d engine.Durability)) {
	for _, d := range durabilities {
		register(name+"/"+d.name, func(t *testing.T, s checkpoints.Saver) { run(t, s, d.d) })
	}
}

// thread returns a thread id that is unique to the running scenario, so
// scenarios never share a thread even on a shared saver.
func thread(t *testing.T, label string) string {
	return t.Name() + "#" + label
}

func ctx() context.Context { return context.Background() }

func mustCompile[S any](t *testing.T, g *engine.StateGraph[S], opts engine.CompileOptions) *engine.Graph[S] {
	t.Helper()
	cg, err := g.Compile(opts)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return cg
}

// interrupted returns the *engine.Interrupted err wraps, failing the test
// when it is something else.
func interrupted(t *testing.T, err error) *engine.Interrupted {
	t.Helper()
	var in *engine.Interrupted
	if !errors.As(err, &in) {
		t.Fatalf("err = %v, want *engine.Interrupted", err)
	}
	return in
}

// history lists a thread's root checkpoints straight from the saver,
// newest first.
func history(t *testing.T, saver checkpoints.Saver, thread string) []*checkpoints.Tuple {
	t.Helper()
	tups, err := saver.List(ctx(), checkpoints.ListQuery{ThreadID: thread}, checkpoints.ListOptions{})
	if err != nil {
		t.Fatalf("list checkpoints: %v", err)
	}
	return tups
}

// latest returns a thread's newest root checkpoint straight from the saver.
func latest(t *testing.T, saver checkpoints.Saver, thread string) *checkpoints.Tuple {
	t.Helper()
	tup, err := saver.Get(ctx(), checkpoints.Config{ThreadID: thread})
	if err != nil {
		t.Fatalf("get checkpoint: %v", err)
	}
	if tup == nil {
		t.Fatalf("thread %q has no checkpoint", thread)
	}
	return tup
}

// stateHistory lists a thread's snapshots through the graph, newest first.
func stateHistory[S any](t *testing.T, g *engine.Graph[S], thread string) []*engine.StateSnapshot {
	t.Helper()
	hist, err := g.GetStateHistory(ctx(), checkpoints.Config{ThreadID: thread}, engine.HistoryOptions{})
	if err != nil {
		t.Fatalf("state history: %v", err)
	}
	return hist
}

// snapshotWithNext returns the oldest snapshot of the thread whose next
// tasks are exactly next.
func snapshotWithNext[S any](t *testing.T, g *engine.Graph[S], thread string, next ...string) *engine.StateSnapshot {
	t.Helper()
	var found *engine.StateSnapshot
	for _, h := range stateHistory(t, g, thread) {
		if slices.Equal(h.Next, next) {
			found = h
		}
	}
	if found == nil {
		t.Fatalf("thread %q has no checkpoint with next %v", thread, next)
	}
	return found
}

// decoded turns a stored JSON value into its generic Go form (numbers as
// float64), for comparisons that do not depend on the encoder's spacing.
func decoded(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("stored value %s is not JSON: %v", raw, err)
	}
	return v
}

func decodedValues(t *testing.T, tup *checkpoints.Tuple) map[string]any {
	t.Helper()
	out := map[string]any{}
	for k, raw := range tup.Checkpoint.ChannelValues {
		out[k] = decoded(t, raw)
	}
	return out
}

// pendingByTask gives a checkpoint's pending writes as "channel=value"
// strings grouped by task, the order within a task kept.
func pendingByTask(t *testing.T, tup *checkpoints.Tuple) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, pw := range tup.PendingWrites {
		out[pw.TaskID] = append(out[pw.TaskID], fmt.Sprintf("%s=%v", pw.Channel, decoded(t, pw.Value)))
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// recorder collects a run's events. The engine serialises listener calls,
// but the mutex keeps the recorder safe to read from the test goroutine.
type recorder struct {
	mu     sync.Mutex
	events []engine.Event
}

func (r *recorder) listen(e engine.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// eventsOf returns the recorded events of type E, in order.
func eventsOf[E engine.Event](r *recorder) []E {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []E
	for _, e := range r.events {
		if x, ok := e.(E); ok {
			out = append(out, x)
		}
	}
	return out
}

// finishedOf returns the TaskFinished events of the named node.
func finishedOf(r *recorder, name string) []engine.TaskFinished {
	var out []engine.TaskFinished
	for _, f := range eventsOf[engine.TaskFinished](r) {
		if f.Task.Name == name {
			out = append(out, f)
		}
	}
	return out
}

// collect drains a stream, failing the test on an error part.
func collect[S any](t *testing.T, g *engine.Graph[S], in any, opts *engine.RunOptions, modes ...engine.StreamMode) []engine.StreamPart {
	t.Helper()
	var parts []engine.StreamPart
	for p, err := range g.Stream(ctx(), in, opts, modes...) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		parts = append(parts, p)
	}
	return parts
}
