package engine

import "slices"

// What a compiled graph tells about each of its nodes beyond the drawing:
// the Studio's node details panel shows it, so a person can see why a node
// ran (its triggers), what it saw (reads), what it may change (writes) and
// how failures and repeats are handled (retry and cache policies) without
// reading the graph's code.

// retryOf is the retry policy node n runs with: its own, else the graph's
// default (the loop's choice, task.go).
func (g *Pregel) retryOf(n *Node) []RetryPolicy {
	if len(n.Retry) > 0 {
		return slices.Clone(n.Retry)
	}
	return slices.Clone(g.cfg.Retry)
}

// describeNode fills tn with what the compiled node n declares. Writes
// lists the channels of the node's WriteEntry writers; other writers
// (WriteTuple, a StateGraph's state writer) decide at run time.
func (g *Pregel) describeNode(tn *TopoNode, n *Node) {
	tn.Triggers = slices.Clone(n.Triggers)
	tn.Reads = slices.Clone(n.Channels)
	for _, w := range n.Writers {
		if e, ok := w.(WriteEntry); ok && !slices.Contains(tn.Writes, e.Channel) {
			tn.Writes = append(tn.Writes, e.Channel)
		}
	}
	tn.Retry = g.retryOf(n)
	tn.Cache = n.Cache
}

// describe fills the nodes of t, a StateGraph's topology, from the graph p
// it compiled to. Triggers and policies are the compiled node's; reads are
// the state keys of the node's input type (none when only Sends deliver
// its input); writes are every state key, since an update may hold any.
func (g *StateGraph[S]) describe(t *Topology, p *Pregel) {
	keys := make([]string, 0, len(g.fields))
	for _, f := range g.fields {
		keys = append(keys, f.name)
	}
	for i := range t.Nodes {
		tn := &t.Nodes[i]
		pn, sn := p.nodes[tn.Name], g.nodes[tn.Name]
		if pn == nil || sn == nil {
			continue // START and END
		}
		tn.Triggers = slices.Clone(pn.Triggers)
		tn.Reads = nil
		if sn.plan != nil && !sn.plan.raw {
			for _, f := range sn.plan.fields {
				tn.Reads = append(tn.Reads, f.channel)
			}
		}
		tn.Writes = slices.Clone(keys)
		tn.Retry = p.retryOf(pn)
		tn.Cache = pn.Cache
	}
}
