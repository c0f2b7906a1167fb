package engine_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/engine"
)

type logState struct {
	Log []string `json:"log" reduce:"append"`
}

func logNode(name string) func(context.Context, logState) (engine.Output, error) {
	return func(context.Context, logState) (engine.Output, error) {
		return engine.Update{"log": name}, nil
	}
}

// fanIn builds reference §11 case 3: START→a, START→b1→b2, a→c, b2→c.
func fanIn(t *testing.T, join, deferC bool) *engine.Graph[logState] {
	t.Helper()
	g := engine.NewStateGraph[logState]()
	var copts []engine.NodeOption
	if deferC {
		copts = append(copts, engine.Defer())
	}
	g.AddNode("a", logNode("a")).AddNode("b1", logNode("b1")).AddNode("b2", logNode("b2")).AddNode("c", logNode("c"), copts...)
	g.AddEdge(engine.Start, "a").AddEdge(engine.Start, "b1").AddEdge("b1", "b2")
	if join {
		g.AddJoin([]string{"a", "b2"}, "c")
	} else {
		g.AddEdge("a", "c").AddEdge("b2", "c")
	}
	g.AddEdge("c", engine.End)
	cg, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cg
}

func TestFanInUnevenPaths(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		join, deferred bool
		want           []string
		wantWarning    bool
	}{
		{"plain edges run c twice", false, false, []string{"a", "b1", "b2", "c", "c"}, true},
		{"join runs c once", true, false, []string{"a", "b1", "b2", "c"}, false},
		{"defer runs c once, last", false, true, []string{"a", "b1", "b2", "c"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := fanIn(t, tc.join, tc.deferred)
			got, err := g.Invoke(context.Background(), engine.Update{"log": []string{}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			// The list is in barrier order: a and b1 in step 1 (by name).
			if !slices.Equal(got.Log, tc.want) {
				t.Fatalf("log = %v, want %v", got.Log, tc.want)
			}
			ws := g.Warnings()
			hasC := slices.ContainsFunc(ws, func(w engine.Warning) bool { return w.Node == "c" && strings.Contains(w.Cause, "fan-in") })
			if hasC != tc.wantWarning {
				t.Fatalf("lint warnings %v: fan-in warning on c = %v, want %v", ws, hasC, tc.wantWarning)
			}
		})
	}
}

type counter struct {
	N int `json:"n"`
}

func countTo(t testing.TB, limit int) *engine.Graph[counter] {
	g := engine.NewStateGraph[counter]()
	g.AddNode("inc", func(_ context.Context, s counter) (engine.Output, error) {
		return engine.Update{"n": s.N + 1}, nil
	})
	g.AddEdge(engine.Start, "inc")
	g.AddConditionalEdges("inc", func(_ context.Context, s counter) (engine.Route, error) {
		if s.N >= limit {
			return engine.To(engine.End), nil
		}
		return engine.To("inc"), nil
	}, nil)
	cg, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cg
}

func TestCounterLoop(t *testing.T) {
	t.Parallel()
	got, err := countTo(t, 1000).Invoke(context.Background(), engine.Update{"n": 0}, nil)
	if err != nil || got.N != 1000 {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestRecursionLimit(t *testing.T) {
	t.Parallel()
	chain := func() *engine.Graph[logState] {
		g := engine.NewStateGraph[logState]()
		g.AddNode("a", logNode("a")).AddNode("b", logNode("b")).AddNode("c", logNode("c"))
		g.AddEdge(engine.Start, "a").AddSequence("a", "b", "c").AddEdge("c", engine.End)
		cg, err := g.Compile(engine.CompileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cg
	}()
	_, err := chain.Invoke(context.Background(), engine.Update{"log": []string{}}, &engine.RunOptions{RecursionLimit: 3})
	if !errors.Is(err, engine.ErrRecursionLimit) || !strings.Contains(err.Error(), "RecursionLimit") {
		t.Fatalf("limit 3: err = %v, want a recursion error saying how to raise it", err)
	}
	if _, err := chain.Invoke(context.Background(), engine.Update{"log": []string{}}, &engine.RunOptions{RecursionLimit: 4}); err != nil {
		t.Fatalf("limit 4: %v", err)
	}
}

// Set writes one key like an Update of one key, in node output, in a
// Command and as run input, with the same checks.
func TestSetWritesOneKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := engine.NewStateGraph[logState]()
	g.AddNode("a", func(context.Context, logState) (engine.Output, error) { return engine.Set("log", "a"), nil })
	g.AddNode("b", func(context.Context, logState) (engine.Output, error) {
		return engine.Command{Update: engine.Set("log", "b"), Goto: []any{engine.End}}, nil
	})
	g.AddEdge(engine.Start, "a").AddEdge("a", "b")
	cg, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cg.Invoke(ctx, engine.Set("log", []string{"in"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(out.Log, ","); got != "in,a,b" {
		t.Fatalf("log = %q, want in,a,b", got)
	}

	bad := engine.NewStateGraph[logState]()
	bad.AddNode("x", func(context.Context, logState) (engine.Output, error) { return engine.Set("nope", 1), nil })
	bad.AddEdge(engine.Start, "x")
	bg, err := bad.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bg.Invoke(ctx, engine.Update{"log": []string{}}, nil)
	if !errors.Is(err, engine.ErrInvalidUpdate) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("unknown key: got %v", err)
	}
	_, err = cg.Invoke(ctx, engine.Set("log", 42), nil)
	if !errors.Is(err, engine.ErrInvalidUpdate) {
		t.Fatalf("wrong type: got %v", err)
	}
}
