package engine

import (
	"reflect"
	"slices"
)

// Pregel implements Compiled, so low-level graphs can be shown and run by
// the same tools as StateGraphs.
var _ Compiled = (*Pregel)(nil)

// Pregel returns g itself (Compiled).
func (g *Pregel) Pregel() *Pregel { return g }

// Warnings reports no lint findings for low-level graphs: their topology
// is data-driven (a node's writers decide at run time), so the fan-in lint
// of StateGraph does not apply.
func (g *Pregel) Warnings() []Warning { return nil }

// ZeroState is an input form's starting point: a map from each input
// channel to the zero value of its type (see Invoke for map input).
func (g *Pregel) ZeroState() any {
	out := map[string]any{}
	for _, c := range g.cfg.InputChannels {
		if t := g.cfg.ChannelTypes[c]; t != nil {
			out[c] = reflect.Zero(t).Interface()
		} else {
			out[c] = nil
		}
	}
	return out
}

// Topology derives the drawing of a low-level graph: Start feeds the nodes
// triggered by the input channels; a node's write entries lead to the nodes
// those channels trigger (conditional edges, since writes can be skipped);
// writes to output channels lead to End.
func (g *Pregel) Topology() Topology {
	var t Topology
	t.Nodes = append(t.Nodes, TopoNode{Name: Start})
	for _, name := range g.nodeNames {
		n := g.nodes[name]
		tn := TopoNode{Name: name, Cached: n.Cache != nil, Retried: len(n.Retry) > 0}
		g.describeNode(&tn, n)
		t.Nodes = append(t.Nodes, tn)
	}
	t.Nodes = append(t.Nodes, TopoNode{Name: End})
	add := func(e TopoEdge) {
		if !slices.Contains(t.Edges, e) {
			t.Edges = append(t.Edges, e)
		}
	}
	for _, c := range g.cfg.InputChannels {
		for _, to := range g.triggerToNodes[c] {
			add(TopoEdge{From: Start, To: to, Label: c})
		}
	}
	for _, name := range g.nodeNames {
		for _, w := range g.nodes[name].Writers {
			e, ok := w.(WriteEntry)
			if !ok {
				continue
			}
			for _, to := range g.triggerToNodes[e.Channel] {
				add(TopoEdge{From: name, To: to, Conditional: true, Label: e.Channel})
			}
			if slices.Contains(g.cfg.OutputChannels, e.Channel) {
				add(TopoEdge{From: name, To: End, Label: e.Channel})
			}
		}
	}
	return t
}
