package handlers

import (
	"bytes"
	"container/list"
	"context"
	"fmt"
	"html"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/goccy/go-graphviz"
	"github.com/zeebo/xxh3"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
)

// nodeID and edgeID are the stable element ids of a graph's SVG: the live
// script, the breakpoints picker and the browser tests find nodes by them.
//
// Nodes inside an expanded subgraph are named by their qualified name: the
// path of subgraph nodes that leads to them and their own name, joined by
// ":" (qualify), so node "plan" of subgraph node "research" is
// "research:plan" and its element id is "n-research:plan"; an inner edge
// is "e-research:plan-research:search". These ids cannot collide with
// top-level ones: a StateGraph refuses ":" in node names (it separates
// checkpoint namespaces), and only StateGraphs have subgraph nodes, so a
// ":" in an id always means "inside a subgraph". An expanded subgraph's
// box (a Graphviz cluster) keeps the id of the node it replaces,
// "n-research", so live highlighting of the subgraph node works whether
// it is open or not.
//
// From JavaScript, document.getElementById("n-research:plan") works as
// is; in a CSS selector the ":" must be escaped (#n-research\:plan, or
// CSS.escape in scripts), or use an attribute selector
// ([id="n-research:plan"]).
func nodeID(node string) string { return "n-" + node }

// edgeID is the element id of the edge from → to (qualified names for
// edges inside an expanded subgraph; see nodeID). Node names may hold
// "-", so an id can be shared (a→b-c and a-b→c, or a second a→b): later
// edges get "-2", "-3", … until the id is free, and pages find an edge's
// elements by its ends through the drawing's edge index (drawnEdge), never
// by taking an id apart.
func edgeID(from, to string) string { return "e-" + from + "-" + to }

// drawnEdge is an edge of a drawing: its ends, as events name them, and
// its element id.
type drawnEdge = [3]string

// svgOptions choose what a graph's drawing shows besides its topology and
// lint warnings. The zero value draws every subgraph closed, without
// breakpoint marks and without links.
type svgOptions struct {
	// Expand lists the subgraph nodes drawn open, by qualified name, as
	// ParseExpand returns them (ancestors included, sorted).
	Expand []string
	// BreakBefore and BreakAfter are the graph's static (compile-time)
	// breakpoints, "*" for every node, as (*engine.Pregel).Breakpoints
	// returns them. Their nodes get the class bp-before / bp-after (the
	// stylesheet draws a red bar on the node's top / bottom side), a
	// "● break before/after" line in the label and a tooltip line.
	BreakBefore, BreakAfter []string
	// Links makes a closed subgraph node link to the page with it opened,
	// and an open subgraph's label to the page with it (and the
	// subgraphs inside it) closed. The links are page-relative
	// ("?expand=…", or "?" when nothing stays open) so the drawing, and
	// its place in the layout cache, is the same on every page showing
	// the graph; withLinkBase turns them into absolute ones. Only pages
	// that honour ?expand= should ask for links.
	Links bool
}

// dotWith describes a topology for Graphviz: every node and edge carries
// its stable id, conditional edges are dashed and labelled with the
// router results that select them, join edges are bold with a diamond
// tail, and nodes with lint warnings are marked and carry the warning as
// a tooltip. Subgraph nodes (marked with a double border and
// "⊞ subgraph") listed in opts.Expand are drawn open as a cluster holding
// their own nodes and edges, recursively; edges into and out of an open
// subgraph are drawn to its inner START and from its inner END, clipped
// at the cluster's border (compound=true, lhead/ltail), and keep their
// top-level ids. Static breakpoints are marked. The output is a pure
// function of the arguments: it keys the layout cache, so each expansion
// is laid out (and cached) on its own.
func dotWith(topo engine.Topology, warnings []engine.Warning, opts svgOptions) string {
	return newDot(topo, warnings, opts).b.String()
}

// newDot writes the DOT of dotWith, recording the edge index as it goes.
func newDot(topo engine.Topology, warnings []engine.Warning, opts svgOptions) *dotWriter {
	d := &dotWriter{
		opts:     opts,
		expanded: map[string]bool{},
		warn:     map[string][]string{},
		used:     map[string]bool{},
		before:   breakSet(opts.BreakBefore),
		after:    breakSet(opts.BreakAfter),
		subs:     map[string]*engine.Topology{},
	}
	for _, p := range opts.Expand {
		d.expanded[p] = true
	}
	for _, w := range warnings {
		d.warn[w.Node] = append(d.warn[w.Node], w.Cause+" — "+w.Suggestion)
	}
	d.b.WriteString("digraph G {\n")
	d.b.WriteString("  graph [rankdir=TB, bgcolor=\"transparent\", fontname=\"Helvetica\", fontsize=11, nodesep=0.4, ranksep=0.45, compound=true];\n")
	d.b.WriteString("  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", color=\"#5b6470\", fontname=\"Helvetica\", fontsize=12, height=0.4];\n")
	d.b.WriteString("  edge [fontname=\"Helvetica\", fontsize=10, color=\"#5b6470\", arrowsize=0.7];\n")
	d.graph("", topo, "  ")
	d.b.WriteString("}\n")
	return d
}

// dotWriter writes one dotWith call's graph. Warnings and breakpoints
// belong to the top-level graph (what the engine reports for a compiled
// graph); nodes inside subgraphs get neither.
type dotWriter struct {
	b             strings.Builder
	opts          svgOptions
	expanded      map[string]bool
	warn          map[string][]string
	used          map[string]bool // edge ids given out
	edges         []drawnEdge
	before, after breakSet
	// subs holds the topology of each open subgraph written so far, for
	// the edges that attach to its inner START or END.
	subs map[string]*engine.Topology
}

// breakSet is a list of breakpoints: node names, or "*" for every node.
type breakSet []string

func (s breakSet) has(node string) bool {
	return slices.Contains(s, node) || (slices.Contains(s, "*") && node != engine.Start && node != engine.End)
}

// graph writes topo's nodes and edges; prefix is the qualified name of
// the subgraph node topo belongs to ("" at the top).
func (d *dotWriter) graph(prefix string, topo engine.Topology, indent string) {
	top := prefix == ""
	// A router without a path map (and no declared Send targets) may go
	// anywhere: the topology says so with an edge to "*", which lint
	// reads. It is not a node: the drawing says it on the router's node.
	dynamic := map[string]bool{}
	for _, e := range topo.Edges {
		if e.To == "*" {
			dynamic[e.From] = true
		}
	}
	for _, n := range topo.Nodes {
		q := qualify(prefix, n.Name)
		class := "gnode"
		label := n.Name
		var attrs, tips []string
		switch n.Name {
		case engine.Start, engine.End:
			class += " terminal"
			label = strings.Trim(strings.ToUpper(n.Name), "_")
			attrs = append(attrs, "shape=oval", "fillcolor=\"#eef0f3\"")
		}
		var flags []string
		if top && d.before.has(n.Name) {
			class += " bp-before"
			flags = append(flags, "● break before")
			tips = append(tips, "breakpoint set at compile time: every run stops before "+n.Name+" runs")
		}
		if top && d.after.has(n.Name) {
			class += " bp-after"
			flags = append(flags, "● break after")
			tips = append(tips, "breakpoint set at compile time: every run stops after "+n.Name+" runs")
		}
		if n.Cached {
			flags = append(flags, "cached")
		}
		if n.Retried {
			flags = append(flags, "retry")
		}
		if n.Deferred {
			flags = append(flags, "deferred")
		}
		if dynamic[n.Name] {
			flags = append(flags, "routes at run time")
			tips = append(tips, "a router without a path map: where it goes is decided at run time (declare its destinations with a path map, or engine.SendTargets for Sends, to draw them)")
		}
		if top && len(d.warn[n.Name]) > 0 {
			class += " warn"
			label += " ⚠"
			tips = slices.Concat(d.warn[n.Name], tips)
			attrs = append(attrs, "color=\"#b7791f\"", "penwidth=2")
		}
		if expandable(n) {
			if d.expanded[q] {
				d.cluster(q, n, class, label, flags, tips, indent)
				continue
			}
			class += " subgraph"
			flags = append(flags, "⊞ subgraph")
			attrs = append(attrs, "peripheries=2")
			tips = append(tips, fmt.Sprintf("subgraph %s (%d nodes)", n.Name, len(n.Subgraph.Nodes)-terminals(*n.Subgraph)))
			if d.opts.Links {
				attrs = append(attrs, "href="+quote(relativeToggleHref(d.opts.Expand, q)))
				tips[len(tips)-1] += ": click to expand"
			}
		}
		if len(flags) > 0 {
			label += "\n(" + strings.Join(flags, ", ") + ")"
		}
		if len(tips) == 0 {
			tips = []string{n.Name}
		}
		attrs = append([]string{"id=" + quote(nodeID(q))}, attrs...)
		attrs = append(attrs, "tooltip="+quote(strings.Join(tips, "\n")), "class="+quote(class), "label="+quote(label))
		fmt.Fprintf(&d.b, "%s%s [%s];\n", indent, quote(q), strings.Join(attrs, ", "))
	}
	for _, e := range topo.Edges {
		if e.To == "*" {
			continue
		}
		from, to := qualify(prefix, e.From), qualify(prefix, e.To)
		id := edgeID(from, to)
		for k := 2; d.used[id]; k++ {
			id = fmt.Sprintf("%s-%d", edgeID(from, to), k)
		}
		d.used[id] = true
		d.edges = append(d.edges, drawnEdge{from, to, id})
		class := "gedge"
		attrs := []string{"id=" + quote(id)}
		switch {
		case e.Send:
			// A Send fan-out: the target runs once per Send, so the edge
			// reads differently from a route (dashed, purple, a double
			// arrowhead for "one or many").
			class += " send"
			label := e.Label
			if label == "" {
				label = "Send"
			}
			attrs = append(attrs, "style=dashed", "color=\"#805ad5\"", "fontcolor=\"#805ad5\"", "arrowhead=normalnormal", "penwidth=1.4", "label="+quote(label))
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
		// An open subgraph is a cluster, not a node: the edge runs from
		// its inner END (to its inner START) and is clipped at the
		// cluster's border, unless both ends are inside that cluster (a
		// loop on the subgraph node), where clipping is undefined.
		tail, head := d.endpoint(from, false), d.endpoint(to, true)
		if tail != from && !inside(head, from) {
			attrs = append(attrs, "ltail="+quote(clusterName(from)))
		}
		if head != to && !inside(tail, to) {
			attrs = append(attrs, "lhead="+quote(clusterName(to)))
		}
		attrs = append(attrs, "class="+quote(class))
		fmt.Fprintf(&d.b, "%s%s -> %s [%s];\n", indent, quote(tail), quote(head), strings.Join(attrs, ", "))
	}
}

// cluster writes the open subgraph node q as a cluster that keeps the
// node's id, classes, flags and tooltip, and holds the subgraph's nodes
// and edges.
func (d *dotWriter) cluster(q string, n engine.TopoNode, class, label string, flags, tips []string, indent string) {
	class += " subgraph expanded"
	label += " ⊟"
	if len(flags) > 0 {
		label += " (" + strings.Join(flags, ", ") + ")"
	}
	tips = append(tips, "subgraph "+n.Name)
	d.subs[q] = n.Subgraph
	fmt.Fprintf(&d.b, "%ssubgraph %s {\n", indent, quote(clusterName(q)))
	in := indent + "  "
	attrs := []string{"id=" + quote(nodeID(q)), "class=" + quote(class), "label=" + quote(label),
		"style=\"rounded,dashed,filled\"", "fillcolor=\"#f6f8fb\"", "color=\"#5b6470\"", "labeljust=l"}
	if d.opts.Links {
		attrs = append(attrs, "href="+quote(relativeToggleHref(d.opts.Expand, q)))
		tips[len(tips)-1] += ": click the label to collapse"
	}
	attrs = append(attrs, "tooltip="+quote(strings.Join(tips, "\n")))
	for _, a := range attrs {
		fmt.Fprintf(&d.b, "%s%s;\n", in, a)
	}
	d.graph(q, *n.Subgraph, in)
	fmt.Fprintf(&d.b, "%s}\n", indent)
}

// endpoint is the DOT node an edge attaches to for the node named q: q
// itself, or for an open subgraph its inner START (head) or END (tail),
// descending through open subgraphs.
func (d *dotWriter) endpoint(q string, head bool) string {
	for d.expanded[q] {
		sub := d.subs[q]
		if sub == nil || len(sub.Nodes) == 0 {
			return q
		}
		want, fallback := engine.End, sub.Nodes[len(sub.Nodes)-1].Name
		if head {
			want, fallback = engine.Start, sub.Nodes[0].Name
		}
		name := fallback
		if slices.ContainsFunc(sub.Nodes, func(n engine.TopoNode) bool { return n.Name == want }) {
			name = want
		}
		q = qualify(q, name)
	}
	return q
}

// qualify names node name of the subgraph whose own qualified name is
// prefix ("" at the top): the subgraph node path and the node's own name
// joined by ":", like the upstream x-ray view's names and like checkpoint
// namespaces without their task ids. The values of the ?expand= parameter
// are qualified names of subgraph nodes.
func qualify(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + ":" + name
}

// inside reports whether the node named q is drawn inside the cluster of
// subgraph node sub.
func inside(q, sub string) bool { return strings.HasPrefix(q, sub+":") }

// clusterName is the DOT name of the cluster drawing subgraph node q
// (Graphviz treats subgraphs named cluster… as boxes).
func clusterName(q string) string { return "cluster_" + q }

// expandable reports whether n is a subgraph node with something to show.
func expandable(n engine.TopoNode) bool { return n.Subgraph != nil && len(n.Subgraph.Nodes) > 0 }

// terminals counts START and END in topo, which a node count leaves out.
func terminals(topo engine.Topology) int {
	k := 0
	for _, n := range topo.Nodes {
		if n.Name == engine.Start || n.Name == engine.End {
			k++
		}
	}
	return k
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
// topology never changes, so its drawing is laid out once per expansion
// and cached by the hash of its DOT; live updates only toggle classes in
// the browser. Nothing page-specific is in the DOT (links are
// page-relative until withLinkBase), so every page showing a graph
// shares its entries, and the cache is bounded (svgCacheBytes) because
// the expansions come from requests.
var layout struct {
	mu    sync.Mutex
	gv    *graphviz.Graphviz
	cache svgCache
}

// svgCacheBytes bounds the drawings the layout cache keeps, by their
// size. A drawing is a few to a few dozen KB, so this holds hundreds:
// every graph a Studio serves in the expansions people look at, while a
// client walking through all 2^k expansions of a graph only pushes out
// the least recently used ones (which are laid out again when asked for).
const svgCacheBytes = 8 << 20

// svgCache is a least-recently-used cache of laid-out drawings keyed by
// the hash of their DOT, holding at most max bytes of SVG. It is not
// safe for concurrent use (layout.mu guards the process's one).
type svgCache struct {
	max   int
	size  int
	order list.List // of *svgEntry, most recently used first
	index map[xxh3.Uint128]*list.Element
}

type svgEntry struct {
	key xxh3.Uint128
	svg []byte
}

// get returns the drawing cached under key and marks it recently used.
func (c *svgCache) get(key xxh3.Uint128) ([]byte, bool) {
	e, ok := c.index[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*svgEntry).svg, true
}

// put caches svg under key and drops the least recently used drawings
// until the cache is within max bytes again. A drawing bigger than the
// whole budget is not kept.
func (c *svgCache) put(key xxh3.Uint128, svg []byte) {
	if len(svg) > c.max {
		return
	}
	if c.index == nil {
		c.index = map[xxh3.Uint128]*list.Element{}
	}
	if e, ok := c.index[key]; ok {
		c.size -= len(e.Value.(*svgEntry).svg)
		c.order.Remove(e)
	}
	c.index[key] = c.order.PushFront(&svgEntry{key: key, svg: svg})
	c.size += len(svg)
	for c.size > c.max {
		old := c.order.Remove(c.order.Back()).(*svgEntry)
		delete(c.index, old.key)
		c.size -= len(old.svg)
	}
}

// renderSVG lays out a DOT graph with dot and returns the SVG (without the
// XML prolog, ready to inline in a page). Results are cached per DOT
// text; the returned slice is shared and must not be modified.
func renderSVG(ctx context.Context, dot string) ([]byte, error) {
	key := xxh3.HashString128(dot)
	layout.mu.Lock()
	defer layout.mu.Unlock()
	if svg, ok := layout.cache.get(key); ok {
		return svg, nil
	}
	if layout.gv == nil {
		gv, err := graphviz.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("graph layout: start graphviz: %w", err)
		}
		layout.gv, layout.cache.max = gv, svgCacheBytes
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
	svg = focusableNodes(svg)
	layout.cache.put(key, svg)
	return svg, nil
}

// nodeGroup matches the opening tag of a node's (or an open subgraph's)
// group in Graphviz's SVG: its id, as Graphviz escaped it, and its classes.
var nodeGroup = regexp.MustCompile(`<g id="n-([^"]*)" class="((?:node|cluster) gnode[^"]*)">`)

// focusableNodes makes every node of a drawing but START and END a
// button for keyboard users: focusable (tabindex), announced as a button
// with its name, and carrying its qualified name as data-node (the node
// details panel asks the server for that name). The id text is reused as
// Graphviz escaped it, so nothing is escaped twice or not at all.
func focusableNodes(svg []byte) []byte {
	return nodeGroup.ReplaceAllFunc(svg, func(m []byte) []byte {
		sub := nodeGroup.FindSubmatch(m)
		if bytes.Contains(sub[2], []byte("terminal")) {
			return m
		}
		name := sub[1]
		out := make([]byte, 0, len(m)+2*len(name)+96)
		out = append(out, m[:len(m)-1]...)
		out = append(out, ` tabindex="0" role="button" aria-haspopup="dialog" data-node="`...)
		out = append(out, name...)
		out = append(out, `" aria-label="node `...)
		out = append(out, name...)
		out = append(out, `: show its details">`...)
		return out
	})
}

// CompiledSVG draws a compiled graph as the Studio's pages show it: its
// topology and lint warnings, its static breakpoints marked, the
// subgraphs in expand (from ParseExpand) open, and subgraph nodes linking
// to linkBase, the path of the page showing the graph, with their
// expansion toggled ("" for no links). The layout is shared by every page
// showing the same view of the graph; only the links differ.
func CompiledSVG(ctx context.Context, g engine.Compiled, expand []string, linkBase string) ([]byte, error) {
	svg, _, err := compiledDrawing(ctx, g, expand, linkBase)
	return svg, err
}

// compiledDrawing is CompiledSVG with the drawing's edge index: each
// edge's ends and element id.
func compiledDrawing(ctx context.Context, g engine.Compiled, expand []string, linkBase string) ([]byte, []drawnEdge, error) {
	before, after := g.Pregel().Breakpoints()
	d := newDot(g.Topology(), g.Warnings(), svgOptions{Expand: expand, BreakBefore: before, BreakAfter: after, Links: linkBase != ""})
	svg, err := renderSVG(ctx, d.b.String())
	if err != nil {
		return nil, nil, err
	}
	return withLinkBase(svg, linkBase), d.edges, nil
}

// relativeHref is how a page-relative link starts in Graphviz's SVG.
const relativeHref = `xlink:href="?`

// withLinkBase makes the page-relative links of a drawing (svgOptions.Links)
// absolute: "?expand=…" becomes base?expand=…, and "?" (every subgraph
// closed) becomes base itself. Relative links would resolve against
// whatever URL the page was served at, which is not always the page
// itself (the graph page re-rendered for a refused start-run form is
// served at …/runs). Graphviz escapes quotes inside attribute values and
// text, so the pattern only matches real links. The cached drawing is
// shared, so the result is a copy (or svg itself when it has no links).
func withLinkBase(svg []byte, base string) []byte {
	if base == "" || !bytes.Contains(svg, []byte(relativeHref)) {
		return svg
	}
	esc := html.EscapeString(base)
	out := make([]byte, 0, len(svg)+bytes.Count(svg, []byte(relativeHref))*len(esc))
	for {
		before, after, found := bytes.Cut(svg, []byte(relativeHref))
		out = append(out, before...)
		if !found {
			return out
		}
		out = append(out, `xlink:href="`...)
		out = append(out, esc...)
		if !bytes.HasPrefix(after, []byte(`"`)) {
			out = append(out, '?')
		}
		svg = after
	}
}

// MaxExpand bounds the ?expand= values one request may give.
const MaxExpand = 64

// ParseExpand checks the values of a page's ?expand= parameter against
// topo and returns the subgraph nodes to draw open: sorted, without
// duplicates, and with the ancestors of a nested subgraph added (opening
// "research:deep" opens "research" too). A value is a qualified name
// (see qualify); empty values are skipped. A value naming no node, or a
// node that is not a subgraph, is refused with runs.ErrInvalidInput (a
// 400 that says which) rather than ignored: a deep link that no longer
// matches its graph should say so, not silently show something else.
func ParseExpand(topo engine.Topology, values []string) ([]string, error) {
	if len(values) > MaxExpand {
		return nil, fmt.Errorf("%w: expand: %d values; give at most %d", runs.ErrInvalidInput, len(values), MaxExpand)
	}
	set := map[string]bool{}
	for _, v := range values {
		if v == "" {
			continue
		}
		t, path := topo, ""
		for seg := range strings.SplitSeq(v, ":") {
			i := slices.IndexFunc(t.Nodes, func(n engine.TopoNode) bool { return n.Name == seg })
			switch {
			case i < 0 && path == "":
				return nil, fmt.Errorf("%w: expand=%q: the graph has no node %q", runs.ErrInvalidInput, v, seg)
			case i < 0:
				return nil, fmt.Errorf("%w: expand=%q: subgraph %q has no node %q", runs.ErrInvalidInput, v, path, seg)
			case !expandable(t.Nodes[i]):
				return nil, fmt.Errorf("%w: expand=%q: node %q is not a subgraph; only subgraph nodes (marked ⊞) can be expanded", runs.ErrInvalidInput, v, qualify(path, seg))
			}
			path = qualify(path, seg)
			set[path] = true
			t = *t.Nodes[i].Subgraph
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, nil
}

// toggled is expand with subgraph node q's expansion toggled: opened,
// or closed together with every subgraph open inside it. It keeps
// ParseExpand's order, so each view has one URL.
func toggled(expand []string, q string) []string {
	if !slices.Contains(expand, q) {
		next := append(slices.Clone(expand), q)
		slices.Sort(next)
		return next
	}
	var next []string
	for _, p := range expand {
		if p != q && !inside(p, q) {
			next = append(next, p)
		}
	}
	return next
}

// toggleHref is the URL of the page at base with subgraph node q's
// expansion toggled in expand (see toggled).
func toggleHref(base string, expand []string, q string) string {
	return expandHref(base, toggled(expand, q))
}

// relativeToggleHref is toggleHref relative to the current page: always
// a query ("?" when nothing stays open), which withLinkBase recognises.
func relativeToggleHref(expand []string, q string) string {
	return "?" + url.Values{"expand": toggled(expand, q)}.Encode()
}

// expandHref is the URL of the page at base showing the subgraphs in
// expand open.
func expandHref(base string, expand []string) string {
	if len(expand) == 0 {
		return base
	}
	return base + "?" + url.Values{"expand": expand}.Encode()
}
