package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"sort"
	"strings"
	"unsafe"

	"github.com/superstep-dev/superstep/engine/channels"
)

var anyType = reflect.TypeFor[any]()

func (g *StateGraph[S]) compile(opts CompileOptions) (*Pregel, error) {
	chans := map[string]channels.Channel{}
	types := map[string]reflect.Type{}
	var stateKeys []string
	for _, f := range g.fields {
		switch {
		case f.channel != nil:
			chans[f.name] = f.channel
		case f.reducer != nil:
			chans[f.name] = channels.NewBinaryOperator(f.typ, f.reducer)
		default:
			chans[f.name] = channels.NewLastValue(f.typ)
		}
		types[f.name] = f.typ
		stateKeys = append(stateKeys, f.name)
	}
	chans[Start] = channels.NewEphemeralValue(anyType, true)
	for _, name := range g.order {
		if g.nodes[name].deferred {
			chans[branchPrefix+name] = channels.NewLastValueAfterFinish(anyType)
		} else {
			chans[branchPrefix+name] = channels.NewEphemeralValue(anyType, false)
		}
	}
	joins := map[string][]string{} // node → join channels it triggers on
	joinWrites := map[string][]string{}
	for _, w := range g.waiting {
		ch := joinPrefix + strings.Join(w.from, "+") + ":" + w.to
		if to := g.nodes[w.to]; to != nil && to.deferred {
			chans[ch] = channels.NewNamedBarrierValueAfterFinish(w.from)
		} else {
			chans[ch] = channels.NewNamedBarrierValue(w.from)
		}
		joins[w.to] = append(joins[w.to], ch)
		for _, f := range w.from {
			joinWrites[f] = append(joinWrites[f], ch)
		}
	}
	refs := &chanRefs{}
	w := &stateWriter[S]{g: g, refs: refs}
	startNode := &Node{
		Name: Start, Triggers: []string{Start}, Channels: []string{Start}, ReadSingle: true,
		Func:    func(_ context.Context, in any) (any, error) { return in, nil },
		Writers: []Writer{startWriter[S]{g: g, refs: refs}}, Tags: []string{tagHidden}, hidden: true,
	}
	var plans []*inputPlan
	startNode.Writers = append(startNode.Writers, g.edgeWriters(Start, joinWrites, refs)...)
	nodes := []*Node{startNode}
	for _, name := range g.order {
		sn := g.nodes[name]
		n := &Node{
			Name:     name,
			Triggers: append([]string{branchPrefix + name}, joins[name]...),
			Channels: stateKeys,
			Func:     func(ctx context.Context, in any) (any, error) { return sn.fn(ctx, in) },
			Writers:  append([]Writer{w}, g.edgeWriters(name, joinWrites, refs)...),
			Retry:    sn.retry,
			Cache:    sn.cache,
			identity: sn.identity,
			funcW:    sn.fnW,
			inType:   sn.inType,
			subgraph: sn.subgraph,
		}
		if n.identity == "" {
			n.identity = name
		}
		plan := sn.plan.clone()
		plans = append(plans, plan)
		n.input = plan.build
		for _, f := range plan.fields {
			n.inputKeys = append(n.inputKeys, f.channel)
		}
		n.sharedInput = sn.inType == reflect.TypeFor[S]()
		n.needsState = n.sharedInput || len(g.branches[name]) > 0
		nodes = append(nodes, n)
	}
	p, err := NewPregel(PregelConfig{
		Name: opts.Name, Channels: chans, ChannelTypes: types, Nodes: nodes,
		InputChannels: []string{Start}, OutputChannels: stateKeys, StreamChannels: stateKeys,
		Checkpointer: opts.Checkpointer, Cache: opts.Cache, Store: opts.Store, Retry: opts.Retry,
		InterruptBefore: opts.InterruptBefore, InterruptAfter: opts.InterruptAfter,
	})
	if err != nil {
		return nil, err
	}
	p.mapInput = func(input any) ([]KV, error) {
		u, err := g.inputUpdate(input)
		if err != nil {
			return nil, err
		}
		return []KV{{Key: Start, Value: u}}, nil
	}
	statePlan, _ := newInputPlan(reflect.TypeFor[S](), g.byName)
	plans = append(plans, statePlan)
	for _, pl := range plans {
		pl.resolve(p.chanIdx)
	}
	refs.field = make([]int, len(g.fields))
	for i, f := range g.fields {
		refs.field[i] = p.chanIdx[f.name]
	}
	refs.branch = make(map[string]chanRef, len(g.branchChan))
	for node, ch := range g.branchChan {
		refs.branch[node] = chanRef{name: ch, idx: p.chanIdx[ch]}
		if len(g.branchChan) <= smallState {
			refs.few = append(refs.few, namedRef{node, chanRef{name: ch, idx: p.chanIdx[ch]}})
		}
	}
	p.mapOutput = statePlan.build
	p.statePlan = statePlan
	p.mapUpdate = func(o Output) ([]KV, error) {
		var kvs []KV
		err := g.validate("Command", o, func(_ int, k string, v any) { kvs = append(kvs, KV{Key: k, Value: v}) })
		return kvs, err
	}
	return p, nil
}

// edgeWriters are the writes a node makes after it runs, whatever it
// returned: plain edges, joins and conditional edges.
func (g *StateGraph[S]) edgeWriters(name string, joinWrites map[string][]string, refs *chanRefs) []Writer {
	var ws []Writer
	for _, e := range g.edges {
		if e[0] == name && e[1] != End {
			ws = append(ws, WriteEntry{Channel: branchPrefix + e[1], Fixed: true})
		}
	}
	for _, ch := range joinWrites[name] {
		ws = append(ws, WriteEntry{Channel: ch, Value: name, Fixed: true})
	}
	for _, b := range g.branches[name] {
		ws = append(ws, &branchWriter[S]{g: g, b: b, src: name, refs: refs})
	}
	return ws
}

// startWriter maps the input (as stored in the __start__ channel, possibly
// read back from a checkpoint as plain JSON) onto state keys.
type startWriter[S any] struct {
	g    *StateGraph[S]
	refs *chanRefs
}

func (w startWriter[S]) write(t *task, out any) error {
	var o Output
	switch x := out.(type) {
	case Update:
		o = x
	case Updates:
		o = x
	case map[string]any:
		o = Update(x)
	case []any: // Updates read back from JSON
		var u Updates
		for _, e := range x {
			m, ok := e.(map[string]any)
			key, _ := m["key"].(string)
			if !ok || key == "" {
				return fmt.Errorf("%w: stored input is malformed", ErrInvalidUpdate)
			}
			u = append(u, KV{Key: key, Value: m["value"]})
		}
		o = u
	case nil:
		return nil
	default:
		return fmt.Errorf("%w: stored input is a %T", ErrInvalidUpdate, out)
	}
	return w.g.validate(Start, o, func(i int, k string, v any) { t.addWriteAt(k, w.refs.field[i], v) })
}

// inputUpdate validates a run input (Update, Updates or map[string]any)
// and returns what the __start__ channel stores: an Update map (upstream
// stores the input object), or Updates when the input repeats a key.
func (g *StateGraph[S]) inputUpdate(input any) (Output, error) {
	var out Output
	switch x := input.(type) {
	case Update:
		out = x
	case KV:
		out = x
	case Updates:
		out = x
	case map[string]any:
		out = Update(x)
	case S:
		return nil, fmt.Errorf("%w: pass the input as an engine.Update keyed by json names (a whole %T cannot tell written zero values from unwritten ones)", ErrInvalidUpdate, x)
	default:
		return nil, fmt.Errorf("%w: input must be an engine.Update, got %T", ErrInvalidUpdate, input)
	}
	var kvs Updates
	if err := g.validate(Start, out, func(_ int, k string, v any) { kvs = append(kvs, KV{Key: k, Value: v}) }); err != nil {
		return nil, err
	}
	if _, ordered := out.(Updates); ordered {
		return kvs, nil
	}
	u := make(Update, len(kvs))
	for _, kv := range kvs {
		u[kv.Key] = kv.Value
	}
	return u, nil
}

// validate checks an update against the state and calls emit with each
// key (and its field's position in g.fields) and its converted value, in a
// deterministic order.
func (g *StateGraph[S]) validate(node string, out Output, emit func(field int, key string, v any)) error {
	one := func(k string, v any) error {
		i, cv, err := g.checkKey(node, k, v)
		if err != nil {
			return err
		}
		emit(i, k, cv)
		return nil
	}
	switch u := out.(type) {
	case nil:
		return nil
	case KV:
		return one(u.Key, u.Value)
	case Update:
		if len(u) == 1 {
			for k, v := range u {
				return one(k, v)
			}
		}
		keys := make([]string, 0, len(u))
		for k := range u {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := one(k, u[k]); err != nil {
				return err
			}
		}
	case Updates:
		for _, kv := range u {
			if err := one(kv.Key, kv.Value); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%w: node %q: a %T cannot be used as a state update", ErrInvalidUpdate, node, out)
	}
	return nil
}

// checkKey checks one write of an update: it returns the key's position
// in g.fields and the value converted to the field's type.
func (g *StateGraph[S]) checkKey(node, key string, v any) (int, any, error) {
	i, err := g.field(node, key)
	if err != nil {
		return 0, nil, err
	}
	cv, err := g.convertField(node, key, i, v)
	if err != nil {
		return 0, nil, err
	}
	if g.fields[i].fillsIDs {
		cv = fillMissingIDs(cv)
	}
	return i, cv, nil
}

// field returns the position in g.fields of the state key.
func (g *StateGraph[S]) field(node, key string) (int, error) {
	if len(g.fields) <= smallState {
		// Comparing a few names costs less than hashing the key. From
		// the last, as byName keeps the last field of a repeated name.
		for i := len(g.fields) - 1; i >= 0; i-- {
			if g.fields[i].name == key {
				return i, nil
			}
		}
		return 0, g.unknownKey(node, key)
	}
	i, ok := g.byName[key]
	if !ok {
		return 0, g.unknownKey(node, key)
	}
	return i, nil
}

// smallState is the number of state keys up to which field scans them.
const smallState = 8

func (g *StateGraph[S]) unknownKey(node, key string) error {
	return fmt.Errorf("%w: node %q wrote unknown state key %q (state keys: %s)", ErrInvalidUpdate, node, key, strings.Join(g.keys(), ", "))
}

// convertField converts v, written to the state key of field i, to the
// field's type.
func (g *StateGraph[S]) convertField(node, key string, i int, v any) (any, error) {
	f := g.fields[i]
	if v == nil {
		return reflect.Zero(f.typ).Interface(), nil
	}
	vt := reflect.TypeOf(v)
	if vt == f.typ || f.typ.Kind() == reflect.Interface {
		return v, nil
	}
	switch x := v.(type) {
	case Overwrite:
		inner, err := g.convertField(node, key, i, x.Value)
		return Overwrite{Value: inner}, err
	case map[string]any:
		if _, ok := x["__overwrite__"]; ok {
			return v, nil
		}
		if t, _ := x["type"].(string); t == "__overwrite__" {
			return v, nil
		}
	}
	if f.reducer != nil && f.typ.Kind() == reflect.Slice && vt.AssignableTo(f.typ.Elem()) {
		return v, nil
	}
	if vt.AssignableTo(f.typ) {
		return v, nil
	}
	if numeric(vt.Kind()) && numeric(f.typ.Kind()) {
		rv := reflect.ValueOf(v)
		if rv.CanConvert(f.typ) {
			c := rv.Convert(f.typ)
			if c.Convert(vt).Equal(rv) {
				return c.Interface(), nil
			}
		}
		return nil, fmt.Errorf("%w: node %q wrote %v to key %q, which does not fit %s", ErrInvalidUpdate, node, v, key, f.typ)
	}
	if c, ok := fromJSONShape(v, f); ok {
		return c, nil
	}
	return nil, fmt.Errorf("%w: node %q wrote a %s to key %q, which holds %s", ErrInvalidUpdate, node, vt, key, f.typ)
}

// fromJSONShape converts a value decoded from JSON ([]any, map[string]any)
// into the field's Go type (or, for a reducer over a slice, its element
// type) when it fits exactly: input from the Studio or an API arrives as
// JSON. Unknown fields or mismatched types do not fit.
func fromJSONShape(v any, f stateField) (any, bool) {
	switch v.(type) {
	case []any, map[string]any:
	case string:
		// A string written to a reducer's list whose element type decodes
		// JSON itself (a message: a string is a human message, as
		// upstream's add_messages takes it).
		if f.reducer == nil || f.typ.Kind() != reflect.Slice || !reflect.PointerTo(f.typ.Elem()).Implements(jsonUnmarshaler) {
			return nil, false
		}
	default:
		return nil, false
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	try := func(t reflect.Type) (any, bool) {
		p := reflect.New(t)
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if dec.Decode(p.Interface()) != nil {
			return nil, false
		}
		return p.Elem().Interface(), true
	}
	if c, ok := try(f.typ); ok {
		return c, true
	}
	if f.reducer != nil && f.typ.Kind() == reflect.Slice {
		return try(f.typ.Elem())
	}
	return nil, false
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// idFiller is a value that must carry an id before it is streamed and
// saved (models.Message): WithMissingID returns it with a new id and true
// when it has none, itself and false otherwise. Upstream gives messages their ids as they
// are written (ensure_message_ids), so the "messages" stream, the saved
// writes and the state agree on them; a reducer that gave them later
// would give the same write a new id each time it was applied again.
type idFiller interface{ WithMissingID() (any, bool) }

var idFillerType = reflect.TypeFor[idFiller]()

// fillsIDs says whether a state field's writes may hold idFillers: the
// field's type, or its elements'.
func fillsIDs(t reflect.Type) bool {
	return t.Implements(idFillerType) || t.Kind() == reflect.Slice && t.Elem().Implements(idFillerType)
}

// fillMissingIDs gives every idFiller in v (a value, a slice of them, or
// an Overwrite of either) its id; a slice with a value to fill is copied,
// never changed in place (the node may still hold it).
func fillMissingIDs(v any) any {
	switch x := v.(type) {
	case idFiller:
		filled, _ := x.WithMissingID()
		return filled
	case Overwrite:
		return Overwrite{Value: fillMissingIDs(x.Value)}
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice || !rv.Type().Elem().Implements(idFillerType) {
		return v
	}
	var out reflect.Value
	for i := range rv.Len() {
		filled, changed := rv.Index(i).Interface().(idFiller).WithMissingID()
		if !changed {
			continue
		}
		if !out.IsValid() {
			out = reflect.MakeSlice(rv.Type(), rv.Len(), rv.Len())
			reflect.Copy(out, rv)
		}
		out.Index(i).Set(reflect.ValueOf(filled))
	}
	if !out.IsValid() {
		return v
	}
	return out.Interface()
}

func numeric(k reflect.Kind) bool {
	return (k >= reflect.Int && k <= reflect.Uint64) || k == reflect.Float32 || k == reflect.Float64
}

func (g *StateGraph[S]) keys() []string {
	out := make([]string, len(g.fields))
	for i, f := range g.fields {
		out[i] = f.name
	}
	return out
}

// stateWriter turns a node's Output into state writes and Command routes.
type stateWriter[S any] struct {
	g    *StateGraph[S]
	refs *chanRefs
}

// chanRefs are the channel indexes, in the compiled graph, that writers
// write to: set once the graph's channels are numbered.
type chanRefs struct {
	field  []int              // by position in StateGraph.fields
	branch map[string]chanRef // by node: its branch:to: channel
	few    []namedRef         // branch as a list, when it is short
}

type namedRef struct {
	node string
	ref  chanRef
}

// branchOf returns the branch:to: channel of the node.
func (r *chanRefs) branchOf(node string) (chanRef, bool) {
	if r.few != nil {
		// Comparing a few names costs less than hashing the node's.
		for i := range r.few {
			if r.few[i].node == node {
				return r.few[i].ref, true
			}
		}
		return chanRef{}, false
	}
	ref, ok := r.branch[node]
	return ref, ok
}

type chanRef struct {
	name string
	idx  int
}

func (w *stateWriter[S]) write(t *task, out any) error {
	if _, ok := out.(*Writes); ok {
		return w.applyWrites(t)
	}
	o, _ := out.(Output)
	switch c := o.(type) {
	case Command:
		return w.command(t, &c)
	case *Command:
		if c == nil {
			return nil
		}
		return w.command(t, c)
	}
	if kv, ok := o.(KV); ok {
		// One key (Set): validate's steps without its callback.
		i, cv, err := w.g.checkKey(t.name, kv.Key, kv.Value)
		if err != nil {
			return err
		}
		t.addWriteAt(kv.Key, w.refs.field[i], cv)
		return nil
	}
	return w.g.validate(t.name, o, func(i int, k string, v any) { t.addWriteAt(k, w.refs.field[i], v) })
}

func (w *stateWriter[S]) command(t *task, c *Command) error {
	if c.Resume != nil {
		return fmt.Errorf("%w: node %q returned a Command with Resume; Resume is only valid as run input", ErrInvalidUpdate, t.name)
	}
	if err := w.g.validate(t.name, c.Update, func(i int, k string, v any) { t.addWriteAt(k, w.refs.field[i], v) }); err != nil {
		return err
	}
	for _, dest := range c.Goto {
		switch d := dest.(type) {
		case string:
			if d == End {
				continue
			}
			ch, ok := w.refs.branchOf(d)
			if !ok {
				return fmt.Errorf("%w: node %q routes to unknown node %q", ErrInvalidUpdate, t.name, d)
			}
			t.addWriteAt(ch.name, ch.idx, nil)
		case Send:
			if err := w.send(t, d); err != nil {
				return err
			}
		case *Send:
			if err := w.send(t, *d); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: node %q: Command.Goto holds %T; use node names or Sends", ErrInvalidUpdate, t.name, dest)
		}
	}
	return nil
}

func (w *stateWriter[S]) send(t *task, s Send) error {
	if s.Node == End {
		return fmt.Errorf("%w: node %q sends to %s", ErrInvalidUpdate, t.name, End)
	}
	if w.g.nodes[s.Node] == nil {
		return fmt.Errorf("%w: node %q sends to unknown node %q", ErrInvalidUpdate, t.name, s.Node)
	}
	t.addWrite(tasksChannel, s)
	return nil
}

// branchWriter evaluates a conditional edge on the state as the source
// node's own writes left it.
type branchWriter[S any] struct {
	g    *StateGraph[S]
	b    *sgBranch[S]
	src  string
	refs *chanRefs
}

func (w *branchWriter[S]) write(t *task, _ any) error {
	st, err := w.state(t)
	if err != nil {
		return err
	}
	var ctx context.Context
	if t.tctx != nil {
		ctx = t.tctx
	} else {
		ctx = context.WithValue(context.Background(), taskCtxKey{}, t)
	}
	route, err := w.b.router(ctx, *st)
	if err != nil {
		return fmt.Errorf("router after %q: %w", w.src, err)
	}
	sw := stateWriter[S]{g: w.g, refs: w.refs}
	err = route.destinations(func(dest string) error {
		if w.b.pathMap != nil {
			mapped, ok := w.b.pathMap[dest]
			if !ok {
				return fmt.Errorf("%w: router after %q returned %q, which its path map does not list", ErrInvalidUpdate, w.src, dest)
			}
			dest = mapped
		}
		if dest == End {
			return nil
		}
		ch, ok := w.refs.branchOf(dest)
		switch {
		case dest == Start || dest == "":
			return fmt.Errorf("%w: router after %q returned %q", ErrInvalidUpdate, w.src, dest)
		case !ok:
			return fmt.Errorf("%w: router after %q returned unknown node %q", ErrInvalidUpdate, w.src, dest)
		}
		t.addWriteAt(ch.name, ch.idx, nil)
		return nil
	})
	if err != nil {
		return err
	}
	for _, s := range route.Sends {
		if err := sw.send(t, s); err != nil {
			return err
		}
	}
	return nil
}

// state is what the router sees: the state at the start of the step with
// the task's own writes applied (upstream's fresh local read). It copies
// the step's shared state into the task's scratch struct and sets only
// the fields the task wrote, so a router costs no allocation.
func (w *branchWriter[S]) state(t *task) (*S, error) {
	base, err := t.l.state()
	if err != nil {
		return nil, err
	}
	sp, _ := t.scratch.(*S)
	if sp == nil {
		sp = new(S)
		t.scratch = sp
	}
	*sp = *base.(*S)
	if own, err := t.l.g.statePlan.setOwn(unsafe.Pointer(sp), t); own || err != nil {
		if err != nil {
			return nil, err
		}
		return sp, nil
	}
	ov, err := t.localRead()
	if err != nil {
		return nil, err
	}
	if o, ok := ov.(*overlay); ok {
		if err := t.l.g.statePlan.overlay(unsafe.Pointer(sp), o); err != nil {
			return nil, err
		}
	}
	return sp, nil
}

// inputPlan builds a struct of type typ from state channels by json name.
type inputPlan struct {
	typ    reflect.Type
	fields []planField
	raw    bool // not a struct over state keys: only Sends deliver it
	asMap  bool // build a map[string]any of the fields (subgraph input)
	// byChan maps a channel index to its field's position in fields (-1:
	// the plan does not read it); set by resolve.
	byChan []int
}

var anyMapType = reflect.TypeFor[map[string]any]()

// structValues returns a struct's (or a struct pointer's) json-tagged
// fields as a map.
func structValues(v any) map[string]any {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return nil
	}
	out := map[string]any{}
	for i := range rv.NumField() {
		if name, ok := jsonName(rv.Type().Field(i)); ok {
			out[name] = rv.Field(i).Interface()
		}
	}
	return out
}

type planField struct {
	index   int
	channel string
	idx     int // channel index, set by resolve
	typ     reflect.Type
	offset  uintptr     // of the field in the struct
	fast    fieldSetter // nil: set through reflect
}

func (p *inputPlan) clone() *inputPlan {
	c := *p
	c.fields = slices.Clone(p.fields)
	return &c
}

// resolve binds the plan's channel names to a compiled graph's indexes.
// Plans are compiled per graph, so each is resolved once.
func (p *inputPlan) resolve(idx map[string]int) {
	p.byChan = slices.Repeat([]int{-1}, len(idx))
	for i := range p.fields {
		c := idx[p.fields[i].channel]
		p.fields[i].idx = c
		p.byChan[c] = i
	}
}

func newInputPlan(typ reflect.Type, byName map[string]int) (*inputPlan, error) {
	p := &inputPlan{typ: typ}
	if typ.Kind() != reflect.Struct {
		p.raw = true
		return p, nil
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, ok := jsonName(f)
		if !ok {
			continue
		}
		if _, known := byName[name]; !known {
			// A field that is not a state key: the type is delivered by
			// Sends, or the field stays zero when read from state.
			continue
		}
		p.fields = append(p.fields, planField{index: i, channel: name, typ: f.Type, offset: f.Offset, fast: setterFor(f.Type)})
	}
	return p, nil
}

// overlay sets the fields of the struct at base (of the plan's type)
// whose channels the overlay replaces.
func (p *inputPlan) overlay(base unsafe.Pointer, o *overlay) error {
	for i := range p.fields {
		f := &p.fields[i]
		k := slices.Index(o.names, f.idx)
		if k < 0 {
			continue
		}
		if err := f.set(base, o.vals[k]); err != nil {
			return err
		}
	}
	return nil
}

// setOwn sets the fields of the struct at base (of the plan's type) to
// the task's own writes, when each is the only write of a LastValue
// channel whose index the task knows (a node's usual update): the state
// the overlay of localRead would give, without building the overlay. It
// reports false, having set nothing, when the writes need localRead.
func (p *inputPlan) setOwn(base unsafe.Pointer, t *task) (bool, error) {
	if len(t.wch) != len(t.writes) {
		return false, nil
	}
	for i, w := range t.writes {
		if reservedWrite(w.Key) {
			continue
		}
		c := int(t.wch[i]) - 1
		if c < 0 || slices.Contains(t.wch[:i], t.wch[i]) {
			return false, nil
		}
		if _, last := t.l.chans[c].(*channels.LastValue); !last {
			return false, nil
		}
	}
	for i, w := range t.writes {
		c := int(t.wch[i]) - 1
		if c < 0 || c >= len(p.byChan) || p.byChan[c] < 0 || reservedWrite(w.Key) {
			continue
		}
		if err := p.fields[p.byChan[c]].set(base, w.Value); err != nil {
			return true, err
		}
	}
	return true, nil
}

// refresh sets the fields of the struct at base (of the plan's type) read
// from the given channels to their current values (zero when empty).
func (p *inputPlan) refresh(base unsafe.Pointer, r reader, chans []int) error {
	for _, c := range chans {
		if c >= len(p.byChan) || p.byChan[c] < 0 {
			continue
		}
		f := &p.fields[p.byChan[c]]
		x, ok := r.read(c)
		if !ok {
			x = nil
		}
		if err := f.set(base, x); err != nil {
			return err
		}
	}
	return nil
}

func (p *inputPlan) build(r reader) (any, error) {
	if p.asMap {
		m := make(map[string]any, len(p.fields))
		for _, f := range p.fields {
			if x, ok := r.read(f.idx); ok {
				m[f.channel] = x
			}
		}
		return m, nil
	}
	if p.raw {
		return reflect.Zero(p.typ).Interface(), nil
	}
	ptr := reflect.New(p.typ)
	base := ptr.UnsafePointer()
	for i := range p.fields {
		f := &p.fields[i]
		x, ok := r.read(f.idx)
		if !ok || x == nil {
			continue
		}
		if err := f.set(base, x); err != nil {
			return nil, err
		}
	}
	// A pointer boxes without copying; readers accept T or *T (asValue).
	return ptr.Interface(), nil
}

// Invoke runs the graph with input (an Update; nil resumes the thread) and
// returns the final state.
func (g *Graph[S]) Invoke(ctx context.Context, input any, opts *RunOptions) (S, error) {
	var zero S
	if u, ok := input.(Update); ok && u == nil {
		input = nil
	}
	out, err := g.pregel.Invoke(ctx, input, opts)
	if out == nil {
		return zero, err
	}
	s, ok := asValue[S](out)
	if !ok {
		return zero, fmt.Errorf("output is %T, want %T", out, zero)
	}
	return s, err
}

// Pregel is the compiled low-level graph.
func (g *Graph[S]) Pregel() *Pregel { return g.pregel }

// Warnings are the topology lint's findings.
func (g *Graph[S]) Warnings() []Warning { return slices.Clone(g.warnings) }

// Topology describes the graph for drawing.
func (g *Graph[S]) Topology() Topology { return g.topology }

// Stream runs the graph and yields the requested projections of its events
// (see StreamMode); values parts carry the state as a map keyed by json
// names.
func (g *Graph[S]) Stream(ctx context.Context, input any, opts *RunOptions, modes ...StreamMode) iter.Seq2[StreamPart, error] {
	if u, ok := input.(Update); ok && u == nil {
		input = nil
	}
	return g.pregel.Stream(ctx, input, opts, modes...)
}

// ZeroState is the zero value of the state type, for tools that prefill an
// input form (the Studio's start-run form).
func (g *Graph[S]) ZeroState() any {
	var s S
	return s
}

// Compiled is what tools need from any compiled graph, whatever its state
// type: *Graph[S] implements it.
type Compiled interface {
	Pregel() *Pregel
	Topology() Topology
	Warnings() []Warning
	ZeroState() any
}

var _ Compiled = (*Graph[struct{ X int }])(nil)
