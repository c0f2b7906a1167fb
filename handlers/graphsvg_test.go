package handlers

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

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

func TestGraphSVGHasStableIDsAndEdgeStyles(t *testing.T) {
	t.Parallel()
	warnings := []engine.Warning{{Node: "merge", Cause: "reached by paths of different lengths", Suggestion: "use a join"}}
	svg, err := GraphSVG(context.Background(), agentTopology(), warnings)
	if err != nil {
		t.Fatal(err)
	}
	s := string(svg)
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
			svg, err := GraphSVG(context.Background(), topo, nil)
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
			svg, err := GraphSVGWith(context.Background(), nestedTopology(), nil, SVGOptions{Expand: tc.expand, LinkBase: "/graphs/g"})
			if err != nil {
				t.Fatal(err)
			}
			s := string(svg)
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
	dot := DOTWith(nestedTopology(), nil, SVGOptions{Expand: []string{"research", "research:deep"}})
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
	dot = DOTWith(loop, nil, SVGOptions{Expand: []string{"research"}})
	if !strings.Contains(dot, `"research:__end__" -> "research:__start__" [id="e-research-research", style=dashed, class=`) {
		t.Errorf("the loop is clipped or missing:\n%s", dot)
	}
	if _, err := RenderSVG(context.Background(), dot); err != nil {
		t.Fatal(err)
	}
}

func TestEachExpansionIsCachedOnItsOwn(t *testing.T) {
	t.Parallel()
	render := func(expand []string) []byte {
		t.Helper()
		svg, err := GraphSVGWith(context.Background(), nestedTopology(), nil, SVGOptions{Expand: expand, LinkBase: "/graphs/cache-key"})
		if err != nil {
			t.Fatal(err)
		}
		return svg
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
			if got := ToggleHref("/graphs/g", tc.expand, tc.node); got != tc.want {
				t.Errorf("ToggleHref = %q, want %q", got, tc.want)
			}
		})
	}
	svg, err := GraphSVGWith(context.Background(), nestedTopology(), nil, SVGOptions{Expand: []string{"research"}, LinkBase: "/graphs/g"})
	if err != nil {
		t.Fatal(err)
	}
	s := string(svg)
	for _, want := range []string{`xlink:href="/graphs/g"`, `xlink:href="/graphs/g?expand=research&amp;expand=research%3Adeep"`} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks the link %s", want)
		}
	}
	if plain := DOT(nestedTopology(), nil); strings.Contains(plain, "href") {
		t.Error("DOT without a LinkBase links somewhere")
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
			svg, err := GraphSVGWith(context.Background(), agentTopology(), nil, SVGOptions{BreakBefore: tc.before, BreakAfter: tc.after})
			if err != nil {
				t.Fatal(err)
			}
			s := string(svg)
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
