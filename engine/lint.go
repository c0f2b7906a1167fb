package engine

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
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
	// Subgraph is the topology of the graph the node runs, for nodes added
	// with AddSubgraph (nil otherwise): viewers can expand it in place.
	Subgraph *Topology
	// Triggers are the channels whose update runs the node (a StateGraph's
	// internal branch:to:<node> and join channels included).
	Triggers []string
	// Reads are the channels the node's input is built from. A StateGraph
	// node reads the state keys of its input type (all of them for a node
	// over the whole state); a node whose input is not a struct over
	// state keys reads none: only Sends deliver its input.
	Reads []string
	// Writes are the channels the node may write. A StateGraph node's
	// update may hold any state key, so it lists them all; which ones a
	// run wrote is in that run's events and checkpoints.
	Writes []string
	// Retry is the retry policy the node runs with (its own, else the
	// graph's default; empty: no retries). Cache is its cache policy (nil:
	// not cached).
	Retry []RetryPolicy
	Cache *CachePolicy
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
	// Send marks a Send fan-out the source declared with SendTargets: the
	// target runs once per Send, with the Send's argument as its input.
	// Send edges are also Conditional (a router decides how many, if any).
	Send bool
}

// WarningKind classifies a lint finding.
type WarningKind string

// The lint findings.
const (
	// WarnFanIn: a node reached from paths of different lengths runs once
	// per arrival (the classic "node runs twice").
	WarnFanIn WarningKind = "fan-in"
	// WarnUnreachable: no path from Start reaches the node.
	WarnUnreachable WarningKind = "unreachable"
	// WarnCannotEnd: every path from the node loops; the run stops only
	// at the recursion limit.
	WarnCannotEnd WarningKind = "cannot-end"
)

// Warning is a lint finding about a graph's topology.
type Warning struct {
	Kind       WarningKind
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
		tn := TopoNode{Name: name, Deferred: n.deferred, Cached: n.cache != nil, Retried: len(n.retry) > 0}
		if n.subCompiled != nil {
			sub := n.subCompiled.Topology()
			tn.Subgraph = &sub
		}
		t.Nodes = append(t.Nodes, tn)
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
		for _, d := range g.nodes[name].sendTargets {
			t.Edges = append(t.Edges, TopoEdge{From: name, To: d, Conditional: true, Send: true, Label: "Send"})
		}
	}
	// Routers without a path map may go anywhere: remember them for lint,
	// unless their node declared where it Sends (SendTargets), which says
	// the router fans out with Sends only.
	for _, src := range srcs {
		if src != Start && len(g.nodes[src].sendTargets) > 0 {
			continue
		}
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
	depths, back := arrivalDepths(t, out)
	forks := fanOuts(t, out, back)
	for _, n := range t.Nodes {
		if n.Name == Start || n.Name == End {
			continue
		}
		// Fan-in: two or more sources that can fire at different
		// supersteps (over every acyclic path, conditional branches
		// included) make the node run once per arrival.
		if !n.Deferred {
			bySource := map[string]map[int]bool{}
			for _, e := range t.Edges {
				if e.To != n.Name || e.Join || back[[2]string{e.From, e.To}] {
					continue
				}
				for d := range depths[e.From] {
					if bySource[e.From] == nil {
						bySource[e.From] = map[int]bool{}
					}
					bySource[e.From][d] = true
				}
			}
			all := map[int][]string{}
			for src, ds := range bySource {
				for d := range ds {
					all[d] = append(all[d], src)
				}
			}
			if len(bySource) > 1 && len(all) > 1 && anyParallel(n.Name, bySource, forks) {
				keys := make([]int, 0, len(all))
				for d := range all {
					keys = append(keys, d)
				}
				sort.Ints(keys)
				var parts []string
				for _, d := range keys {
					sort.Strings(all[d])
					parts = append(parts, fmt.Sprintf("%s after step %d", strings.Join(all[d], ", "), d))
				}
				srcs := make([]string, 0, len(bySource))
				for src := range bySource {
					srcs = append(srcs, strconv.Quote(src))
				}
				sort.Strings(srcs)
				ws = append(ws, Warning{
					Kind: WarnFanIn,
					Node: n.Name,
					Cause: fmt.Sprintf("fan-in from paths of different lengths (%s): it may run once per arrival, and every node after it too",
						strings.Join(parts, "; ")),
					Suggestion: fmt.Sprintf("join the sources with AddJoin([]string{%s}, %q), or add the node with engine.Defer()",
						strings.Join(srcs, ", "), n.Name),
				})
			}
		}
		if _, ok := dist[n.Name]; !ok && !anyDynamic {
			ws = append(ws, Warning{Kind: WarnUnreachable, Node: n.Name, Cause: "unreachable from " + Start,
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
			ws = append(ws, Warning{Kind: WarnCannotEnd, Node: n.Name, Cause: "cannot reach " + End + ": every path from it loops, so the run stops only at the recursion limit",
				Suggestion: "add a conditional edge that can route to engine.End"})
		}
	}
	return ws
}

// fanOut is a node with several plain out-edges: the only place where
// branches that both run in the same superstep sequence begin.
type fanOut struct {
	node  string
	reach []map[string]bool // per plain successor: the nodes it reaches
	succ  []string
}

func fanOuts(t Topology, out map[string][]TopoEdge, back map[[2]string]bool) []fanOut {
	reach := func(from string) map[string]bool {
		seen := map[string]bool{from: true}
		stack := []string{from}
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, e := range out[n] {
				if !seen[e.To] && !back[[2]string{n, e.To}] {
					seen[e.To] = true
					stack = append(stack, e.To)
				}
			}
		}
		return seen
	}
	var fs []fanOut
	for _, n := range t.Nodes {
		var succ []string
		for _, e := range out[n.Name] {
			if !e.Conditional && !slices.Contains(succ, e.To) {
				succ = append(succ, e.To)
			}
		}
		if len(succ) < 2 {
			continue
		}
		f := fanOut{node: n.Name, succ: succ}
		for _, s := range succ {
			f.reach = append(f.reach, reach(s))
		}
		fs = append(fs, f)
	}
	return fs
}

// anyParallel reports whether two of n's sources sit on different plain
// branches of one fan-out, so that both can arrive in the same run (router
// alternatives are exclusive and do not count).
func anyParallel(n string, sources map[string]map[int]bool, forks []fanOut) bool {
	on := func(f fanOut, i int, src string) bool {
		return f.reach[i][src] || (src == f.node && f.succ[i] == n)
	}
	for p := range sources {
		for q := range sources {
			if p >= q {
				continue
			}
			for _, f := range forks {
				for i := range f.succ {
					for j := range f.succ {
						if i != j && on(f, i, p) && on(f, j, q) {
							return true
						}
					}
				}
			}
		}
	}
	return false
}

// arrivalDepths gives, for each node, every superstep at which it can run
// over acyclic paths from Start, and the back edges (those closing a
// cycle), which loops use on purpose and which the fan-in check ignores.
func arrivalDepths(t Topology, out map[string][]TopoEdge) (map[string]map[int]bool, map[[2]string]bool) {
	back := map[[2]string]bool{}
	state := map[string]int{} // 1 = on the DFS stack, 2 = done
	var order []string
	var visit func(n string)
	visit = func(n string) {
		state[n] = 1
		for _, e := range out[n] {
			switch state[e.To] {
			case 1:
				back[[2]string{n, e.To}] = true
			case 0:
				visit(e.To)
			}
		}
		state[n] = 2
		order = append(order, n)
	}
	visit(Start)
	depths := map[string]map[int]bool{Start: {0: true}}
	const maxDepths = 64 // enough to tell lengths apart, bounded for huge graphs
	for i := len(order) - 1; i >= 0; i-- {
		n := order[i]
		for _, e := range out[n] {
			if back[[2]string{n, e.To}] {
				continue
			}
			if depths[e.To] == nil {
				depths[e.To] = map[int]bool{}
			}
			for d := range depths[n] {
				if len(depths[e.To]) < maxDepths {
					depths[e.To][d+1] = true
				}
			}
		}
	}
	return depths, back
}
