package examples_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples"
	"github.com/superstep-dev/superstep/examples/memoryagent"
	"github.com/superstep-dev/superstep/store"
)

// The registry names are part of the Studio's URLs; changing one breaks
// links, so the list is spelled out here.
var wantNames = []string{
	"cached-lookup", "cve-agent", "cve-assessment", "cve-assessment-plain-fanin", "flaky-service",
	"map-reduce", "memory-agent", "pregel-lowlevel", "research-subgraph", "transfer-approval",
}

func TestAllCompilesEveryExample(t *testing.T) {
	t.Parallel()
	saver := checkpoints.NewMemory()
	all, err := examples.All(examples.Options{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	slices.Sort(names)
	if !slices.Equal(names, wantNames) {
		t.Fatalf("registry names = %v\nwant             %v", names, wantNames)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := all[name]
			if g == nil || g.Pregel() == nil {
				t.Fatal("not compiled")
			}
			if g.Pregel().Checkpointer() != saver {
				t.Error("the checkpointer was not passed through")
			}
			if g.ZeroState() == nil {
				t.Error("no zero state for the start-run form")
			}
			var nodes []string
			for _, n := range g.Topology().Nodes {
				if n.Name != engine.Start && n.Name != engine.End {
					nodes = append(nodes, n.Name)
				}
			}
			if len(nodes) == 0 {
				t.Fatalf("topology %+v has no node of its own", g.Topology())
			}
			for _, n := range nodes {
				if !slices.Contains(g.Pregel().NodeNames(), n) {
					t.Errorf("topology node %q is not a node of the compiled graph %v", n, g.Pregel().NodeNames())
				}
			}
			// Only the plain fan-in variant exists to show a warning.
			ws := g.Warnings()
			if name != examples.CVEAssessmentPlainFanIn {
				if len(ws) != 0 {
					t.Fatalf("unexpected lint warnings: %v", ws)
				}
				return
			}
			if len(ws) == 0 {
				t.Fatal("the plain fan-in variant has no lint warning")
			}
			for _, w := range ws {
				if w.Kind != engine.WarnFanIn || !strings.Contains(w.Suggestion, "AddJoin") {
					t.Errorf("warning %v, want a fan-in warning suggesting AddJoin", w)
				}
			}
		})
	}
}

// Every example compiles without any backend too.
func TestAllWithoutBackends(t *testing.T) {
	t.Parallel()
	all, err := examples.All(examples.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(wantNames) {
		t.Fatalf("%d examples, want %d", len(all), len(wantNames))
	}
	for name, g := range all {
		if g.Pregel().Checkpointer() != nil {
			t.Errorf("%s has a checkpointer nobody gave it", name)
		}
	}
}

// The store and the cache given to All are the ones the examples use:
// memory-agent remembers into the given store, cached-lookup caches into
// the given cache.
func TestAllPassesStoreAndCacheThrough(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := memoryagent.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	c := cache.NewMemory(nil)
	all, err := examples.All(examples.Options{Store: st, Cache: c})
	if err != nil {
		t.Fatal(err)
	}

	if _, err := all[examples.MemoryAgent].Pregel().Invoke(ctx, memoryagent.Remember("ana", "I drive a blue electric car."), nil); err != nil {
		t.Fatal(err)
	}
	items, err := store.Search(ctx, st, store.SearchOp{NamespacePrefix: memoryagent.Namespace("ana")})
	if err != nil || len(items) != 1 {
		t.Fatalf("given store holds %v, %v; want the remembered fact", items, err)
	}

	if _, err := all[examples.CachedLookup].Pregel().Invoke(ctx, map[string]any{"pair": "EUR/USD", "amount": 10.0}, nil); err != nil {
		t.Fatal(err)
	}
	entries, err := c.List(ctx, "", 0)
	if err != nil || len(entries) != 1 {
		t.Fatalf("given cache holds %v, %v; want the looked-up rate", entries, err)
	}
}

// The low-level example runs from the JSON object a form sends.
func TestLowLevelExampleRunsFromAForm(t *testing.T) {
	t.Parallel()
	all, err := examples.All(examples.Options{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	g := all[examples.PregelLowLevel].Pregel()
	out, err := g.Invoke(context.Background(), map[string]any{"input": float64(123)}, &engine.RunOptions{ThreadID: "form"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"foo": "123", "bar": 456, "baz": 579}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("output %v, want %v", out, want)
	}
}

// Every example declares an input the Studio's start form can send as it
// is: after the trip through JSON (the form's textarea), a run from a
// fresh thread reaches the end or an interrupt without error.
func TestEveryExampleRunsFromItsInput(t *testing.T) {
	t.Parallel()
	exs := examples.Examples()
	var names []string
	for _, e := range exs {
		names = append(names, e.Name)
	}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("examples = %v\nwant       %v", names, wantNames)
	}
	for _, e := range exs {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			if len(e.Input) == 0 {
				t.Fatal("no example input")
			}
			b, err := json.Marshal(e.Input)
			if err != nil {
				t.Fatal(err)
			}
			var input map[string]any
			if err := json.Unmarshal(b, &input); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(input, e.Input) {
				t.Fatalf("the input changes on its way through JSON:\n%#v\nbecomes\n%#v", e.Input, input)
			}
			g, err := e.Build(examples.Options{Checkpointer: checkpoints.NewMemory()})
			if err != nil {
				t.Fatal(err)
			}
			_, err = g.Pregel().Invoke(context.Background(), input, &engine.RunOptions{ThreadID: "try-" + e.Name})
			var intr *engine.Interrupted
			if err != nil && !errors.As(err, &intr) {
				t.Fatalf("run from %s: %v", b, err)
			}
			st, err := g.Pregel().GetState(context.Background(), checkpoints.Config{ThreadID: "try-" + e.Name})
			if err != nil {
				t.Fatal(err)
			}
			if intr == nil && len(st.Next) != 0 {
				t.Fatalf("the run stopped before the end without an interrupt: next %v", st.Next)
			}
			if intr != nil && len(intr.Interrupts) == 0 {
				t.Fatal("an interrupt error without interrupts")
			}
		})
	}
}

// cve-agent's input runs on the offline model (no Model given) to the
// review: its score is above 9.0.
func TestCVEAgentInputStopsAtTheReview(t *testing.T) {
	t.Parallel()
	var ex examples.Example
	for _, e := range examples.Examples() {
		if e.Name == examples.CVEAgent {
			ex = e
		}
	}
	g, err := ex.Build(examples.Options{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Pregel().Invoke(context.Background(), ex.Input, &engine.RunOptions{ThreadID: "cve-agent"})
	var intr *engine.Interrupted
	if !errors.As(err, &intr) || len(intr.Interrupts) != 1 || intr.Interrupts[0].Node != "review" {
		t.Fatalf("want the review's interrupt, got %v", err)
	}
}
