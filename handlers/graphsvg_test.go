package handlers

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/zeebo/xxh3"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
)

func agentTopology() engine.Topology {
	return engine.Topology{
		Nodes: []engine.TopoNode{{Name: engine.Start}, {Name: "agent"}, {Name: "tools", Retried: true}, {Name: "human"}, {Name: "merge"}, {Name: engine.End}},
		Edges: []engine.TopoEdge{
			{From: engine.Start, To: "agent"},
			{From: "agent", To: "tools", Conditional: true, Label: "has_tool_calls"},
			{From: "agent", To: "human", Conditional: true, Label: "review"},
			{From: "tools", To: "merge", Join: true},
			{From: "human", To: "merge", Join: true},
			{From: "merge", To: engine.End},
		},
	}
}

// draw lays out topo as dotWith describes it.
func draw(t *testing.T, topo engine.Topology, warnings []engine.Warning, opts svgOptions) []byte {
	t.Helper()
	svg, err := renderSVG(context.Background(), dotWith(topo, warnings, opts))
	if err != nil {
		t.Fatal(err)
	}
	return svg
}

func TestGraphSVGHasStableIDsAndEdgeStyles(t *testing.T) {
	t.Parallel()
	warnings := []engine.Warning{{Node: "merge", Cause: "reached by paths of different lengths", Suggestion: "use a join"}}
	s := string(draw(t, agentTopology(), warnings, svgOptions{}))
	if !strings.HasPrefix(s, "<svg") {
		t.Fatalf("SVG does not start with <svg: %.80q", s)
	}
	for _, id := range []string{"n-__start__", "n-agent", "n-tools", "n-human", "n-merge", "n-__end__", "e-agent-tools", "e-tools-merge", "e-__start__-agent"} {
		if !strings.Contains(s, `id="`+id+`"`) {
			t.Errorf("SVG lacks element id %q", id)
		}
	}
	groupClass := func(id string) string {
		m := regexp.MustCompile(`<g id="` + regexp.QuoteMeta(id) + `" class="([^"]*)"`).FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("no <g id=%q class=...> in the SVG", id)
		}
		return m[1]
	}
	for id, want := range map[string]string{"e-agent-tools": "conditional", "e-tools-merge": "join", "n-merge": "warn", "n-agent": "gnode"} {
		if c := groupClass(id); !strings.Contains(c, want) {
			t.Errorf("%s has class %q, want %q in it", id, c, want)
		}
	}
	if !strings.Contains(s, "has_tool_calls") || !strings.Contains(s, `stroke-dasharray`) {
		t.Error("the conditional edge is not labelled and dashed")
	}
	if !strings.Contains(s, "reached by paths of different lengths") {
		t.Error("the warning is not on its node")
	}
}

func TestRenderSVGIsCachedAndSafeConcurrently(t *testing.T) {
	t.Parallel()
	topo := engine.Topology{Nodes: []engine.TopoNode{{Name: engine.Start}, {Name: `we"ird\N <x>`}, {Name: engine.End}},
		Edges: []engine.TopoEdge{{From: engine.Start, To: `we"ird\N <x>`}, {From: `we"ird\N <x>`, To: engine.End}}}
	var wg sync.WaitGroup
	out := make([][]byte, 8)
	for i := range out {
		wg.Go(func() {
			svg, err := renderSVG(context.Background(), dotWith(topo, nil, svgOptions{}))
			if err != nil {
				t.Error(err)
			}
			out[i] = svg
		})
	}
	wg.Wait()
	for i := range out {
		if &out[i][0] != &out[0][0] {
			t.Fatal("the same topology was laid out twice: the cache is not used")
		}
	}
	s := string(out[0])
	if strings.Contains(s, "<x>") {
		t.Fatal("a node name reached the SVG unescaped")
	}
	if !strings.Contains(s, `id="n-we&quot;ird\N &lt;x&gt;"`) {
		t.Fatalf("the odd node's id is not kept verbatim (escaped): %s", s)
	}
}

// nestedTopology is classify → research → END where research is a
// subgraph (plan → deep → END) and deep is a subgraph of its own (leaf).
func nestedTopology() engine.Topology {
	leaf := engine.Topology{
		Nodes: []engine.TopoNode{{Name: engine.Start}, {Name: "leaf"}, {Name: engine.End}},
		Edges: []engine.TopoEdge{{From: engine.Start, To: "leaf"}, {From: "leaf", To: engine.End}},
	}
	research := engine.Topology{
		Nodes: []engine.TopoNode{{Name: engine.Start}, {Name: "plan"}, {Name: "deep", Subgraph: &leaf}, {Name: engine.End}},
		Edges: []engine.TopoEdge{{From: engine.Start, To: "plan"}, {From: "plan", To: "deep"}, {From: "deep", To: engine.End}},
	}
	return engine.Topology{
		Nodes: []engine.TopoNode{{Name: engine.Start}, {Name: "classify"}, {Name: "research", Subgraph: &research}, {Name: engine.End}},
		Edges: []engine.TopoEdge{
			{From: engine.Start, To: "classify"},
			{From: "classify", To: "research", Conditional: true, Label: "research"},
			{From: "classify", To: engine.End, Conditional: true, Label: "quick"},
			{From: "research", To: engine.End},
		},
	}
}

// groupClass is the class of the SVG group with element id id ("" when
// there is none).
func groupClass(svg, id string) string {
	m := regexp.MustCompile(`<g id="` + regexp.QuoteMeta(id) + `" class="([^"]*)"`).FindStringSubmatch(svg)
	if m == nil {
		return ""
	}
	return m[1]
}

func TestGraphSVGExpandsSubgraphsInPlace(t *testing.T) {
	t.Parallel()
	topLevel := []string{"n-classify", "n-research", "n-__end__", "e-classify-research", "e-research-__end__", "e-__start__-classify"}
	researchInner := []string{"n-research:__start__", "n-research:plan", "n-research:deep", "n-research:__end__",
		"e-research:__start__-research:plan", "e-research:plan-research:deep"}
	deepInner := []string{"n-research:deep:leaf", "n-research:deep:__start__", "e-research:deep:leaf-research:deep:__end__"}
	for _, tc := range []struct {
		name   string
		expand []string
		shown  []string
		hidden []string
		// open and closed are the subgraph groups drawn open (a cluster)
		// and closed (a double-bordered node).
		open, closed []string
	}{
		{"closed", nil, topLevel, slices.Concat(researchInner, deepInner), nil, []string{"n-research"}},
		{"research open", []string{"research"}, slices.Concat(topLevel, researchInner), deepInner, []string{"n-research"}, []string{"n-research:deep"}},
		{"both open", []string{"research", "research:deep"}, slices.Concat(topLevel, researchInner, deepInner), nil, []string{"n-research", "n-research:deep"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := string(draw(t, nestedTopology(), nil, svgOptions{Expand: tc.expand, Links: true}))
			for _, id := range tc.shown {
				if !strings.Contains(s, `id="`+id+`"`) {
					t.Errorf("SVG lacks element id %q", id)
				}
			}
			for _, id := range tc.hidden {
				if strings.Contains(s, `id="`+id+`"`) {
					t.Errorf("SVG shows %q, which is inside a closed subgraph", id)
				}
			}
			for _, id := range tc.open {
				if c := groupClass(s, id); !strings.Contains(c, "cluster") || !strings.Contains(c, "expanded") || !strings.Contains(c, "gnode") {
					t.Errorf("open subgraph %s has class %q, want a gnode cluster marked expanded", id, c)
				}
			}
			for _, id := range tc.closed {
				if c := groupClass(s, id); !strings.Contains(c, "node") || !strings.Contains(c, "subgraph") || strings.Contains(c, "expanded") {
					t.Errorf("closed subgraph %s has class %q, want a node marked subgraph", id, c)
				}
			}
			if strings.Count(s, `id="e-classify-research"`) != 1 {
				t.Error("the edge into the subgraph is not drawn exactly once under its top-level id")
			}
		})
	}
}

func TestDOTAttachesEdgesToAnOpenSubgraphsBorder(t *testing.T) {
	t.Parallel()
	dot := dotWith(nestedTopology(), nil, svgOptions{Expand: []string{"research", "research:deep"}})
	for _, want := range []string{
		"compound=true",
		`"classify" -> "research:__start__" [id="e-classify-research"`, `lhead="cluster_research"`,
		`"research:__end__" -> "__end__" [id="e-research-__end__", ltail="cluster_research"`,
		// Inside research, the edge into deep goes to deep's own START.
		`"research:plan" -> "research:deep:__start__" [id="e-research:plan-research:deep", lhead="cluster_research:deep"`,
	} {
		if !strings.Contains(dot, want) {
			t.Errorf("DOT lacks %s:\n%s", want, dot)
		}
	}
	// A loop on an open subgraph node has both ends in its cluster, where
	// clipping is undefined: it is drawn unclipped, and still lays out.
	loop := nestedTopology()
	loop.Edges = append(loop.Edges, engine.TopoEdge{From: "research", To: "research", Conditional: true})
	dot = dotWith(loop, nil, svgOptions{Expand: []string{"research"}})
	if !strings.Contains(dot, `"research:__end__" -> "research:__start__" [id="e-research-research", style=dashed, class=`) {
		t.Errorf("the loop is clipped or missing:\n%s", dot)
	}
	if _, err := renderSVG(context.Background(), dot); err != nil {
		t.Fatal(err)
	}
}

func TestEachExpansionIsCachedOnItsOwn(t *testing.T) {
	t.Parallel()
	render := func(expand []string) []byte {
		t.Helper()
		return draw(t, nestedTopology(), nil, svgOptions{Expand: expand, Links: true})
	}
	closed, open := render(nil), render([]string{"research"})
	if string(closed) == string(open) {
		t.Fatal("the open and the closed drawing are the same: the expansion is not part of the cache key")
	}
	if again := render([]string{"research"}); &again[0] != &open[0] {
		t.Error("the open drawing was laid out twice")
	}
	if again := render(nil); &again[0] != &closed[0] {
		t.Error("the closed drawing was laid out twice")
	}
}

func TestSubgraphLinksToggleTheExpansion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		expand []string
		node   string
		want   string
	}{
		{"open the top one", nil, "research", "/graphs/g?expand=research"},
		{"open a nested one", []string{"research"}, "research:deep", "/graphs/g?expand=research&expand=research%3Adeep"},
		{"close a nested one", []string{"research", "research:deep"}, "research:deep", "/graphs/g?expand=research"},
		{"closing closes what is inside", []string{"research", "research:deep"}, "research", "/graphs/g"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := toggleHref("/graphs/g", tc.expand, tc.node); got != tc.want {
				t.Errorf("toggleHref = %q, want %q", got, tc.want)
			}
		})
	}
	// The laid-out drawing links relative to the page, and the page's
	// path is filled in afterwards, escaped.
	svg := draw(t, nestedTopology(), nil, svgOptions{Expand: []string{"research"}, Links: true})
	for _, want := range []string{`xlink:href="?"`, `xlink:href="?expand=research&amp;expand=research%3Adeep"`} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("the drawing lacks the relative link %s", want)
		}
	}
	for base, want := range map[string][]string{
		"/graphs/g":       {`xlink:href="/graphs/g"`, `xlink:href="/graphs/g?expand=research&amp;expand=research%3Adeep"`},
		"/graphs/a&b'c":   {`xlink:href="/graphs/a&amp;b&#39;c"`, `xlink:href="/graphs/a&amp;b&#39;c?expand=research&amp;expand=research%3Adeep"`},
		"/threads/t-1%2F": {`xlink:href="/threads/t-1%2F"`, `xlink:href="/threads/t-1%2F?expand=research&amp;expand=research%3Adeep"`},
	} {
		s := string(withLinkBase(svg, base))
		for _, w := range want {
			if !strings.Contains(s, w) {
				t.Errorf("with base %q the drawing lacks the link %s", base, w)
			}
		}
		if strings.Contains(s, `xlink:href="?`) {
			t.Errorf("with base %q a link stayed relative", base)
		}
	}
	if !strings.Contains(string(svg), `xlink:href="?"`) {
		t.Error("withLinkBase changed the cached drawing it was given")
	}
	if plain := dotWith(nestedTopology(), nil, svgOptions{}); strings.Contains(plain, "href") {
		t.Error("a drawing without links links somewhere")
	}
}

// Text in a drawing that looks like a link (a node named so) is escaped by
// Graphviz, so filling in the page's path touches only real links.
func TestLinkBaseLeavesLinkLikeNamesAlone(t *testing.T) {
	t.Parallel()
	odd := `x xlink:href="?y`
	topo := nestedTopology()
	topo.Nodes = append(topo.Nodes, engine.TopoNode{Name: odd})
	topo.Edges = append(topo.Edges, engine.TopoEdge{From: "classify", To: odd})
	svg := draw(t, topo, nil, svgOptions{Links: true})
	s := string(withLinkBase(svg, "/graphs/odd"))
	if got := strings.Count(s, "/graphs/odd"); got != 1 {
		t.Errorf("the page's path is in the drawing %d times, want once (the closed research node's link):\n%s", got, s)
	}
	if !strings.Contains(s, `xlink:href="/graphs/odd?expand=research"`) {
		t.Error("the subgraph's link was not made absolute")
	}
}

func TestParseExpand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		values  []string
		want    []string
		wantErr string
	}{
		{"nothing", nil, []string{}, ""},
		{"empty values are skipped", []string{"", ""}, []string{}, ""},
		{"one", []string{"research"}, []string{"research"}, ""},
		{"nested opens its ancestors", []string{"research:deep"}, []string{"research", "research:deep"}, ""},
		{"duplicates and order", []string{"research:deep", "research", "research"}, []string{"research", "research:deep"}, ""},
		{"unknown node", []string{"ghost"}, nil, `expand="ghost": the graph has no node "ghost"`},
		{"unknown inner node", []string{"research:ghost"}, nil, `expand="research:ghost": subgraph "research" has no node "ghost"`},
		{"not a subgraph", []string{"classify"}, nil, `node "classify" is not a subgraph`},
		{"inner node not a subgraph", []string{"research:plan"}, nil, `node "research:plan" is not a subgraph`},
		{"START is not a subgraph", []string{engine.Start}, nil, "is not a subgraph"},
		{"too many", slices.Repeat([]string{"research"}, MaxExpand+1), nil, "give at most 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseExpand(nestedTopology(), tc.values)
			if tc.wantErr != "" {
				if !errors.Is(err, runs.ErrInvalidInput) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrInvalidInput saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("ParseExpand = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestGraphSVGMarksStaticBreakpoints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		before, after []string
		want          map[string][]string // element id → classes it has
		not           map[string][]string // element id → classes it lacks
	}{
		{"named", []string{"agent"}, []string{"tools", "agent"},
			map[string][]string{"n-agent": {"bp-before", "bp-after"}, "n-tools": {"bp-after"}},
			map[string][]string{"n-tools": {"bp-before"}, "n-human": {"bp-before", "bp-after"}}},
		{"every node", []string{"*"}, nil,
			map[string][]string{"n-agent": {"bp-before"}, "n-tools": {"bp-before"}, "n-merge": {"bp-before"}},
			map[string][]string{"n-__start__": {"bp-before"}, "n-__end__": {"bp-before"}, "n-agent": {"bp-after"}}},
		{"none", nil, nil, nil, map[string][]string{"n-agent": {"bp-before", "bp-after"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := string(draw(t, agentTopology(), nil, svgOptions{BreakBefore: tc.before, BreakAfter: tc.after}))
			for id, classes := range tc.want {
				for _, c := range classes {
					if !slices.Contains(strings.Fields(groupClass(s, id)), c) {
						t.Errorf("%s has class %q, want %s in it", id, groupClass(s, id), c)
					}
				}
			}
			for id, classes := range tc.not {
				for _, c := range classes {
					if slices.Contains(strings.Fields(groupClass(s, id)), c) {
						t.Errorf("%s has class %q, want no %s", id, groupClass(s, id), c)
					}
				}
			}
			if len(tc.before) > 0 && (!strings.Contains(s, "● break before") || !strings.Contains(s, "every run stops before")) {
				t.Error("a compiled breakpoint has no mark in its label or no tooltip")
			}
		})
	}
}

type layoutState struct {
	Log []string `json:"log" reduce:"append"`
}

// cachedDrawings counts the drawings in the layout cache that contain
// marker.
func cachedDrawings(marker string) int {
	layout.mu.Lock()
	defer layout.mu.Unlock()
	k := 0
	for e := layout.cache.order.Front(); e != nil; e = e.Next() {
		if bytes.Contains(e.Value.(*svgEntry).svg, []byte(marker)) {
			k++
		}
	}
	return k
}

// Every page showing the same view of a graph (two threads of it, and the
// graph itself) shares one layout: only the links, filled in per page,
// differ. A graph with its own node names keeps other tests' drawings out
// of the count.
func TestPagesOfOneGraphShareOneCachedLayout(t *testing.T) {
	t.Parallel()
	inner := engine.NewStateGraph[layoutState]()
	inner.AddNode("sharedlayout_step", func(context.Context, layoutState) (engine.Output, error) {
		return engine.Update{"log": "step"}, nil
	})
	inner.AddEdge(engine.Start, "sharedlayout_step").AddEdge("sharedlayout_step", engine.End)
	sub, err := inner.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	outer := engine.NewStateGraph[layoutState]()
	outer.AddSubgraph("sharedlayout_sub", sub)
	outer.AddEdge(engine.Start, "sharedlayout_sub").AddEdge("sharedlayout_sub", engine.End)
	g, err := outer.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := runs.NewManager(map[string]engine.Compiled{"shared": g})
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	Routes{Runs: m}.Mount(r)
	srv := httptest.NewServer(r)
	t.Cleanup(func() {
		srv.Close()
		m.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, id := range []string{"one", "two"} {
		if _, err := m.Start(ctx, "shared", id, map[string]any{}, runs.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Wait(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, page := range []string{"/threads/one", "/threads/two", "/graphs/shared"} {
		res, err := http.Get(srv.URL + page + "?expand=sharedlayout_sub")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d, %v", page, res.StatusCode, err)
		}
		// The open subgraph's label closes it on this very page.
		if !strings.Contains(string(body), `xlink:href="`+page+`"`) {
			t.Errorf("%s does not link back to itself with the subgraph closed", page)
		}
	}
	if k := cachedDrawings(`id="n-sharedlayout_sub:sharedlayout_step"`); k != 1 {
		t.Fatalf("the open drawing is cached %d times for three pages, want once", k)
	}
}

// The layout cache holds at most its budget of bytes, dropping the least
// recently used drawing first; one bigger than the budget is not kept.
func TestSVGCacheDropsTheLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	key := func(i int) xxh3.Uint128 { return xxh3.HashString128(strconv.Itoa(i)) }
	c := svgCache{max: 100}
	for i := range 10 {
		c.put(key(i), make([]byte, 30))
		if c.size > c.max {
			t.Fatalf("after %d drawings the cache holds %d bytes, over its %d", i+1, c.size, c.max)
		}
		if i == 2 {
			// Drawing 0, used again, outlives 1 and 2.
			if _, ok := c.get(key(0)); !ok {
				t.Fatal("drawing 0 is gone before the cache was full")
			}
		}
	}
	for i, want := range map[int]bool{0: false, 1: false, 6: false, 7: true, 8: true, 9: true} {
		if _, ok := c.get(key(i)); ok != want {
			t.Errorf("drawing %d cached = %v, want %v", i, ok, want)
		}
	}
	c = svgCache{max: 100}
	c.put(key(0), make([]byte, 60))
	c.put(key(1), make([]byte, 30))
	c.get(key(0))
	c.put(key(2), make([]byte, 30)) // over budget: 1 is the least recently used
	if _, ok := c.get(key(1)); ok {
		t.Error("the least recently used drawing was kept over the budget")
	}
	if _, ok := c.get(key(0)); !ok {
		t.Error("the recently used drawing was dropped")
	}
	c.put(key(3), make([]byte, 101))
	if _, ok := c.get(key(3)); ok || c.size != 90 {
		t.Errorf("a drawing bigger than the budget: cached %v, size %d, want not cached and size 90", ok, c.size)
	}
	c.put(key(0), make([]byte, 10))
	if c.size != 40 || c.order.Len() != 2 || len(c.index) != 2 {
		t.Errorf("replacing a drawing: size %d with %d entries (%d indexed), want 40 bytes in 2", c.size, c.order.Len(), len(c.index))
	}
}

// A client walking through every expansion of a graph lays each one out,
// but the cache keeps within its budget and still serves the latest.
func TestManyExpansionsStayWithinTheCacheBound(t *testing.T) {
	t.Parallel()
	leaf := engine.Topology{
		Nodes: []engine.TopoNode{{Name: engine.Start}, {Name: "x"}, {Name: engine.End}},
		Edges: []engine.TopoEdge{{From: engine.Start, To: "x"}, {From: "x", To: engine.End}},
	}
	topo := engine.Topology{Nodes: []engine.TopoNode{{Name: engine.Start}, {Name: engine.End}}}
	var subs []string
	for i := range 4 {
		name := "bound" + strconv.Itoa(i)
		subs = append(subs, name)
		topo.Nodes = append(topo.Nodes, engine.TopoNode{Name: name, Subgraph: &leaf})
		topo.Edges = append(topo.Edges, engine.TopoEdge{From: engine.Start, To: name}, engine.TopoEdge{From: name, To: engine.End})
	}
	closed := draw(t, topo, nil, svgOptions{Links: true})
	c := svgCache{max: 3 * len(closed)}
	for mask := range 1 << len(subs) {
		var expand []string
		for i, s := range subs {
			if mask&(1<<i) != 0 {
				expand = append(expand, s)
			}
		}
		dot := dotWith(topo, nil, svgOptions{Expand: expand, Links: true})
		svg := draw(t, topo, nil, svgOptions{Expand: expand, Links: true})
		c.put(xxh3.HashString128(dot), svg)
		if c.size > c.max {
			t.Fatalf("after %d expansions the cache holds %d bytes, over its %d", mask+1, c.size, c.max)
		}
		if got, ok := c.get(xxh3.HashString128(dot)); !ok || !bytes.Equal(got, svg) {
			t.Fatalf("expansion %q is not served from the cache right after it was laid out", expand)
		}
	}
	if n := c.order.Len(); n < 1 || n > 3 || n != len(c.index) {
		t.Errorf("the cache ends with %d drawings (%d indexed), want 1 to 3", n, len(c.index))
	}
}

// Node names may hold "-", so edge ids built from them can collide: every
// edge still gets an id of its own, and the drawing's edge index says
// which ends each id joins.
func TestEdgeIDsStayUniqueWithHyphenatedNames(t *testing.T) {
	t.Parallel()
	topo := engine.Topology{
		Nodes: []engine.TopoNode{{Name: engine.Start}, {Name: "a"}, {Name: "b"}, {Name: "b-2"}, {Name: "b-c"}, {Name: "a-b"}, {Name: "c"}, {Name: engine.End}},
		Edges: []engine.TopoEdge{
			{From: engine.Start, To: "a"},
			{From: "a", To: "b"},
			{From: "a", To: "b", Conditional: true, Label: "again"},
			{From: "a", To: "b-2"},
			{From: "a", To: "b-c"},
			{From: "a-b", To: "c"},
		},
	}
	d := newDot(topo, nil, svgOptions{})
	ids := map[string]bool{}
	for _, e := range d.edges {
		if ids[e[2]] {
			t.Fatalf("edge id %q is given twice: %v", e[2], d.edges)
		}
		ids[e[2]] = true
	}
	if len(d.edges) != len(topo.Edges) {
		t.Fatalf("edge index %v, want one entry per edge", d.edges)
	}
	for i, e := range topo.Edges {
		if d.edges[i][0] != e.From || d.edges[i][1] != e.To {
			t.Errorf("index entry %d = %v, want %s → %s", i, d.edges[i], e.From, e.To)
		}
	}
	svg, err := renderSVG(context.Background(), d.b.String())
	if err != nil {
		t.Fatal(err)
	}
	for id := range ids {
		if n := strings.Count(string(svg), `<g id="`+id+`"`); n != 1 {
			t.Errorf("the drawing has %d elements with id %q, want 1", n, id)
		}
	}
}
