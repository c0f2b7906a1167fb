package handlers

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/superstep-dev/superstep/engine"
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
