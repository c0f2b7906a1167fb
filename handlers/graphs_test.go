package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/researchsubgraph"
	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/runs"
)

// logNodes adds nodes that append their own name to the log.
func logNodes(sg *engine.StateGraph[flowState], names ...string) {
	for _, n := range names {
		sg.AddNode(n, func(context.Context, flowState) (engine.Output, error) {
			return engine.Update{"log": n}, nil
		})
	}
}

// breakpointGraph is START → a → b → c → END, compiled to stop after a
// and before c.
func breakpointGraph(t testing.TB) engine.Compiled {
	t.Helper()
	sg := engine.NewStateGraph[flowState]()
	logNodes(sg, "a", "b", "c")
	sg.AddEdge(engine.Start, "a").AddEdge("a", "b").AddEdge("b", "c").AddEdge("c", engine.End)
	g, err := sg.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory(), InterruptBefore: []string{"c"}, InterruptAfter: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// nestedGraph is START → mid → END, where mid is a subgraph (m → leaf)
// and leaf a subgraph of its own (x).
func nestedGraph(t testing.TB) engine.Compiled {
	t.Helper()
	compile := func(sg *engine.StateGraph[flowState], saver checkpoints.Saver) engine.Compiled {
		g, err := sg.Compile(engine.CompileOptions{Checkpointer: saver})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	leaf := engine.NewStateGraph[flowState]()
	logNodes(leaf, "x")
	leaf.AddEdge(engine.Start, "x").AddEdge("x", engine.End)
	mid := engine.NewStateGraph[flowState]()
	logNodes(mid, "m")
	mid.AddSubgraph("leaf", compile(leaf, nil))
	mid.AddEdge(engine.Start, "m").AddEdge("m", "leaf").AddEdge("leaf", engine.End)
	outer := engine.NewStateGraph[flowState]()
	outer.AddSubgraph("mid", compile(mid, nil))
	outer.AddEdge(engine.Start, "mid").AddEdge("mid", engine.End)
	return compile(outer, checkpoints.NewMemory())
}

// setupGraphs serves the Studio over the graphs of the graph-page tests:
// research (the researchsubgraph example), nested and breaks.
func setupGraphs(t testing.TB) *fixture {
	t.Helper()
	research, err := researchsubgraph.New(researchsubgraph.Options{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, map[string]engine.Compiled{"research": research, "nested": nestedGraph(t), "breaks": breakpointGraph(t)})
}

// svgClass is the class of the SVG group with element id id in a page.
func svgClass(page, id string) []string {
	m := regexp.MustCompile(`<g id="` + regexp.QuoteMeta(id) + `" class="([^"]*)"`).FindStringSubmatch(page)
	if m == nil {
		return nil
	}
	return strings.Fields(m[1])
}

func TestGraphPageExpandsSubgraphsInPlace(t *testing.T) {
	t.Parallel()
	f := setupGraphs(t)
	for _, tc := range []struct {
		name  string
		path  string
		code  int
		has   []string
		lacks []string
	}{
		{"closed", "/graphs/research", http.StatusOK,
			[]string{`id="n-research"`, `xlink:href="/graphs/research?expand=research"`, `id="toggle-research"`, `href="/graphs/research?expand=research">expand</a>`},
			[]string{`id="n-research:plan"`, `id="collapse-all"`}},
		{"open", "/graphs/research?expand=research", http.StatusOK,
			[]string{`id="n-research"`, `id="n-research:plan"`, `id="n-research:review"`, `id="e-research:plan-research:search"`, `id="e-classify-research"`,
				`href="/graphs/research">collapse</a>`, `id="collapse-all"`, `action="/graphs/research/runs?expand=research"`},
			nil},
		{"nested, closed inside", "/graphs/nested?expand=mid", http.StatusOK,
			[]string{`id="n-mid:m"`, `id="n-mid:leaf"`, `id="toggle-mid:leaf"`, `href="/graphs/nested?expand=mid&amp;expand=mid%3Aleaf">expand</a>`},
			[]string{`id="n-mid:leaf:x"`}},
		{"nested, open inside", "/graphs/nested?expand=mid:leaf", http.StatusOK,
			[]string{`id="n-mid:m"`, `id="n-mid:leaf:x"`, `href="/graphs/nested?expand=mid">collapse</a>`, `href="/graphs/nested">collapse</a>`},
			nil},
		{"unknown node", "/graphs/research?expand=ghost", http.StatusBadRequest,
			[]string{`expand=&#34;ghost&#34;: the graph has no node &#34;ghost&#34;`}, []string{"<svg"}},
		{"unknown inner node", "/graphs/research?expand=research:ghost", http.StatusBadRequest,
			[]string{`subgraph &#34;research&#34; has no node &#34;ghost&#34;`}, nil},
		{"not a subgraph", "/graphs/research?expand=classify", http.StatusBadRequest,
			[]string{`node &#34;classify&#34; is not a subgraph; only subgraph nodes`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := f.get(t, tc.path)
			if res.code != tc.code {
				t.Fatalf("GET %s = %d, want %d: %.500s", tc.path, res.code, tc.code, res.body)
			}
			for _, want := range tc.has {
				if !strings.Contains(res.body, want) {
					t.Errorf("GET %s lacks %s", tc.path, want)
				}
			}
			for _, bad := range tc.lacks {
				if strings.Contains(res.body, bad) {
					t.Errorf("GET %s has %s", tc.path, bad)
				}
			}
		})
	}
}

func TestGraphPageMarksSubgraphNodes(t *testing.T) {
	t.Parallel()
	f := setupGraphs(t)
	closed := svgClass(f.get(t, "/graphs/research").body, "n-research")
	if !slices.Contains(closed, "subgraph") || slices.Contains(closed, "expanded") {
		t.Errorf("closed research node has classes %q, want subgraph and not expanded", closed)
	}
	open := svgClass(f.get(t, "/graphs/research?expand=research").body, "n-research")
	if !slices.Contains(open, "cluster") || !slices.Contains(open, "expanded") {
		t.Errorf("open research has classes %q, want a cluster marked expanded", open)
	}
	if c := svgClass(f.get(t, "/graphs/research").body, "n-classify"); slices.Contains(c, "subgraph") {
		t.Errorf("classify is marked as a subgraph: %q", c)
	}
}

// A refused start re-renders the page with the drawing it was posted
// from.
func TestRefusedStartKeepsTheExpansion(t *testing.T) {
	t.Parallel()
	f := setupGraphs(t)
	res := f.post(t, "/graphs/research/runs?expand=research", url.Values{"input": {`{"nope": 1}`}})
	if res.code != http.StatusBadRequest || !strings.Contains(res.body, `id="n-research:plan"`) {
		t.Fatalf("refused start = %d, open subgraph shown %v", res.code, strings.Contains(res.body, `id="n-research:plan"`))
	}
}

func TestGraphPageMarksCompiledBreakpoints(t *testing.T) {
	t.Parallel()
	f := setupGraphs(t)
	page := f.get(t, "/graphs/breaks").body
	for id, want := range map[string][]string{"n-a": {"bp-after"}, "n-c": {"bp-before"}, "n-b": nil} {
		got := svgClass(page, id)
		if got == nil {
			t.Fatalf("no %s in the SVG", id)
		}
		for _, c := range []string{"bp-before", "bp-after"} {
			if slices.Contains(got, c) != slices.Contains(want, c) {
				t.Errorf("%s has classes %q; want %s: %v", id, got, c, slices.Contains(want, c))
			}
		}
	}
	if !strings.Contains(page, "every run stops before c runs") || !strings.Contains(page, "every run stops after a runs") {
		t.Error("the breakpoints have no tooltip")
	}
	input := func(id string) string {
		return regexp.MustCompile(`<input[^>]*id="` + id + `"[^>]*>`).FindString(page)
	}
	for _, id := range []string{"bp-before-c", "bp-after-a"} {
		if in := input(id); !strings.Contains(in, " checked") || !strings.Contains(in, " disabled") || strings.Contains(in, "name=") {
			t.Errorf("compiled breakpoint box %s = %s, want ticked, fixed and not posted", id, in)
		}
	}
	for _, id := range []string{"bp-before-b", "bp-after-c", "bp-before-a"} {
		if in := input(id); strings.Contains(in, "disabled") || !strings.Contains(in, "name=") {
			t.Errorf("run breakpoint box %s = %s, want one a person can tick", id, in)
		}
	}
	if !strings.Contains(page, `id="compiled-breakpoints"`) {
		t.Error("the form does not say what the fixed boxes are")
	}
	if strings.Contains(f.get(t, "/graphs/nested").body, `id="compiled-breakpoints"`) {
		t.Error("a graph without compiled breakpoints explains them")
	}
}

// Ticking a breakpoint in the form adds to the compiled ones instead of
// replacing them (which the engine's per-run list would do): the run
// stops before a (ticked), after a (compiled), then before c (compiled;
// without it the run would end after b).
func TestStartRunKeepsCompiledBreakpoints(t *testing.T) {
	t.Parallel()
	f := setupGraphs(t)
	res := f.post(t, "/graphs/breaks/runs", url.Values{"thread": {"bp"}, "interrupt_before": {"a"}})
	if res.code != http.StatusSeeOther {
		t.Fatalf("start = %d: %.500s", res.code, res.body)
	}
	type stop struct{ before, after string }
	var got []stop
	for range 4 {
		th := f.wait(t, "bp")
		if th.Status != runs.StatusInterrupted {
			break
		}
		got = append(got, stop{strings.Join(th.Before, ","), strings.Join(th.After, ",")})
		if _, err := f.runs.Resume(context.Background(), "bp", nil); err != nil {
			t.Fatal(err)
		}
	}
	want := []stop{{"a", ""}, {"", "a"}, {"c", ""}}
	if !slices.Equal(got, want) {
		t.Fatalf("the run stopped at %v, want %v", got, want)
	}
	if v := f.values(t, "breaks", "bp"); fmt.Sprint(v["log"]) != "[a b c]" {
		t.Fatalf("log = %v, want [a b c]", v["log"])
	}
}

// limitRecorder is a thread registry that records the limit of each list.
type limitRecorder struct {
	runs.ThreadStore
	mu     sync.Mutex
	limits []int
}

func (r *limitRecorder) ListThreads(ctx context.Context, f runs.ThreadFilter) ([]runs.ThreadRecord, error) {
	r.mu.Lock()
	r.limits = append(r.limits, f.Limit)
	r.mu.Unlock()
	return r.ThreadStore.ListThreads(ctx, f)
}

// A graph's page lists its 10 most recently updated threads, and asks
// the registry for no more than those (a graph with thousands of threads
// costs the page ten rows, not a full scan).
func TestGraphPageListsItsRecentThreads(t *testing.T) {
	t.Parallel()
	rec := &limitRecorder{ThreadStore: runs.NewMemoryThreads()}
	m, err := runs.NewManager(map[string]engine.Compiled{"nested": nestedGraph(t)}, runs.WithThreadStore(rec))
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	handlers.Routes{Runs: m}.Mount(r)
	srv := httptest.NewServer(handlers.Secure(r))
	t.Cleanup(func() {
		srv.Close()
		m.Close()
	})
	f := &fixture{srv: srv, runs: m}
	for i := 1; i <= 12; i++ {
		id := fmt.Sprintf("t%02d", i)
		if _, err := m.Start(context.Background(), "nested", id, nil, runs.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		f.wait(t, id)
	}
	res := f.get(t, "/graphs/nested")
	if res.code != http.StatusOK {
		t.Fatalf("graph page = %d", res.code)
	}
	var listed []string
	for _, m := range regexp.MustCompile(`href="/threads/(t\d\d)"`).FindAllStringSubmatch(res.body, -1) {
		if !slices.Contains(listed, m[1]) {
			listed = append(listed, m[1])
		}
	}
	slices.Sort(listed)
	if want := "t03 t04 t05 t06 t07 t08 t09 t10 t11 t12"; strings.Join(listed, " ") != want {
		t.Fatalf("the graph page lists %v, want the 10 newest: %s", listed, want)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.limits) == 0 || slices.Contains(rec.limits, 0) {
		t.Fatalf("the registry was asked for lists with limits %v; want each capped", rec.limits)
	}
}

// unreadableRegistry is a thread registry whose lists fail.
type unreadableRegistry struct{ runs.ThreadStore }

func (unreadableRegistry) ListThreads(context.Context, runs.ThreadFilter) ([]runs.ThreadRecord, error) {
	return nil, errors.New("registry is down")
}

// A registry that cannot be read makes the graph page an error, not a
// page that says the graph has no threads.
func TestGraphPageWithAnUnreadableRegistryIsAnError(t *testing.T) {
	t.Parallel()
	m, err := runs.NewManager(map[string]engine.Compiled{"nested": nestedGraph(t)}, runs.WithThreadStore(unreadableRegistry{runs.NewMemoryThreads()}))
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	handlers.Routes{Runs: m, Logger: slog.New(slog.DiscardHandler)}.Mount(r)
	srv := httptest.NewServer(handlers.Secure(r))
	t.Cleanup(func() {
		srv.Close()
		m.Close()
	})
	f := &fixture{srv: srv, runs: m}
	if res := f.get(t, "/graphs/nested"); res.code != http.StatusInternalServerError {
		t.Fatalf("graph page with an unreadable registry = %d, want 500", res.code)
	}
}
