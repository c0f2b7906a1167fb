package handlers

import (
	"regexp"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/engine"
)

// A Send fan-out is an edge of its own (class send, dashed, labelled),
// indexed by its ends so a fired Send lights it; a router that may go
// anywhere is said on its node, not drawn as a "*" node.
func TestGraphSVGDrawsSendEdgesAndNoStarNode(t *testing.T) {
	t.Parallel()
	topo := engine.Topology{
		Nodes: []engine.TopoNode{{Name: engine.Start}, {Name: "plan"}, {Name: "work"}, {Name: "route"}, {Name: engine.End}},
		Edges: []engine.TopoEdge{
			{From: engine.Start, To: "plan"},
			{From: "plan", To: "work", Conditional: true, Send: true, Label: "Send"},
			{From: "work", To: "route"},
			{From: "route", To: "*", Conditional: true},
			{From: "route", To: engine.End},
		},
	}
	d := newDot(topo, nil, svgOptions{})
	svg := string(draw(t, topo, nil, svgOptions{}))
	m := regexp.MustCompile(`(?s)<g id="e-plan-work" class="edge gedge send">.*?</g>`).FindString(svg)
	if m == "" {
		t.Fatalf("no Send edge e-plan-work with class send in\n%s", svg)
	}
	if !strings.Contains(m, ">Send</text>") || !strings.Contains(m, "stroke-dasharray") || !strings.Contains(m, "<title>plan-&gt;work</title>") {
		t.Errorf("the Send edge is not labelled, dashed and from plan to work:\n%s", m)
	}
	want := drawnEdge{"plan", "work", "e-plan-work"}
	found := false
	for _, e := range d.edges {
		found = found || e == want
		if e[1] == "*" {
			t.Errorf("the edge index still has a * edge: %v", e)
		}
	}
	if !found {
		t.Errorf("edge index %v lacks %v", d.edges, want)
	}
	if strings.Contains(svg, "<title>*</title>") || strings.Contains(svg, `id="n-*"`) {
		t.Error("the drawing has a * pseudo-node")
	}
	if !strings.Contains(svg, "routes at run time") {
		t.Error("the router's node does not say it routes at run time")
	}
}

// Every node but START and END is a focusable button named for its node,
// carrying its qualified name for the details panel.
func TestGraphSVGNodesAreFocusableButtons(t *testing.T) {
	t.Parallel()
	svg := string(draw(t, nestedTopology(), nil, svgOptions{Expand: []string{"research"}}))
	for _, name := range []string{"classify", "research", "research:plan"} {
		tag := `id="n-` + name + `"`
		i := strings.Index(svg, tag)
		if i < 0 {
			t.Fatalf("no node %s", name)
		}
		open := svg[i : i+strings.Index(svg[i:], ">")]
		for _, attr := range []string{`tabindex="0"`, `role="button"`, `data-node="` + name + `"`, `aria-label="node ` + name + `: show its details"`} {
			if !strings.Contains(open, attr) {
				t.Errorf("node %s's group %q lacks %s", name, open, attr)
			}
		}
	}
	for _, term := range []string{"n-__start__", "n-__end__"} {
		i := strings.Index(svg, `id="`+term+`"`)
		if open := svg[i : i+strings.Index(svg[i:], ">")]; strings.Contains(open, "tabindex") {
			t.Errorf("%s is focusable: %q", term, open)
		}
	}
}
