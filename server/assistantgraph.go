package server

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/superstep-dev/superstep/engine"
)

// The drawing of a graph as GET /assistants/{id}/graph answers it: the
// shape LangGraph's servers give (langchain-core's Graph.to_json), which
// LangGraph Studio draws. START and END are "schema" nodes carrying the
// graph's input and output schemas; every other node is "runnable". With
// xray, a subgraph node is replaced by the subgraph's own nodes, named
// "<node>:<child>", and the edges into and out of it are joined to the
// subgraph's first and last nodes.

type graphJSON struct {
	Nodes []graphNode `json:"nodes"`
	Edges []graphEdge `json:"edges"`
}

type graphNode struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data any    `json:"data"`
	// Metadata is absent on schema nodes and an object (maybe empty) on
	// runnable ones, as upstream serialises them.
	Metadata any `json:"metadata,omitempty"`
}

type graphEdge struct {
	Source string `json:"source"`
	Target string `json:"target"`
	// Data is the router's label for a conditional edge, when it is not
	// simply the target's name.
	Data        string `json:"data,omitempty"`
	Conditional bool   `json:"conditional"`
}

// drawGraph draws g, expanding subgraphs depth levels deep (negative:
// every level).
func drawGraph(g engine.Compiled, depth int) graphJSON {
	before, after := g.Pregel().Breakpoints()
	state := stateSchema(g.ZeroState())
	return draw(g.Topology(), depth, before, after, inputSchema(state), state)
}

// draw builds the drawing of t. before and after are the breakpoints of
// t's graph; in and out the data of its START and END nodes.
func draw(t engine.Topology, depth int, before, after []string, in, out any) graphJSON {
	schema := map[string]any{engine.Start: in, engine.End: out}
	var d graphJSON
	names := map[string]bool{}
	for _, n := range t.Nodes {
		names[n.Name] = true
		if n.Name == engine.Start || n.Name == engine.End {
			d.Nodes = append(d.Nodes, graphNode{ID: n.Name, Type: "schema", Data: schema[n.Name]})
			continue
		}
		kind := "Node"
		if n.Subgraph != nil {
			kind = "Subgraph"
		}
		md := map[string]any{}
		b, a := stopsAt(before, n.Name), stopsAt(after, n.Name)
		switch {
		case b && a:
			md["__interrupt"] = "before,after"
		case b:
			md["__interrupt"] = "before"
		case a:
			md["__interrupt"] = "after"
		}
		if n.Deferred {
			md["defer"] = true
		}
		d.Nodes = append(d.Nodes, graphNode{ID: n.Name, Type: "runnable", Data: map[string]any{"id": []string{"superstep", kind}, "name": n.Name}, Metadata: md})
	}
	seen := map[[2]string]bool{}
	add := func(from, to, label string, cond bool) {
		if seen[[2]string{from, to}] || !names[from] || !names[to] {
			return
		}
		seen[[2]string{from, to}] = true
		if label == to {
			label = ""
		}
		d.Edges = append(d.Edges, graphEdge{Source: from, Target: to, Data: label, Conditional: cond})
	}
	for _, e := range t.Edges {
		if e.To != "*" {
			add(e.From, e.To, e.Label, e.Conditional)
			continue
		}
		// A router without a path map may go to any node, END included.
		for _, n := range t.Nodes {
			if n.Name != engine.Start {
				add(e.From, n.Name, "", true)
			}
		}
	}
	if depth == 0 {
		return d
	}
	for _, n := range t.Nodes {
		if n.Subgraph != nil {
			keys := keysSchema(*n.Subgraph)
			d = expand(d, n.Name, draw(*n.Subgraph, depth-1, nil, nil, keys, keys))
		}
	}
	return d
}

// stopsAt reports whether a breakpoint list names node ("*": every node).
func stopsAt(list []string, node string) bool {
	return slices.Contains(list, node) || slices.Contains(list, "*")
}

// expand replaces node name of g by the drawing sub. sub's START is left
// out when one node alone follows it, and its END when one node alone
// precedes it; edges into the node then go to that first node, edges out
// of it leave from that last one (else from the kept START and END).
func expand(g graphJSON, name string, sub graphJSON) graphJSON {
	first := rootOf(sub, "")
	last := leafOf(sub, "")
	if first == "" || last == "" {
		return g // not a single-entry, single-exit drawing: kept whole
	}
	if f := rootOf(sub, first); f != "" && len(sub.Nodes) > 1 {
		sub = without(sub, first)
		first = f
	}
	if l := leafOf(sub, last); l != "" && len(sub.Nodes) > 1 {
		sub = without(sub, last)
		last = l
	}
	prefix := name + ":"
	var nodes []graphNode
	for _, n := range g.Nodes {
		if n.ID != name {
			nodes = append(nodes, n)
			continue
		}
		for _, s := range sub.Nodes {
			s.ID = prefix + s.ID
			nodes = append(nodes, s)
		}
	}
	var edges []graphEdge
	for _, e := range g.Edges {
		if e.Source == name {
			e.Source = prefix + last
		}
		if e.Target == name {
			e.Target = prefix + first
		}
		edges = append(edges, e)
	}
	for _, e := range sub.Edges {
		e.Source, e.Target = prefix+e.Source, prefix+e.Target
		edges = append(edges, e)
	}
	return graphJSON{Nodes: nodes, Edges: edges}
}

// rootOf is the one node no edge leads to (edges from exclude ignored,
// exclude itself skipped), or "" when there is none or several.
func rootOf(g graphJSON, exclude string) string {
	targets := map[string]bool{}
	for _, e := range g.Edges {
		if e.Source != exclude {
			targets[e.Target] = true
		}
	}
	return single(g, exclude, targets)
}

// leafOf is the one node no edge leaves (as rootOf, reversed).
func leafOf(g graphJSON, exclude string) string {
	sources := map[string]bool{}
	for _, e := range g.Edges {
		if e.Target != exclude {
			sources[e.Source] = true
		}
	}
	return single(g, exclude, sources)
}

func single(g graphJSON, exclude string, linked map[string]bool) string {
	found := ""
	for _, n := range g.Nodes {
		if n.ID == exclude || linked[n.ID] {
			continue
		}
		if found != "" {
			return ""
		}
		found = n.ID
	}
	return found
}

// without drops a node and its edges.
func without(g graphJSON, id string) graphJSON {
	var out graphJSON
	for _, n := range g.Nodes {
		if n.ID != id {
			out.Nodes = append(out.Nodes, n)
		}
	}
	for _, e := range g.Edges {
		if e.Source != id && e.Target != id {
			out.Edges = append(out.Edges, e)
		}
	}
	return out
}

// graphSchemas are the schemas GET /assistants/{id}/schemas answers. A
// graph reads, writes and keeps one state type, so input, output and
// state share its schema, but for input no key is required: a run's input
// is an update of any of them. Graphs take no configuration or context
// schema.
func graphSchemas(g engine.Compiled) map[string]any {
	s := stateSchema(g.ZeroState())
	return map[string]any{"input_schema": inputSchema(s), "output_schema": s, "state_schema": s, "config_schema": nil, "context_schema": nil}
}

// inputSchema is a state schema with no key required.
func inputSchema(state map[string]any) map[string]any {
	in := make(map[string]any, len(state))
	for k, v := range state {
		if k != "required" {
			in[k] = v
		}
	}
	return in
}

// stateSchema is the JSON Schema of a graph's state: reflected from the
// state type for a StateGraph; for a low-level graph, whose input is a
// map of channels, an object with a property per input channel.
func stateSchema(zero any) (out map[string]any) {
	defer func() {
		// A state type the reflector cannot describe still gets a schema
		// a client can use: an object.
		if recover() != nil {
			out = map[string]any{"type": "object"}
		}
	}()
	r := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, AllowAdditionalProperties: true}
	if m, ok := zero.(map[string]any); ok {
		props := map[string]any{}
		for k, v := range m {
			props[k] = map[string]any{}
			if v != nil {
				props[k] = schemaMap(r.ReflectFromType(reflect.TypeOf(v)))
			}
		}
		return map[string]any{"$schema": jsonschema.Version, "type": "object", "properties": props}
	}
	t := reflect.TypeOf(zero)
	if t == nil {
		return map[string]any{"type": "object"}
	}
	s := schemaMap(r.ReflectFromType(t))
	if _, ok := s["title"]; !ok && t.Name() != "" {
		s["title"] = t.Name()
	}
	return s
}

// schemaMap turns a reflected schema into plain JSON, without the
// reflector's $id (a Go import path, meaningless to a client).
func schemaMap(s *jsonschema.Schema) map[string]any {
	b, err := json.Marshal(s)
	out := map[string]any{}
	if err != nil || json.Unmarshal(b, &out) != nil {
		return map[string]any{"type": "object"}
	}
	delete(out, "$id")
	return out
}

// keysSchema describes a subgraph whose state type is out of reach (a
// topology only holds names): an object with the channels its nodes
// write.
func keysSchema(t engine.Topology) map[string]any {
	props := map[string]any{}
	for _, n := range t.Nodes {
		for _, k := range n.Writes {
			props[k] = map[string]any{}
		}
	}
	return map[string]any{"type": "object", "properties": props}
}

// subgraphSchemas answers GET /assistants/{id}/subgraphs: the schemas of
// the subgraphs of t by namespace, nested ones as "parent|child" when
// recurse. A namespace selects the subgraph at that path alone ({} when
// there is none).
func subgraphSchemas(t engine.Topology, namespace string, recurse bool) map[string]any {
	out := map[string]any{}
	var walk func(t engine.Topology, prefix string, path []string)
	walk = func(t engine.Topology, prefix string, path []string) {
		for _, n := range t.Nodes {
			if n.Subgraph == nil || (len(path) > 0 && path[0] != n.Name) {
				continue
			}
			ns := prefix + n.Name
			if len(path) == 1 {
				out[ns] = subgraphSchema(*n.Subgraph)
				continue
			}
			if len(path) == 0 {
				out[ns] = subgraphSchema(*n.Subgraph)
				if !recurse {
					continue
				}
			}
			var rest []string
			if len(path) > 1 {
				rest = path[1:]
			}
			walk(*n.Subgraph, ns+"|", rest)
		}
	}
	var path []string
	if namespace != "" {
		path = strings.Split(namespace, "|")
	}
	walk(t, "", path)
	return out
}

func subgraphSchema(t engine.Topology) map[string]any {
	s := keysSchema(t)
	return map[string]any{"input_schema": s, "output_schema": s, "state_schema": s, "config_schema": nil, "context_schema": nil}
}
