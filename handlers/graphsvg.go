package handlers

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/goccy/go-graphviz"
	"github.com/zeebo/xxh3"

	"github.com/superstep-dev/superstep/engine"
)

// NodeID and EdgeID are the stable element ids of a graph's SVG: the live
// script, the breakpoints picker and the browser tests find nodes by them.
func NodeID(node string) string { return "n-" + node }

// EdgeID is the element id of the edge from → to.
func EdgeID(from, to string) string { return "e-" + from + "-" + to }

// DOT describes a topology for Graphviz: every node and edge carries its
// stable id, conditional edges are dashed and labelled with the router
// results that select them, join edges are bold with a diamond tail, and
// nodes with lint warnings are marked and carry the warning as a tooltip.
// The output depends only on its arguments, so it keys the SVG cache.
func DOT(topo engine.Topology, warnings []engine.Warning) string {
	warn := map[string][]string{}
	for _, w := range warnings {
		warn[w.Node] = append(warn[w.Node], w.Cause+" — "+w.Suggestion)
	}
	var b strings.Builder
	b.WriteString("digraph G {\n")
	b.WriteString("  graph [rankdir=TB, bgcolor=\"transparent\", fontname=\"Helvetica\", nodesep=0.4, ranksep=0.45];\n")
	b.WriteString("  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", color=\"#5b6470\", fontname=\"Helvetica\", fontsize=12, height=0.4];\n")
	b.WriteString("  edge [fontname=\"Helvetica\", fontsize=10, color=\"#5b6470\", arrowsize=0.7];\n")
	for _, n := range topo.Nodes {
		attrs := []string{"id=" + quote(NodeID(n.Name))}
		class := "gnode"
		label := n.Name
		switch n.Name {
		case engine.Start, engine.End:
			class += " terminal"
			label = strings.Trim(strings.ToUpper(n.Name), "_")
			attrs = append(attrs, "shape=oval", "fillcolor=\"#eef0f3\"")
		}
		var flags []string
		if n.Cached {
			flags = append(flags, "cached")
		}
		if n.Retried {
			flags = append(flags, "retry")
		}
		if n.Deferred {
			flags = append(flags, "deferred")
		}
		if len(flags) > 0 {
			label += "\n(" + strings.Join(flags, ", ") + ")"
		}
		if ws := warn[n.Name]; len(ws) > 0 {
			class += " warn"
			label += " ⚠"
			attrs = append(attrs, "tooltip="+quote(strings.Join(ws, "\n")), "color=\"#b7791f\"", "penwidth=2")
		} else {
			attrs = append(attrs, "tooltip="+quote(n.Name))
		}
		attrs = append(attrs, "class="+quote(class), "label="+quote(label))
		fmt.Fprintf(&b, "  %s [%s];\n", quote(n.Name), strings.Join(attrs, ", "))
	}
	seen := map[string]int{}
	for _, e := range topo.Edges {
		id := EdgeID(e.From, e.To)
		seen[id]++
		if k := seen[id]; k > 1 {
			id = fmt.Sprintf("%s-%d", id, k)
		}
		class := "gedge"
		attrs := []string{"id=" + quote(id)}
		switch {
		case e.Conditional:
			class += " conditional"
			attrs = append(attrs, "style=dashed")
			if e.Label != "" {
				attrs = append(attrs, "label="+quote(e.Label))
			}
		case e.Join:
			class += " join"
			attrs = append(attrs, "style=bold", "arrowtail=diamond", "dir=both", "color=\"#2b6cb0\"")
		}
		attrs = append(attrs, "class="+quote(class))
		fmt.Fprintf(&b, "  %s -> %s [%s];\n", quote(e.From), quote(e.To), strings.Join(attrs, ", "))
	}
	b.WriteString("}\n")
	return b.String()
}

// quote makes s a DOT string. Backslashes are doubled so Graphviz's own
// escapes (\N, \G, \l) never apply to names taken from the graph.
func quote(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `"`, `\"`)
	s = strings.ReplaceAll(s, "\n", `\n`)
	return `"` + s + `"`
}

// layout is the one Graphviz instance of the process. go-graphviz is not
// safe for concurrent use (even two New calls at once race inside the
// wasm runtime), so every call goes through mu. A compiled graph's
// topology never changes, so its SVG is computed once and cached by the
// xxh3 hash of its DOT; live updates only toggle classes in the browser.
var layout struct {
	mu    sync.Mutex
	gv    *graphviz.Graphviz
	cache map[uint64][]byte
}

// RenderSVG lays out a DOT graph with dot and returns the SVG (without the
// XML prolog, ready to inline in a page). Results are cached per DOT text.
func RenderSVG(ctx context.Context, dot string) ([]byte, error) {
	key := xxh3.HashString(dot)
	layout.mu.Lock()
	defer layout.mu.Unlock()
	if svg, ok := layout.cache[key]; ok {
		return svg, nil
	}
	if layout.gv == nil {
		gv, err := graphviz.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("graph layout: start graphviz: %w", err)
		}
		layout.gv, layout.cache = gv, map[uint64][]byte{}
	}
	g, err := graphviz.ParseBytes([]byte(dot))
	if err != nil {
		return nil, fmt.Errorf("graph layout: parse DOT: %w", err)
	}
	defer g.Close()
	var buf bytes.Buffer
	if err := layout.gv.Render(ctx, g, graphviz.SVG, &buf); err != nil {
		return nil, fmt.Errorf("graph layout: render: %w", err)
	}
	// Graphviz writes "-" as &#45; everywhere; plain "-" is the same
	// character to a browser and keeps ids greppable.
	svg := bytes.ReplaceAll(buf.Bytes(), []byte("&#45;"), []byte("-"))
	if i := bytes.Index(svg, []byte("<svg")); i > 0 {
		svg = svg[i:]
	}
	layout.cache[key] = svg
	return svg, nil
}

// GraphSVG is RenderSVG of DOT(topo, warnings).
func GraphSVG(ctx context.Context, topo engine.Topology, warnings []engine.Warning) ([]byte, error) {
	return RenderSVG(ctx, DOT(topo, warnings))
}
