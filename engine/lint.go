package engine

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Topology describes a compiled graph for drawing: nodes and the edges
// between them, START and END included.
type Topology struct {
	Nodes []TopoNode
	Edges []TopoEdge
}

// TopoNode is a node of a Topology.
type TopoNode struct {
	Name     string
	Deferred bool
	Cached   bool
	Retried  bool
}

// TopoEdge is an edge of a Topology.
type TopoEdge struct {
	From, To string
	// Conditional edges come from routers or Command destinations; Label
	// is the router result that selects them, if known.
	Conditional bool
	Label       string
	// Join is set for edges of a waiting edge (a join of several sources).
	Join bool
}

// Warning is a lint finding about a graph's topology.
type Warning struct {
	Node       string
	Cause      string
	Suggestion string
}

func (w Warning) String() string { return w.Node + ": " + w.Cause + " — " + w.Suggestion }

func (g *StateGraph[S]) topologyOf() Topology {
	var t Topology
	t.Nodes = append(t.Nodes, TopoNode{Name: Start})
	for _, name := range g.order {
		n := g.nodes[name]
		t.Nodes = append(t.Nodes, TopoNode{Name: name, Deferred: n.deferred, Cached: n.cache != nil, Retried: len(n.retry) > 0})
	}
	t.Nodes = append(t.Nodes, TopoNode{Name: End})
	for _, e := range g.edges {
		t.Edges = append(t.Edges, TopoEdge{From: e[0], To: e[1]})
	}
	for _, w := range g.waiting {
		for _, f := range w.from {
			t.Edges = append(t.Edges, TopoEdge{From: f, To: w.to, Join: true})
		}
	}
	srcs := make([]string, 0, len(g.branches))
	for src := range g.branches {
		srcs = append(srcs, src)
	}
	sort.Strings(srcs)
	for _, src := range srcs {
		for _, b := range g.branches[src] {
			labels := map[string][]string{}
			for label, dest := range b.pathMap {
				labels[dest] = append(labels[dest], label)
			}
			for _, dest := range b.ends {
				ls := labels[dest]
				sort.Strings(ls)
				if !slices.ContainsFunc(t.Edges, func(e TopoEdge) bool { return e.From == src && e.To == dest && e.Conditional }) {
					t.Edges = append(t.Edges, TopoEdge{From: src, To: dest, Conditional: true, Label: strings.Join(ls, ",")})
				}
			}
		}
	}
	for _, name := range g.order {
		for _, d := range g.nodes[name].destinations {
			t.Edges = append(t.Edges, TopoEdge{From: name, To: d, Conditional: true})
		}
	}
	// Routers without a path map may go anywhere: remember them for lint.
	for _, src := range srcs {
		for _, b := range g.branches[src] {
			if b.pathMap == nil {
				t.Edges = append(t.Edges, TopoEdge{From: src, To: "*", Conditional: true})
			}
		}
	}
	return t
}

// lint reports fan-ins that make a node run more than once, nodes START
// cannot reach, and nodes from which the run cannot end.
func lint(t Topology) []Warning {
	var ws []Warning
	out := map[string][]TopoEdge{}
	dynamic := map[string]bool{}
	deferred := map[string]bool{}
	for _, n := range t.Nodes {
		deferred[n.Name] = n.Deferred
	}
	for _, e := range t.Edges {
		if e.To == "*" {
			dynamic[e.From] = true
			continue
		}
		out[e.From] = append(out[e.From], e)
	}
	// Superstep distances from START (START runs at step 0).
	dist := map[string]int{Start: 0}
	queue := []string{Start}
	anyDynamic := false
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if dynamic[n] {
			anyDynamic = true
		}
		for _, e := range out[n] {
			if _, ok := dist[e.To]; !ok {
				dist[e.To] = dist[n] + 1
				queue = append(queue, e.To)
			}
		}
	}
	for _, n := range t.Nodes {
		if n.Name == Start || n.Name == End {
			continue
		}
		// Fan-in over plain edges from sources at different depths.
		if !n.Deferred {
			depths := map[int][]string{}
			for _, e := range t.Edges {
				if e.To == n.Name && !e.Join && !e.Conditional {
					if d, ok := dist[e.From]; ok {
						depths[d] = append(depths[d], e.From)
					}
				}
			}
			if len(depths) > 1 {
				var parts, srcs []string
				keys := make([]int, 0, len(depths))
				for d := range depths {
					keys = append(keys, d)
				}
				sort.Ints(keys)
				for _, d := range keys {
					sort.Strings(depths[d])
					srcs = append(srcs, depths[d]...)
					parts = append(parts, fmt.Sprintf("%s after step %d", strings.Join(depths[d], ", "), d))
				}
				ws = append(ws, Warning{
					Node:  n.Name,
					Cause: fmt.Sprintf("fan-in from paths of different lengths (%s): it will run once per arrival, %d times", strings.Join(parts, "; "), len(keys)),
					Suggestion: fmt.Sprintf("join the sources with AddJoin([]string{%q}, %q), or add the node with engine.Defer()",
						strings.Join(srcs, `", "`), n.Name),
				})
			}
		}
		if _, ok := dist[n.Name]; !ok && !anyDynamic {
			ws = append(ws, Warning{Node: n.Name, Cause: "unreachable from " + Start,
				Suggestion: "add an edge to it, or declare it with engine.Destinations if a Command routes to it"})
		}
	}
	// Nodes that can reach END (a node with no way out ends the run).
	canEnd := map[string]bool{End: true}
	for changed := true; changed; {
		changed = false
		for _, n := range t.Nodes {
			if canEnd[n.Name] {
				continue
			}
			if len(out[n.Name]) == 0 || dynamic[n.Name] || slices.ContainsFunc(out[n.Name], func(e TopoEdge) bool { return canEnd[e.To] }) {
				canEnd[n.Name] = true
				changed = true
			}
		}
	}
	for _, n := range t.Nodes {
		if n.Name != Start && !canEnd[n.Name] {
			ws = append(ws, Warning{Node: n.Name, Cause: "cannot reach " + End + ": every path from it loops, so the run stops only at the recursion limit",
				Suggestion: "add a conditional edge that can route to engine.End"})
		}
	}
	_ = deferred
	return ws
}
