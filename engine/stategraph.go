package engine

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine/channels"
	"github.com/superstep-dev/superstep/store"
)

// StateGraph builds a graph over a typed state S, a struct whose json-tagged
// fields are the state's channels. A field is a LastValue channel (one
// write per superstep) unless it declares a reducer, with the struct tag
// `reduce:"append"` or `reduce:"add"` (or a name registered with
// RegisterReducer, such as models' "add_messages"), or with
// StateGraph.Reducer.
//
// Nodes receive the state (or, with AddNodeFunc, another struct whose
// fields are a subset of the state's) and return an Output: an Update keyed
// by json names, Updates, a Command, or nil. Builder errors are collected
// and returned by Compile.
type StateGraph[S any] struct {
	fields   []stateField
	byName   map[string]int
	nodes    map[string]*sgNode
	order    []string
	edges    [][2]string
	waiting  []waitingEdge
	branches map[string][]*sgBranch[S]
	errs     []error
	// branchChan maps a node to its "branch:to:<node>" channel name, so
	// routing does not build the string every superstep.
	branchChan map[string]string
}

type stateField struct {
	name    string
	index   int
	typ     reflect.Type
	reducer channels.Reducer
	channel channels.Channel
	// fillsIDs: writes to the key may hold values that need ids
	// (fillMissingIDs).
	fillsIDs bool
}

type sgNode struct {
	name         string
	fn           func(ctx context.Context, in any) (Output, error)
	fnW          writesFunc // set instead of fn's own work: AddNodeWrites
	inType       reflect.Type
	plan         *inputPlan
	retry        []RetryPolicy
	cache        *CachePolicy
	deferred     bool
	destinations []string
	sendTargets  []string
	identity     string
	subgraph     *Pregel
	subCompiled  Compiled // the subgraph as given, for its topology
}

type waitingEdge struct {
	from []string
	to   string
}

// Route is what a conditional edge's router returns: nodes to run next
// and Sends to schedule.
type Route struct {
	To    []string
	Sends []Send
	// one holds a single destination without a slice: routing to one node
	// is the common case and runs every superstep.
	one string
}

// asValue unboxes a T given as a T or as a *T (the state builder returns a
// pointer: boxing the pointer costs no allocation, boxing a copy would).
func asValue[T any](in any) (T, bool) {
	switch v := in.(type) {
	case T:
		return v, true
	case *T:
		if v != nil {
			return *v, true
		}
	}
	var zero T
	return zero, false
}

// To routes to the named nodes (End stops the branch). The first node is
// a separate parameter so that routing to one node, which most routers do
// every superstep, allocates nothing; route to a slice of names with
// Route{To: names}.
func To(node string, more ...string) Route {
	if len(more) == 0 {
		return Route{one: node}
	}
	return Route{To: append([]string{node}, more...)}
}

// destinations calls f for each destination of the route.
func (r Route) destinations(f func(string) error) error {
	if r.one != "" {
		if err := f(r.one); err != nil {
			return err
		}
	}
	for _, d := range r.To {
		if err := f(d); err != nil {
			return err
		}
	}
	return nil
}

// SendTo routes by scheduling Sends.
func SendTo(sends ...Send) Route { return Route{Sends: sends} }

type sgBranch[S any] struct {
	router  func(context.Context, S) (Route, error)
	pathMap map[string]string
	ends    []string
}

// NewStateGraph starts a graph over state S.
func NewStateGraph[S any]() *StateGraph[S] {
	g := &StateGraph[S]{byName: map[string]int{}, nodes: map[string]*sgNode{}, branches: map[string][]*sgBranch[S]{}}
	t := reflect.TypeFor[S]()
	if t.Kind() != reflect.Struct {
		g.errs = append(g.errs, fmt.Errorf("%w: state type %s must be a struct", ErrInvalidGraph, t))
		return g
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, ok := jsonName(f)
		if !ok {
			continue
		}
		sf := stateField{name: name, index: i, typ: f.Type, fillsIDs: fillsIDs(f.Type)}
		if tag := f.Tag.Get("reduce"); tag != "" {
			r, ok := namedReducer(tag)
			if !ok {
				g.errs = append(g.errs, fmt.Errorf("%w: field %s: unknown reducer %q (use \"append\", \"add\", one a package registered with RegisterReducer, or StateGraph.Reducer)", ErrInvalidGraph, f.Name, tag))
			}
			sf.reducer = r
		}
		if reservedName(name) {
			g.errs = append(g.errs, fmt.Errorf("%w: state key %q is reserved", ErrInvalidGraph, name))
		}
		g.byName[name] = len(g.fields)
		g.fields = append(g.fields, sf)
	}
	if len(g.fields) == 0 {
		g.errs = append(g.errs, fmt.Errorf("%w: state type %s has no exported fields", ErrInvalidGraph, t))
	}
	return g
}

func jsonName(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, true
}

func reservedName(n string) bool {
	return n == Start || n == End || strings.HasPrefix(n, "__") || strings.HasPrefix(n, branchPrefix) || strings.HasPrefix(n, joinPrefix)
}

// Reducer declares (or replaces) the reducer of a state key.
func (g *StateGraph[S]) Reducer(key string, r channels.Reducer) *StateGraph[S] {
	i, ok := g.byName[key]
	if !ok {
		g.errs = append(g.errs, fmt.Errorf("%w: Reducer: unknown state key %q", ErrInvalidGraph, key))
		return g
	}
	g.fields[i].reducer = r
	return g
}

// Channel makes a state key use a channel of your choice (a Topic, an
// EphemeralValue, an UntrackedValue...).
func (g *StateGraph[S]) Channel(key string, ch channels.Channel) *StateGraph[S] {
	i, ok := g.byName[key]
	if !ok {
		g.errs = append(g.errs, fmt.Errorf("%w: Channel: unknown state key %q", ErrInvalidGraph, key))
		return g
	}
	g.fields[i].channel = ch
	return g
}

// NodeOption configures a node.
type NodeOption func(*sgNode)

// WithRetry sets the node's retry policies.
func WithRetry(p ...RetryPolicy) NodeOption { return func(n *sgNode) { n.retry = p } }

// WithCache caches the node's writes by input.
func WithCache(p CachePolicy) NodeOption { return func(n *sgNode) { n.cache = &p } }

// Defer runs the node only when nothing else is left to run (the run
// would otherwise end), so fan-ins of unequal length meet there once.
func Defer() NodeOption { return func(n *sgNode) { n.deferred = true } }

// Destinations declares where a node may route with Command.Goto, for
// drawing and lint.
func Destinations(nodes ...string) NodeOption {
	return func(n *sgNode) { n.destinations = append(n.destinations, nodes...) }
}

// SendTargets declares the nodes a node's routers (or its Command.Goto)
// fan out to with Sends, for drawing and lint: the Studio draws a
// labelled Send edge from the node to each target, and a router without
// a path map on such a node is taken to route by Sends only (so lint
// still checks what the rest of the graph reaches). Like Destinations it
// does not restrict what a run may Send.
func SendTargets(nodes ...string) NodeOption {
	return func(n *sgNode) { n.sendTargets = append(n.sendTargets, nodes...) }
}

// Identity names the node's function for the cache namespace (default: the
// node name), so entries survive renames of the Go function.
func Identity(id string) NodeOption { return func(n *sgNode) { n.identity = id } }

// AddNode adds a node that receives the whole state.
func (g *StateGraph[S]) AddNode(name string, fn func(ctx context.Context, state S) (Output, error), opts ...NodeOption) *StateGraph[S] {
	return AddNodeFunc(g, name, fn, opts...)
}

// AddNodeFunc adds a node whose input is T: a struct whose json fields are
// state keys (read from the state), or any type a Send delivers.
func AddNodeFunc[S, T any](g *StateGraph[S], name string, fn func(ctx context.Context, in T) (Output, error), opts ...NodeOption) *StateGraph[S] {
	if fn == nil {
		g.errs = append(g.errs, fmt.Errorf("%w: node %q has a nil function", ErrInvalidGraph, name))
		return g
	}
	return g.addNode(name, reflect.TypeFor[T](), func(ctx context.Context, in any) (Output, error) {
		v, ok := asValue[T](in)
		if !ok {
			return nil, fmt.Errorf("%w: node %q received %T, want %s", ErrInvalidUpdate, name, in, reflect.TypeFor[T]())
		}
		return fn(ctx, v)
	}, nil, opts)
}

// addNode adds a node running fn, or fnW when it is set (AddNodeWrites).
func (g *StateGraph[S]) addNode(name string, in reflect.Type, fn func(context.Context, any) (Output, error), fnW writesFunc, opts []NodeOption) *StateGraph[S] {
	switch {
	case name == "" || reservedName(name):
		g.errs = append(g.errs, fmt.Errorf("%w: node name %q is empty or reserved", ErrInvalidGraph, name))
		return g
	case strings.ContainsAny(name, ":|"):
		g.errs = append(g.errs, fmt.Errorf("%w: node name %q contains ':' or '|', which separate checkpoint namespaces", ErrInvalidGraph, name))
		return g
	case g.nodes[name] != nil:
		g.errs = append(g.errs, fmt.Errorf("%w: node %q is added twice", ErrInvalidGraph, name))
		return g
	}
	if _, clash := g.byName[name]; clash {
		g.errs = append(g.errs, fmt.Errorf("%w: node %q has the name of a state key", ErrInvalidGraph, name))
		return g
	}
	n := &sgNode{name: name, fn: fn, fnW: fnW, inType: in}
	for _, o := range opts {
		o(n)
	}
	plan, err := newInputPlan(in, g.byName)
	if err != nil {
		g.errs = append(g.errs, fmt.Errorf("%w: node %q: %v", ErrInvalidGraph, name, err))
		return g
	}
	n.plan = plan
	g.nodes[name] = n
	g.order = append(g.order, name)
	if g.branchChan == nil {
		g.branchChan = map[string]string{}
	}
	g.branchChan[name] = branchPrefix + name
	return g
}

// AddEdge runs to after from.
func (g *StateGraph[S]) AddEdge(from, to string) *StateGraph[S] {
	if from == End {
		g.errs = append(g.errs, fmt.Errorf("%w: an edge cannot start at %s", ErrInvalidGraph, End))
	}
	if to == Start {
		g.errs = append(g.errs, fmt.Errorf("%w: an edge cannot end at %s", ErrInvalidGraph, Start))
	}
	g.edges = append(g.edges, [2]string{from, to})
	return g
}

// AddJoin runs to once, after every node in from has run (a waiting edge:
// upstream's add_edge([a, b], c)).
func (g *StateGraph[S]) AddJoin(from []string, to string) *StateGraph[S] {
	if len(from) == 0 {
		g.errs = append(g.errs, fmt.Errorf("%w: AddJoin needs at least one source", ErrInvalidGraph))
		return g
	}
	if slices.Contains(from, End) || to == Start {
		g.errs = append(g.errs, fmt.Errorf("%w: a join cannot start at %s or end at %s", ErrInvalidGraph, End, Start))
		return g
	}
	g.waiting = append(g.waiting, waitingEdge{from: slices.Clone(from), to: to})
	return g
}

// AddConditionalEdges routes after src with router. pathMap, when given,
// maps the router's results to node names and declares the possible
// destinations (kept for drawing and lint).
func (g *StateGraph[S]) AddConditionalEdges(src string, router func(ctx context.Context, state S) (Route, error), pathMap map[string]string) *StateGraph[S] {
	if router == nil {
		g.errs = append(g.errs, fmt.Errorf("%w: conditional edge from %q has a nil router", ErrInvalidGraph, src))
		return g
	}
	b := &sgBranch[S]{pathMap: pathMap, router: router}
	for _, dest := range pathMap {
		b.ends = append(b.ends, dest)
	}
	sort.Strings(b.ends)
	g.branches[src] = append(g.branches[src], b)
	return g
}

// AddSequence adds nodes connected one after another (not to START).
func (g *StateGraph[S]) AddSequence(names ...string) *StateGraph[S] {
	for i := 1; i < len(names); i++ {
		g.AddEdge(names[i-1], names[i])
	}
	return g
}

// CompileOptions are decided once per compiled graph.
type CompileOptions struct {
	Name         string
	Checkpointer checkpoints.Saver
	Cache        cache.Cache
	// Store is the long-term memory nodes reach with StoreFrom.
	Store store.Store
	// Retry is the default policy of nodes without their own.
	Retry           []RetryPolicy
	InterruptBefore []string
	InterruptAfter  []string
}

// Graph is a compiled StateGraph.
type Graph[S any] struct {
	pregel   *Pregel
	topology Topology
	warnings []Warning
}

// Compile checks the graph and compiles it to the Pregel runtime.
func (g *StateGraph[S]) Compile(opts CompileOptions) (*Graph[S], error) {
	if len(g.errs) > 0 {
		return nil, joinErrs(g.errs)
	}
	known := func(n string) bool { return n == Start || n == End || g.nodes[n] != nil }
	for _, e := range g.edges {
		for _, n := range e {
			if !known(n) {
				return nil, fmt.Errorf("%w: edge %s → %s names unknown node %q", ErrInvalidGraph, e[0], e[1], n)
			}
		}
	}
	for _, w := range g.waiting {
		for _, n := range append(slices.Clone(w.from), w.to) {
			if !known(n) {
				return nil, fmt.Errorf("%w: join %v → %s names unknown node %q", ErrInvalidGraph, w.from, w.to, n)
			}
		}
	}
	for src, bs := range g.branches {
		if !known(src) || src == End {
			return nil, fmt.Errorf("%w: conditional edge from unknown node %q", ErrInvalidGraph, src)
		}
		for _, b := range bs {
			for _, d := range b.ends {
				if !known(d) || d == Start {
					return nil, fmt.Errorf("%w: conditional edge from %q maps to unknown node %q", ErrInvalidGraph, src, d)
				}
			}
		}
	}
	for _, n := range g.nodes {
		for _, d := range n.destinations {
			if !known(d) || d == Start {
				return nil, fmt.Errorf("%w: node %q declares unknown destination %q", ErrInvalidGraph, n.name, d)
			}
		}
		for _, d := range n.sendTargets {
			if !known(d) || d == Start || d == End {
				return nil, fmt.Errorf("%w: node %q declares unknown Send target %q", ErrInvalidGraph, n.name, d)
			}
		}
	}
	hasEntry := len(g.branches[Start]) > 0
	for _, e := range g.edges {
		hasEntry = hasEntry || e[0] == Start
	}
	for _, w := range g.waiting {
		hasEntry = hasEntry || slices.Contains(w.from, Start)
	}
	if !hasEntry {
		return nil, fmt.Errorf("%w: no edge leaves %s: add one with AddEdge(engine.Start, \"<first node>\")", ErrInvalidGraph, Start)
	}
	p, err := g.compile(opts)
	if err != nil {
		return nil, err
	}
	out := &Graph[S]{pregel: p}
	out.topology = g.topologyOf()
	out.warnings = lint(out.topology)
	g.describe(&out.topology, p)
	return out, nil
}

func joinErrs(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("%w: %d problems:\n  %s", ErrInvalidGraph, len(errs), strings.Join(msgs, "\n  "))
}
