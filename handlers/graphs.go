package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/web"
)

// DefaultRecursionLimit prefills the start form: 25, what LangGraph
// Studio and LangGraph.js use, so a loop that never ends in a run started
// by hand stops after a few seconds of steps. The engine's own default
// (engine.DefaultRecursionLimit, Python LangGraph's 10007) still applies
// to runs started without a limit, e.g. from code.
const DefaultRecursionLimit = web.DefaultFormRecursionLimit

// GraphList answers GET /graphs: every registered graph with its node
// count and lint warnings.
func GraphList(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v web.GraphsView
		for _, name := range rt.Runs.GraphNames() {
			g, err := rt.Runs.Graph(name)
			if err != nil {
				fail(w, r, rt.Logger, err)
				return
			}
			v.Graphs = append(v.Graphs, web.GraphRow{Name: name, Nodes: len(g.Pregel().NodeNames()), Warnings: warningViews(g.Warnings())})
		}
		render(w, r, rt.Logger, http.StatusOK, web.Graphs(v))
	})
}

// GraphPage answers GET /graphs/{graph}: the graph drawn on the server,
// its warnings, and a start-run form prefilled from the state type.
// ?expand=<subgraph node> (repeatable; nested ones as "outer:inner") draws
// those subgraphs open, so every expanded view has its own URL; a value
// that names no subgraph node is a 400 saying which (see ParseExpand).
func GraphPage(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g, err := rt.Runs.Graph(chi.URLParam(r, "graph"))
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		v, err := graphView(r, rt, chi.URLParam(r, "graph"), g)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		v.Input = prefill(g.ZeroState())
		if in, ok := rt.Inputs[chi.URLParam(r, "graph")]; ok {
			v.Input = prettyJSON(in)
		}
		v.RecursionLimit = DefaultRecursionLimit
		render(w, r, rt.Logger, http.StatusOK, web.Graph(v))
	})
}

// StartRun answers POST /graphs/{graph}/runs: it starts a run and
// redirects to its thread. A refused start re-renders the form with what
// the person typed and what was wrong (400 bad input, 409 busy thread).
func StartRun(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := chi.URLParam(r, "graph")
		g, err := rt.Runs.Graph(name)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		if err := parseForm(r); err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		thread := strings.TrimSpace(r.PostForm.Get("thread"))
		rawInput := r.PostForm.Get("input")
		before, after := g.Pregel().Breakpoints()
		opts := runs.StartOptions{
			InterruptBefore: withCompiled(r.PostForm["interrupt_before"], before),
			InterruptAfter:  withCompiled(r.PostForm["interrupt_after"], after),
		}
		refuse := func(err error) {
			code := statusOf(err)
			if code >= 500 {
				fail(w, r, rt.Logger, err)
				return
			}
			v, verr := graphView(r, rt, name, g)
			if verr != nil {
				fail(w, r, rt.Logger, verr)
				return
			}
			v.Thread, v.Input, v.Error = thread, rawInput, err.Error()
			v.InterruptBefore, v.InterruptAfter = opts.InterruptBefore, opts.InterruptAfter
			v.RecursionLimit = opts.RecursionLimit
			if v.RecursionLimit <= 0 {
				v.RecursionLimit = DefaultRecursionLimit
			}
			render(w, r, rt.Logger, code, web.Graph(v))
		}
		if lim := strings.TrimSpace(r.PostForm.Get("recursion_limit")); lim != "" {
			n, err := strconv.Atoi(lim)
			if err != nil {
				refuse(fmt.Errorf("%w: recursion limit %q is not a whole number", runs.ErrInvalidInput, lim))
				return
			}
			opts.RecursionLimit = n
		}
		var input map[string]any
		if strings.TrimSpace(rawInput) != "" {
			input, err = DecodeJSONObject(rawInput)
			if err != nil {
				refuse(fmt.Errorf("input: %w", err))
				return
			}
		}
		th, err := rt.Runs.Start(r.Context(), name, thread, input, opts)
		if err != nil {
			refuse(err)
			return
		}
		http.Redirect(w, r, "/threads/"+th.ID, http.StatusSeeOther)
	})
}

// withCompiled is a run's breakpoints as the start form asks for them:
// none ticked (nil) leaves the compiled ones in force, as the engine does;
// otherwise the ticked ones are added to the compiled ones, because the
// engine's per-run list replaces the compiled list and the form shows the
// compiled breakpoints as fixed.
func withCompiled(posted, compiled []string) []string {
	if posted == nil {
		return nil
	}
	out := slices.Clone(compiled)
	for _, n := range posted {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// recentThreads is how many of a graph's threads its page lists, the
// most recently updated; the threads page lists them all.
const recentThreads = 10

// graphView is the graph page for request r: the picture with the
// subgraphs of r's ?expand= open, the toggles, and the form with the
// compiled breakpoints fixed.
func graphView(r *http.Request, rt Routes, name string, g engine.Compiled) (web.GraphView, error) {
	topo := g.Topology()
	expand, err := ParseExpand(topo, r.URL.Query()["expand"])
	if err != nil {
		return web.GraphView{}, err
	}
	base := "/graphs/" + url.PathEscape(name)
	svg, err := CompiledSVG(r.Context(), g, expand, base)
	if err != nil {
		return web.GraphView{}, err
	}
	v := web.GraphView{Name: name, SVG: string(svg), Warnings: warningViews(g.Warnings()),
		Subgraphs: subgraphList(topo, expand, base), Action: expandHref(base+"/runs", expand), Details: nodePath(base, ""),
		EngineRecursionLimit: engine.DefaultRecursionLimit}
	if in, ok := rt.Inputs[name]; ok {
		b, err := json.Marshal(in)
		if err != nil {
			return web.GraphView{}, fmt.Errorf("example input of %s: %w", name, err)
		}
		v.TryInput = string(b)
	}
	if len(expand) > 0 {
		v.CollapseAll = base
	}
	v.CompiledBefore, v.CompiledAfter = g.Pregel().Breakpoints()
	for _, n := range g.Pregel().NodeNames() {
		if n != engine.Start && n != engine.End {
			v.Nodes = append(v.Nodes, n)
		}
	}
	v.Nodes = append(v.Nodes, innerNodes(topo, "", expand)...)
	// A registry that cannot be read is an error, not "no threads".
	ts, err := rt.Runs.ListThreads(r.Context(), runs.ThreadFilter{Graph: name, Limit: recentThreads})
	if err != nil {
		return web.GraphView{}, err
	}
	v.Threads = threadRows(ts, recentThreads)
	return v, nil
}

// subgraphList lists the subgraph nodes a person can see in the
// drawing of topo with the subgraphs in expand open (those at the top and
// those inside open subgraphs), depth first, each with the link that
// opens or closes it on the page at base (for web.SubgraphList).
func subgraphList(topo engine.Topology, expand []string, base string) []web.SubgraphToggle {
	return subgraphToggles(topo, "", 0, expand, base)
}

func subgraphToggles(topo engine.Topology, prefix string, depth int, expand []string, base string) []web.SubgraphToggle {
	var out []web.SubgraphToggle
	for _, n := range topo.Nodes {
		if !expandable(n) {
			continue
		}
		q := qualify(prefix, n.Name)
		open := slices.Contains(expand, q)
		out = append(out, web.SubgraphToggle{Path: q, Depth: depth, Nodes: len(n.Subgraph.Nodes) - terminals(*n.Subgraph),
			Expanded: open, Href: toggleHref(base, expand, q)})
		if open {
			out = append(out, subgraphToggles(*n.Subgraph, q, depth+1, expand, base)...)
		}
	}
	return out
}

// innerNodes lists, by qualified name, the nodes inside the open
// subgraphs (expand) of topo, whose qualified name is prefix: the
// breakpoint picker offers them once a person opened their subgraph.
func innerNodes(topo engine.Topology, prefix string, expand []string) []string {
	var out []string
	for _, n := range topo.Nodes {
		q := qualify(prefix, n.Name)
		if !expandable(n) || !slices.Contains(expand, q) {
			continue
		}
		for _, in := range n.Subgraph.Nodes {
			if in.Name != engine.Start && in.Name != engine.End {
				out = append(out, qualify(q, in.Name))
			}
		}
		out = append(out, innerNodes(*n.Subgraph, q, expand)...)
	}
	return out
}

func warningViews(ws []engine.Warning) []web.WarningView {
	out := make([]web.WarningView, 0, len(ws))
	for _, w := range ws {
		out = append(out, web.WarningView{Node: w.Node, Cause: w.Cause, Suggestion: w.Suggestion})
	}
	return out
}

// prefill is the start form's input: the zero state as indented JSON, with
// nil lists and maps shown as [] and {} so a person sees each field's
// shape and can start the run as it is.
func prefill(zero any) string {
	v := reflect.ValueOf(zero)
	if v.Kind() == reflect.Struct {
		c := reflect.New(v.Type()).Elem()
		c.Set(v)
		for i := range c.NumField() {
			f := c.Field(i)
			switch {
			case !f.CanSet():
			case f.Kind() == reflect.Slice && f.IsNil():
				f.Set(reflect.MakeSlice(f.Type(), 0, 0))
			case f.Kind() == reflect.Map && f.IsNil():
				f.Set(reflect.MakeMap(f.Type()))
			}
		}
		zero = c.Interface()
	}
	b, err := json.MarshalIndent(zero, "", "  ")
	if err != nil {
		return "{}"
	}
	return string(b)
}
