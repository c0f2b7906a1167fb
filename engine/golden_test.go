package engine_test

// The golden-file conformance suite (issue 13). testdata/golden/*.json were
// recorded from LangGraph.js (testdata/golden/js/record.mjs), edited into
// Python LangGraph's behaviour where the two differ (each such file says so
// in its note). TestGolden builds each case's graph in Go
// (golden_graphs_test.go), replays the recorded operations, normalises
// what it observes exactly as record.mjs does, and compares.
//
// Steps: every recorded part is [ns, mode, payload, step], step being the
// part's superstep in its stream, counted per namespace from a boundary
// both sides emit (record.mjs's file comment; stepLabels here): with a
// checkpointer the checkpoints (the "checkpoints" mode is added to the
// stream for counting when the case does not ask for it, and its parts
// are then dropped), without one the debug task events (the "debug" mode
// likewise, a "tasks" start taking the step of its debug twin). So a part
// in another superstep than upstream's differs even when the stream asks
// for updates only.
//
// Order: within one superstep upstream emits "updates" and "tasks" parts
// in the order tasks finish, so a run of consecutive updates/tasks parts
// (debug task events included) of one namespace and one step is compared
// as a multiset; any other part (values, checkpoints, a debug checkpoint,
// custom) closes the run and is compared in place, so a step's values
// part comes after its updates. Within the multiset a task result is
// marked by whether a start of a task of the same name (same mode) came
// before it in its namespace and step, so a result ahead of its start
// differs (a task resumed from its saved writes has a result and no start
// upstream). Next lists and snapshot task lists are sets. Everything else
// is compared in order.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// goldenCalls counts node calls by node name; nodes call add.
type goldenCalls struct {
	mu sync.Mutex
	n  map[string]int
}

// add counts a call of name and returns its count so far.
func (c *goldenCalls) add(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name]++
	return c.n[name]
}

// snapshot is the counts as JSON decoding gives them (float64s).
func (c *goldenCalls) snapshot() map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]any{}
	for k, v := range c.n {
		out[k] = float64(v)
	}
	return out
}

// goldenGraph is what a case's Go builder returns: the compiled graph,
// its saver (nil without a checkpointer), for graphs whose input is not a
// state map a conversion of the JSON input, and for a graph streaming one
// channel's raw value (stream_channels given as one name) that channel.
type goldenGraph struct {
	graph         engine.Compiled
	saver         *checkpoints.Memory
	input         func(any) any
	streamChannel string
}

// goldenStep is one recorded operation with its recorded result.
type goldenStep struct {
	Op             string          `json:"op"`
	Thread         string          `json:"thread"`
	Checkpoint     string          `json:"checkpoint"`
	Input          json.RawMessage `json:"input"`
	Command        *goldenCommand  `json:"command"`
	Modes          []string        `json:"modes"`
	Subgraphs      bool            `json:"subgraphs"`
	RecursionLimit int             `json:"recursion_limit"`
	Values         json.RawMessage `json:"values"`
	AsNode         string          `json:"as_node"`

	Parts   []any   `json:"parts"`
	Error   *string `json:"error"`
	State   any     `json:"state"`
	History []any   `json:"history"`
	Config  *string `json:"config"`
	Calls   any     `json:"calls"`
}

type goldenCommand struct {
	Resume    any            `json:"resume"`
	HasResume bool           `json:"-"`
	ResumeMap map[string]any `json:"resume_map"`
	Update    map[string]any `json:"update"`
	Goto      any            `json:"goto"`
}

// UnmarshalJSON decodes a command and records whether it has a resume
// key (a null resume is a resume).
func (c *goldenCommand) UnmarshalJSON(b []byte) error {
	type plain goldenCommand
	if err := json.Unmarshal(b, (*plain)(c)); err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	_, c.HasResume = keys["resume"]
	return nil
}

type goldenFile struct {
	Name        string       `json:"name"`
	Description string       `json:"description"`
	Note        string       `json:"note"`
	Steps       []goldenStep `json:"steps"`
}

// TestGolden replays every golden file on its Go builder, and checks that
// every builder has a golden file.
func TestGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden files in testdata/golden")
	}
	seen := map[string]bool{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var gf goldenFile
			if err := json.Unmarshal(raw, &gf); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			build, ok := goldenBuilders[gf.Name]
			if !ok {
				t.Fatalf("no Go builder for golden case %q: add one to goldenBuilders in golden_graphs_test.go", gf.Name)
			}
			runGolden(t, gf, build)
		})
	}
	for name := range goldenBuilders {
		if !seen[name] {
			t.Errorf("Go builder %q has no golden file testdata/golden/%s.json (record it with make golden/record)", name, name)
		}
	}
}

// runGolden builds a case's graph and replays its steps in order.
func runGolden(t *testing.T, gf goldenFile, build func(*testing.T, *goldenCalls) goldenGraph) {
	t.Helper()
	if gf.Note != "" {
		t.Logf("note: %s", gf.Note)
	}
	calls := &goldenCalls{}
	gg := build(t, calls)
	r := &goldenRunner{t: t, g: gg.graph.Pregel(), saver: gg.saver, input: gg.input, streamChannel: gg.streamChannel, calls: calls}
	for i, st := range gf.Steps {
		where := fmt.Sprintf("step %d (%s)", i, describeStep(st))
		r.step(where, st)
	}
}

// describeStep names a step in failure messages.
func describeStep(st goldenStep) string {
	var b strings.Builder
	b.WriteString(st.Op)
	if st.Thread != "" {
		fmt.Fprintf(&b, " thread=%s", st.Thread)
	}
	if st.Checkpoint != "" {
		fmt.Fprintf(&b, " checkpoint=%s", st.Checkpoint)
	}
	if st.Command != nil {
		b.WriteString(" command")
	}
	if st.AsNode != "" {
		fmt.Fprintf(&b, " as_node=%s", st.AsNode)
	}
	return b.String()
}

type goldenRunner struct {
	t             *testing.T
	g             *engine.Pregel
	saver         *checkpoints.Memory
	input         func(any) any
	streamChannel string
	calls         *goldenCalls
}

// thread is a step's thread id ("1" unless given).
func (r *goldenRunner) thread(st goldenStep) string {
	if st.Thread == "" {
		return "1"
	}
	return st.Thread
}

// config is a step's thread and, when it names a checkpoint label, that
// checkpoint's namespace and id.
func (r *goldenRunner) config(st goldenStep) checkpoints.Config {
	cfg := checkpoints.Config{ThreadID: r.thread(st)}
	if st.Checkpoint != "" {
		ns, id, err := r.labeller(cfg.ThreadID).resolve(strings.TrimPrefix(st.Checkpoint, "ckpt:"))
		if err != nil {
			r.t.Fatalf("%v", err)
		}
		cfg.Namespace, cfg.CheckpointID = ns, id
	}
	return cfg
}

// labeller reads a thread's checkpoint ids from the saver, as
// record.mjs's Labeller does from the MemorySaver.
func (r *goldenRunner) labeller(thread string) *goldenLabeller {
	l := &goldenLabeller{thread: thread, byPath: map[string][]string{}, nsOf: map[string]string{}}
	if r.saver == nil {
		return l
	}
	tups, err := r.saver.List(context.Background(), checkpoints.ListQuery{ThreadID: thread, AllNamespaces: true}, checkpoints.ListOptions{MetadataOnly: true, Headers: true})
	if err != nil {
		r.t.Fatalf("list checkpoints: %v", err)
	}
	for _, tup := range tups {
		p := nsPath(tup.Config.Namespace)
		l.byPath[p] = append(l.byPath[p], tup.Config.CheckpointID)
		l.nsOf[tup.Config.CheckpointID] = tup.Config.Namespace
	}
	for _, ids := range l.byPath {
		slices.Sort(ids)
	}
	return l
}

// step replays one recorded operation and compares what it observes.
func (r *goldenRunner) step(where string, st goldenStep) {
	t := r.t
	ctx := context.Background()
	thread := r.thread(st)
	switch st.Op {
	case "stream":
		cfg := r.config(st)
		var input any
		if st.Command != nil {
			input = r.command(cfg, st.Command)
		} else {
			input = r.decodeInput(st.Input)
		}
		modes := make([]engine.StreamMode, len(st.Modes))
		for i, m := range st.Modes {
			modes[i] = engine.StreamMode(m)
		}
		boundary := engine.StreamDebug
		if r.saver != nil {
			boundary = engine.StreamCheckpoints
		}
		injected := !slices.Contains(modes, boundary)
		if injected {
			modes = append(modes, boundary)
		}
		opts := &engine.RunOptions{ThreadID: thread, CheckpointID: cfg.CheckpointID, RecursionLimit: st.RecursionLimit, Subgraphs: st.Subgraphs}
		if r.saver == nil {
			opts.ThreadID = ""
		}
		var parts []engine.StreamPart
		var runErr error
		for p, err := range r.g.Stream(ctx, input, opts, modes...) {
			if err != nil {
				runErr = err
				break
			}
			parts = append(parts, p)
		}
		n := r.normaliser(thread)
		got := make([]any, 0, len(parts))
		for _, lp := range stepLabels(parts, boundary, injected) {
			got = append(got, append(n.part(lp.part), lp.step))
		}
		compareParts(t, where, st.Parts, got)
		compareError(t, where, st.Error, goldenErrorKind(runErr))
	case "get_state":
		cfg := r.config(st)
		s, err := r.g.GetStateWith(ctx, cfg, engine.StateOptions{Subgraphs: st.Subgraphs})
		compareError(t, where, st.Error, goldenErrorKind(err))
		if err != nil {
			return
		}
		want, got := normaliseSnapshotsForCompare(st.State), normaliseSnapshotsForCompare(r.normaliser(thread).snapshot(s))
		compareJSON(t, where+" state", want, r.rawSnapshotValues(want, got))
	case "history":
		cfg := r.config(st)
		hs, err := r.g.GetStateHistory(ctx, cfg, engine.HistoryOptions{})
		if err != nil {
			t.Errorf("%s: GetStateHistory: %v", where, err)
			return
		}
		n := r.normaliser(thread)
		got := make([]any, len(hs))
		for i, h := range hs {
			got[i] = normaliseSnapshotsForCompare(n.snapshot(h))
		}
		want := make([]any, len(st.History))
		for i, h := range st.History {
			want[i] = normaliseSnapshotsForCompare(h)
		}
		if len(got) != len(want) {
			t.Errorf("%s: history has %d entries, golden %d\n got: %s\nwant: %s", where, len(got), len(want), historyLine(got), historyLine(want))
		}
		for i := range min(len(got), len(want)) {
			compareJSON(t, fmt.Sprintf("%s history[%d]", where, i), want[i], got[i])
		}
	case "update_state":
		cfg := r.config(st)
		var values any
		if st.Command != nil {
			values = r.command(cfg, st.Command)
		} else {
			values = r.decodeInput(st.Values)
		}
		out, err := r.g.UpdateState(ctx, cfg, values, st.AsNode)
		compareError(t, where, st.Error, goldenErrorKind(err))
		if err == nil {
			got := r.normaliser(thread).config(map[string]any{"configurable": map[string]any{"thread_id": out.ThreadID, "checkpoint_ns": out.Namespace, "checkpoint_id": out.CheckpointID}})
			compareJSON(t, where+" config", derefString(st.Config), got)
		}
	case "calls":
		compareJSON(t, where+" calls", st.Calls, r.calls.snapshot())
	default:
		t.Fatalf("%s: unknown op %q", where, st.Op)
	}
}

// derefString is *s, or nil.
func derefString(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// historyLine summarises a history in one line for failure messages.
func historyLine(hs []any) string {
	var b strings.Builder
	for _, h := range hs {
		m, _ := h.(map[string]any)
		md, _ := m["metadata"].(map[string]any)
		fmt.Fprintf(&b, "%v(%v %v next=%v) ", m["config"], md["source"], md["step"], m["next"])
	}
	return b.String()
}

// decodeInput turns a recorded input into the engine's: the builder's
// conversion, else a map as an engine.Update.
func (r *goldenRunner) decodeInput(raw json.RawMessage) any {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		r.t.Fatalf("input: %v", err)
	}
	if r.input != nil {
		return r.input(v)
	}
	if m, ok := v.(map[string]any); ok {
		return engine.Update(m)
	}
	return v
}

// command builds an engine.Command; a resume map's interrupt labels are
// resolved against the thread's pending interrupts.
func (r *goldenRunner) command(cfg checkpoints.Config, c *goldenCommand) engine.Command {
	var cmd engine.Command
	if c.HasResume {
		cmd.Resume = c.Resume
	}
	if c.ResumeMap != nil {
		st, err := r.g.GetStateWith(context.Background(), checkpoints.Config{ThreadID: cfg.ThreadID}, engine.StateOptions{Subgraphs: true})
		if err != nil {
			r.t.Fatalf("resume map: GetState: %v", err)
		}
		// Labels are interrupt values: two pending interrupts with equal
		// values cannot be told apart by label, so that fails the case.
		ids := map[string]string{}
		add := func(i engine.Interruption) {
			label := interruptLabel(jsonRoundTrip(i.Value))
			if prev, ok := ids[label]; ok && prev != i.ID {
				r.t.Fatalf("resume map: two pending interrupts share the label %s (ids %s and %s); give them distinct values", label, prev, i.ID)
			}
			ids[label] = i.ID
		}
		var walk func(s *engine.StateSnapshot)
		walk = func(s *engine.StateSnapshot) {
			for _, ts := range s.Tasks {
				for _, i := range ts.Interrupts {
					add(i)
				}
				if ts.State != nil {
					walk(ts.State)
				}
			}
			for _, i := range s.Interrupts {
				add(i)
			}
		}
		walk(st)
		m := map[string]any{}
		for label, v := range c.ResumeMap {
			id, ok := ids[label]
			if !ok {
				r.t.Fatalf("resume map: no pending interrupt %s (pending: %v)", label, ids)
			}
			m[id] = v
		}
		cmd.Resume = m
	}
	if c.Update != nil {
		cmd.Update = engine.Update(c.Update)
	}
	if c.Goto != nil {
		one := func(g any) any {
			if s, ok := g.(string); ok {
				return s
			}
			send := g.(map[string]any)["send"].([]any)
			return engine.Send{Node: send[0].(string), Arg: send[1]}
		}
		if list, ok := c.Goto.([]any); ok {
			for _, g := range list {
				cmd.Goto = append(cmd.Goto, one(g))
			}
		} else {
			cmd.Goto = []any{one(c.Goto)}
		}
	}
	return cmd
}

// goldenErrorKind is an error's kind as record.mjs writes it: upstream's
// error class for the errors both sides share, else the node's own
// message (the innermost error's text, without the engine's wrapping).
func goldenErrorKind(err error) *string {
	if err == nil || errors.Is(err, engine.ErrInterrupted) {
		return nil
	}
	var kind string
	switch {
	case errors.Is(err, engine.ErrRecursionLimit):
		kind = "GraphRecursionError"
	case errors.Is(err, engine.ErrAmbiguousResume):
		kind = "RuntimeError" // Python raises RuntimeError here
	case errors.Is(err, engine.ErrInvalidUpdate):
		kind = "InvalidUpdateError"
	case errors.Is(err, engine.ErrEmptyInput):
		kind = "EmptyInputError"
	default:
		inner := err
		for {
			u := errors.Unwrap(inner)
			if u == nil {
				break
			}
			inner = u
		}
		kind = "message:" + inner.Error()
	}
	return &kind
}

// compareError compares error kinds (nil: no error).
func compareError(t *testing.T, where string, want, got *string) {
	t.Helper()
	if derefString(want) != derefString(got) {
		t.Errorf("%s: error = %v, golden %v", where, derefString(got), derefString(want))
	}
}

// ---- normalisation (mirrors record.mjs) ----

// nsPath is a checkpoint namespace without its task ids ("root" for "").
func nsPath(ns string) string {
	if ns == "" {
		return "root"
	}
	segs := strings.Split(ns, "|")
	for i, s := range segs {
		segs[i], _, _ = strings.Cut(s, ":")
	}
	return strings.Join(segs, "|")
}

type goldenLabeller struct {
	thread string
	byPath map[string][]string
	nsOf   map[string]string
}

// label is a checkpoint's "<ns path>#<n>".
func (l *goldenLabeller) label(ns, id string) string {
	p := nsPath(ns)
	i := slices.Index(l.byPath[p], id)
	if i < 0 {
		return "unknown:" + p
	}
	return fmt.Sprintf("%s#%d", p, i)
}

// resolve turns a label back into the checkpoint's namespace and id.
func (l *goldenLabeller) resolve(label string) (ns, id string, err error) {
	p, n, _ := strings.Cut(label, "#")
	var idx int
	if _, err := fmt.Sscanf(n, "%d", &idx); err != nil {
		return "", "", fmt.Errorf("bad checkpoint label %q", label)
	}
	ids := l.byPath[p]
	if idx >= len(ids) {
		return "", "", fmt.Errorf("no checkpoint %s on thread %s (%d in %s)", label, l.thread, len(ids), p)
	}
	return l.nsOf[ids[idx]], ids[idx], nil
}

type goldenNormaliser struct {
	l *goldenLabeller
}

// normaliser labels a thread's checkpoints as they are now.
func (r *goldenRunner) normaliser(thread string) *goldenNormaliser {
	return &goldenNormaliser{l: r.labeller(thread)}
}

// jsonRoundTrip turns Go values into what JSON decoding gives: maps,
// slices, float64s.
func jsonRoundTrip(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("unmarshallable %T: %v", v, err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Sprintf("undecodable %T: %v", v, err)
	}
	return out
}

// canonicalJSON is JSON with sorted keys and no HTML escaping, as
// record.mjs's canonical.
func canonicalJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// interruptLabel is an interrupt's normalised id: its value as
// canonical JSON.
func interruptLabel(value any) string { return "interrupt:" + canonicalJSON(value) }

// config is a config's "ckpt:<label>", nil without a checkpoint id.
func (n *goldenNormaliser) config(cfg any) any {
	m, _ := cfg.(map[string]any)
	c, _ := m["configurable"].(map[string]any)
	id, _ := c["checkpoint_id"].(string)
	if id == "" {
		return nil
	}
	ns, _ := c["checkpoint_ns"].(string)
	return "ckpt:" + n.l.label(ns, id)
}

// interrupts normalises interrupt ids to their labels.
func (n *goldenNormaliser) interrupts(v any) []any {
	list, _ := v.([]any)
	out := make([]any, 0, len(list))
	for _, x := range list {
		m, _ := x.(map[string]any)
		out = append(out, map[string]any{"id": interruptLabel(m["value"]), "value": m["value"]})
	}
	return out
}

// err is a task error as "message:<text>", nil for none.
func (n *goldenNormaliser) err(e any) any {
	switch e := e.(type) {
	case nil:
		return nil
	case string:
		if e == "" {
			return nil
		}
		return "message:" + e
	}
	return fmt.Sprintf("message:%v", e)
}

// metadata keeps source, step and the parents' labels.
func (n *goldenNormaliser) metadata(md any) any {
	m, _ := md.(map[string]any)
	parents := map[string]any{}
	if ps, ok := m["parents"].(map[string]any); ok {
		for ns, id := range ps {
			parents[nsPath(ns)] = "ckpt:" + n.l.label(ns, fmt.Sprint(id))
		}
	}
	return map[string]any{"source": m["source"], "step": m["step"], "parents": parents}
}

// values normalises the interrupts of a values payload.
func (n *goldenNormaliser) values(v any) any {
	if m, ok := v.(map[string]any); ok {
		if i, ok := m["__interrupt__"]; ok {
			out := maps2(m)
			out["__interrupt__"] = n.interrupts(i)
			return out
		}
	}
	return v
}

// maps2 is a shallow copy of m.
func maps2(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// update normalises the interrupts of an updates payload.
func (n *goldenNormaliser) update(u any) any {
	m, ok := u.(map[string]any)
	if !ok {
		return u
	}
	out := maps2(m)
	if i, ok := m["__interrupt__"]; ok {
		out["__interrupt__"] = n.interrupts(i)
	}
	return out
}

// taskID is "task:<name>", nil for a task without an id.
func taskID(t map[string]any) any {
	if id, _ := t["id"].(string); id == "" {
		return nil
	}
	return fmt.Sprintf("task:%v", t["name"])
}

// taskStart keeps id, name, input and triggers, as Python sends.
func (n *goldenNormaliser) taskStart(t map[string]any) any {
	return map[string]any{"id": taskID(t), "name": t["name"], "input": t["input"], "triggers": t["triggers"]}
}

// taskResult keeps id, name, error, result and interrupts.
func (n *goldenNormaliser) taskResult(t map[string]any) any {
	return map[string]any{"id": taskID(t), "name": t["name"], "error": n.err(t["error"]), "result": t["result"], "interrupts": n.interrupts(t["interrupts"])}
}

// taskState is a task's subgraph state: a snapshot, or its namespace
// path when only the config is given.
func (n *goldenNormaliser) taskState(s any) any {
	m, ok := s.(map[string]any)
	if !ok || m == nil {
		return nil
	}
	if _, ok := m["values"]; ok {
		return n.snapshotJSON(m)
	}
	c, _ := m["configurable"].(map[string]any)
	ns, _ := c["checkpoint_ns"].(string)
	return map[string]any{"ns": nsPath(ns)}
}

// ckptTask is a "checkpoints" task entry in Python's three shapes (see
// record.mjs ckptTask).
func (n *goldenNormaliser) ckptTask(t map[string]any) any {
	state := n.taskState(t["state"])
	if e := n.err(t["error"]); e != nil {
		return map[string]any{"id": taskID(t), "name": t["name"], "error": e, "state": state}
	}
	if r, ok := t["result"].(map[string]any); ok && len(r) > 0 {
		return map[string]any{"id": taskID(t), "name": t["name"], "result": r, "interrupts": n.interrupts(t["interrupts"]), "state": state}
	}
	return map[string]any{"id": taskID(t), "name": t["name"], "interrupts": n.interrupts(t["interrupts"]), "state": state}
}

// sortedStrings is a list sorted (next lists are sets).
func sortedStrings(v any) []any {
	list, _ := v.([]any)
	out := slices.Clone(list)
	if out == nil {
		out = []any{}
	}
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i]) < fmt.Sprint(out[j]) })
	return out
}

// checkpoint normalises a "checkpoints" payload.
func (n *goldenNormaliser) checkpoint(c map[string]any) any {
	tasks, _ := c["tasks"].([]any)
	nt := make([]any, 0, len(tasks))
	for _, t := range tasks {
		m, _ := t.(map[string]any)
		nt = append(nt, n.ckptTask(m))
	}
	return map[string]any{
		"config":        n.config(c["config"]),
		"parent_config": n.config(c["parent_config"]),
		"values":        n.values(c["values"]),
		"metadata":      n.metadata(c["metadata"]),
		"next":          sortedStrings(c["next"]),
		"tasks":         nt,
	}
}

// part normalises a stream part into [ns, mode, payload]; the caller
// appends its step.
func (n *goldenNormaliser) part(p engine.StreamPart) []any {
	ns := make([]any, len(p.Namespace))
	for i, s := range p.Namespace {
		ns[i], _, _ = strings.Cut(s, ":")
	}
	data := jsonRoundTrip(p.Data)
	var out any
	switch p.Mode {
	case engine.StreamValues:
		out = n.values(data)
	case engine.StreamUpdates:
		out = n.update(data)
	case engine.StreamTasks:
		m, _ := data.(map[string]any)
		if _, ok := m["input"]; ok {
			out = n.taskStart(m)
		} else {
			out = n.taskResult(m)
		}
	case engine.StreamCheckpoints:
		m, _ := data.(map[string]any)
		out = n.checkpoint(m)
	case engine.StreamDebug:
		m, _ := data.(map[string]any)
		inner, _ := m["payload"].(map[string]any)
		var pl any
		switch m["type"] {
		case "checkpoint":
			pl = n.checkpoint(inner)
		case "task":
			pl = n.taskStart(inner)
		default:
			pl = n.taskResult(inner)
		}
		out = map[string]any{"step": m["step"], "type": m["type"], "payload": pl}
	default:
		out = data
	}
	return []any{ns, string(p.Mode), out}
}

// snapshot turns an engine snapshot into the JSON record.mjs builds from a
// LangGraph.js StateSnapshot, then normalises it.
func (n *goldenNormaliser) snapshot(s *engine.StateSnapshot) any {
	return n.snapshotJSON(snapshotJSON(s))
}

// cfgJSON is a config as LangGraph.js shapes it.
func cfgJSON(c checkpoints.Config) map[string]any {
	return map[string]any{"configurable": map[string]any{"thread_id": c.ThreadID, "checkpoint_ns": c.Namespace, "checkpoint_id": c.CheckpointID}}
}

// snapshotJSON is an engine snapshot as LangGraph.js shapes a
// StateSnapshot, before normalisation.
func snapshotJSON(s *engine.StateSnapshot) map[string]any {
	out := map[string]any{
		"values":   jsonRoundTrip(s.Values),
		"next":     jsonRoundTrip(s.Next),
		"config":   cfgJSON(s.Config),
		"metadata": jsonRoundTrip(s.Metadata),
	}
	if s.ParentConfig != nil {
		out["parentConfig"] = cfgJSON(*s.ParentConfig)
	}
	tasks := make([]any, 0, len(s.Tasks))
	for _, t := range s.Tasks {
		tm := map[string]any{"id": t.ID, "name": t.Name, "path": jsonRoundTrip(t.Path), "interrupts": jsonRoundTrip(t.Interrupts)}
		if t.Error != "" {
			tm["error"] = t.Error
		}
		if t.Result != nil {
			tm["result"] = jsonRoundTrip(t.Result)
		}
		switch {
		case t.State != nil:
			tm["state"] = snapshotJSON(t.State)
		case t.Subgraph != nil:
			tm["state"] = map[string]any{"configurable": map[string]any{"thread_id": t.Subgraph.ThreadID, "checkpoint_ns": t.Subgraph.Namespace}}
		}
		tasks = append(tasks, tm)
	}
	out["tasks"] = tasks
	return out
}

// snapshotJSON normalises a snapshot shaped as LangGraph.js's.
func (n *goldenNormaliser) snapshotJSON(s map[string]any) any {
	tasks, _ := s["tasks"].([]any)
	nt := make([]any, 0, len(tasks))
	for _, t := range tasks {
		m, _ := t.(map[string]any)
		tm := map[string]any{"id": taskID(m), "name": m["name"], "path": m["path"], "interrupts": n.interrupts(m["interrupts"])}
		if e := n.err(m["error"]); e != nil {
			tm["error"] = e
		}
		if r, ok := m["result"]; ok {
			tm["result"] = r
		}
		tm["state"] = n.taskState(m["state"])
		nt = append(nt, tm)
	}
	return map[string]any{
		"values":        n.values(s["values"]),
		"next":          sortedStrings(s["next"]),
		"config":        n.config(s["config"]),
		"parent_config": n.config(s["parentConfig"]),
		"metadata":      n.metadata(s["metadata"]),
		"tasks":         nt,
	}
}

// ---- comparison ----

// rawSnapshotValues unwraps a snapshot's values where upstream's are one
// channel's raw value (stream_channels given as one name): a documented
// difference (engine/doc.go), StateSnapshot.Values is always a map. It
// unwraps only the graph's own stream channel (goldenGraph.streamChannel)
// and only when it is the one key; anything else is compared as it is.
func (r *goldenRunner) rawSnapshotValues(want, got any) any {
	w, _ := want.(map[string]any)
	g, _ := got.(map[string]any)
	if r.streamChannel == "" || w == nil || g == nil {
		return got
	}
	if _, isMap := w["values"].(map[string]any); isMap || w["values"] == nil {
		return got
	}
	vs, _ := g["values"].(map[string]any)
	v, ok := vs[r.streamChannel]
	if !ok || len(vs) != 1 {
		return got
	}
	out := maps2(g)
	out["values"] = v
	return out
}

// normaliseSnapshotsForCompare sorts a snapshot's task list (a set), in
// nested snapshots too.
func normaliseSnapshotsForCompare(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := maps2(m)
	if tasks, ok := m["tasks"].([]any); ok {
		ts := make([]any, len(tasks))
		for i, t := range tasks {
			tm, _ := t.(map[string]any)
			if tm != nil {
				tm = maps2(tm)
				tm["state"] = normaliseSnapshotsForCompare(tm["state"])
			}
			ts[i] = tm
		}
		sortByJSON(ts)
		out["tasks"] = ts
	}
	return out
}

// sortByJSON sorts a list by its items' canonical JSON.
func sortByJSON(list []any) {
	sort.SliceStable(list, func(i, j int) bool { return canonicalJSON(list[i]) < canonicalJSON(list[j]) })
}

// labelledPart is a stream part with its step (see the file comment).
type labelledPart struct {
	part engine.StreamPart
	step int
}

// stepLabels gives each part its step, counted per raw namespace from the
// boundary (checkpoints, or debug task events with their "tasks" twins),
// and drops the boundary mode's parts when the mode was added only for
// counting: record.mjs's stepLabels, on the Go side.
func stepLabels(parts []engine.StreamPart, boundary engine.StreamMode, injected bool) []labelledPart {
	count := map[string]int{}
	ckptStep := map[string]map[string]int{}
	lastDebugStep := map[string]any{}
	data := make([]map[string]any, len(parts))
	debugStepOf := map[string]any{}
	for i, p := range parts {
		data[i], _ = jsonRoundTrip(p.Data).(map[string]any)
		if p.Mode == engine.StreamDebug && data[i]["type"] == "task" {
			inner, _ := data[i]["payload"].(map[string]any)
			debugStepOf[fmt.Sprintf("%s#%v", strings.Join(p.Namespace, "|"), inner["id"])] = data[i]["step"]
		}
	}
	out := make([]labelledPart, 0, len(parts))
	for i, p := range parts {
		key := strings.Join(p.Namespace, "|")
		if ckptStep[key] == nil {
			ckptStep[key] = map[string]int{}
		}
		step := count[key]
		data := data[i]
		if boundary == engine.StreamCheckpoints {
			var c map[string]any
			switch {
			case p.Mode == engine.StreamCheckpoints:
				c = data
			case p.Mode == engine.StreamDebug && data["type"] == "checkpoint":
				c, _ = data["payload"].(map[string]any)
			}
			cfg, _ := c["config"].(map[string]any)
			conf, _ := cfg["configurable"].(map[string]any)
			if id, ok := conf["checkpoint_id"].(string); ok {
				if _, seen := ckptStep[key][id]; !seen {
					ckptStep[key][id] = count[key]
					count[key]++
				}
				step = ckptStep[key][id]
			}
		} else {
			var id any
			switch {
			case p.Mode == engine.StreamDebug && data["type"] == "task":
				inner, _ := data["payload"].(map[string]any)
				id = inner["id"]
			case p.Mode == engine.StreamTasks && hasKey(data, "input"):
				id = data["id"]
			}
			if id != nil {
				debugStep, ok := debugStepOf[fmt.Sprintf("%s#%v", key, id)]
				if last, seen := lastDebugStep[key]; ok && (!seen || last != debugStep) {
					lastDebugStep[key] = debugStep
					count[key]++
				}
			}
			step = count[key]
		}
		if injected && p.Mode == boundary {
			continue
		}
		out = append(out, labelledPart{part: p, step: step})
	}
	return out
}

// unorderedPart says whether a part may come in any order within its
// superstep: updates, task events.
func unorderedPart(p any) bool {
	l, _ := p.([]any)
	if len(l) < 4 {
		return false
	}
	switch l[1] {
	case "updates", "tasks":
		return true
	case "debug":
		m, _ := l[2].(map[string]any)
		return m["type"] != "checkpoint"
	}
	return false
}

// hasKey says whether m has the key k.
func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

// partGroup is a part's namespace and step, as JSON.
func partGroup(p any) string {
	l := p.([]any)
	return canonicalJSON([]any{l[0], l[3]})
}

// taskEvent says whether a part is a task's start or result ("" when
// neither) and gives the task's name.
func taskEvent(p any) (kind string, name any) {
	l, _ := p.([]any)
	if len(l) < 4 {
		return "", nil
	}
	m, _ := l[2].(map[string]any)
	switch l[1] {
	case "tasks":
		if _, ok := m["input"]; ok {
			return "start", m["name"]
		}
		return "result", m["name"]
	case "debug":
		inner, _ := m["payload"].(map[string]any)
		switch m["type"] {
		case "task":
			return "start", inner["name"]
		case "task_result":
			return "result", inner["name"]
		}
	}
	return "", nil
}

// markTaskResults appends to each task result part whether a start of a
// task of the same name, mode, namespace and step came before it (each
// start answers one result), so the multiset comparison keeps a task's
// start ahead of its result.
func markTaskResults(parts []any) {
	open := map[string]int{}
	for i, p := range parts {
		kind, name := taskEvent(p)
		if kind == "" {
			continue
		}
		l := p.([]any)
		key := canonicalJSON([]any{l[0], l[1], l[3], name})
		switch kind {
		case "start":
			open[key]++
		case "result":
			mark := "no start before it"
			if open[key] > 0 {
				open[key]--
				mark = "after its start"
			}
			parts[i] = append(slices.Clone(l), mark)
		}
	}
}

// canonicalParts sorts each run of unordered parts of one namespace and
// one step, and tasks lists inside checkpoint payloads, so that the
// comparison is a multiset per step; task results are marked first
// (markTaskResults).
func canonicalParts(parts []any) []any {
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = canonicalPartPayload(p)
	}
	markTaskResults(out)
	for i := 0; i < len(out); {
		if !unorderedPart(out[i]) {
			i++
			continue
		}
		group := partGroup(out[i])
		j := i
		for j < len(out) && unorderedPart(out[j]) && partGroup(out[j]) == group {
			j++
		}
		sortByJSON(out[i:j])
		i = j
	}
	return out
}

// canonicalPartPayload sorts the sets inside a part's payload.
func canonicalPartPayload(p any) any {
	l, _ := p.([]any)
	if len(l) < 3 {
		return p
	}
	payload := l[2]
	switch l[1] {
	case "checkpoints":
		payload = normaliseSnapshotsForCompare(payload)
	case "debug":
		if m, ok := payload.(map[string]any); ok && m["type"] == "checkpoint" {
			m = maps2(m)
			m["payload"] = normaliseSnapshotsForCompare(m["payload"])
			payload = m
		}
	case "updates":
		// Two interrupts of one step come in one part or several; the
		// interrupts within a part are a set.
		if m, ok := payload.(map[string]any); ok {
			if is, ok := m["__interrupt__"].([]any); ok {
				m = maps2(m)
				is = slices.Clone(is)
				sortByJSON(is)
				m["__interrupt__"] = is
				payload = m
			}
		}
	}
	return append([]any{l[0], l[1], payload}, l[3:]...)
}

// compareParts compares a stream's parts [ns, mode, payload, step] as
// the file comment says.
func compareParts(t *testing.T, where string, want, got []any) {
	t.Helper()
	for i, p := range want {
		if l, _ := p.([]any); len(l) != 4 {
			t.Fatalf("%s: golden part %d is not [ns, mode, payload, step]: re-record (make golden/record)", where, i)
		}
	}
	w := canonicalParts(jsonRoundTrip(want).([]any))
	gotRT, _ := jsonRoundTrip(got).([]any)
	g := canonicalParts(gotRT)
	if reflect.DeepEqual(w, g) {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: stream parts [ns, mode, payload, step] differ (golden %d parts, Go %d); unordered runs of one namespace and step sorted, task results marked\n", where, len(w), len(g))
	for i := range max(len(w), len(g)) {
		var ws, gs string
		if i < len(w) {
			ws = canonicalJSON(w[i])
		}
		if i < len(g) {
			gs = canonicalJSON(g[i])
		}
		mark := "  "
		if ws != gs {
			mark = "≠ "
		}
		fmt.Fprintf(&b, "%s[%d]\n    golden: %s\n    go:     %s\n", mark, i, ws, gs)
	}
	t.Error(b.String())
}

// compareJSON compares two values as JSON decoding gives them.
func compareJSON(t *testing.T, where string, want, got any) {
	t.Helper()
	w, g := jsonRoundTrip(want), jsonRoundTrip(got)
	if reflect.DeepEqual(w, g) {
		return
	}
	t.Errorf("%s differs\n golden: %s\n     go: %s", where, canonicalJSON(w), canonicalJSON(g))
}

// TestGoldenPartsComparison checks what compareParts tells apart: a part
// in another step, and a task result ahead of its start; and what it
// does not: the order of one step's updates.
func TestGoldenPartsComparison(t *testing.T) {
	t.Parallel()
	part := func(mode string, payload any, step int) any {
		return []any{[]any{}, mode, payload, float64(step)}
	}
	upd := func(node string, step int) any { return part("updates", map[string]any{node: nil}, step) }
	start := part("tasks", map[string]any{"id": "task:a", "name": "a", "input": nil, "triggers": nil}, 1)
	result := part("tasks", map[string]any{"id": "task:a", "name": "a", "result": nil, "error": nil, "interrupts": []any{}}, 1)
	same := func(a, b []any) bool { return reflect.DeepEqual(canonicalParts(a), canonicalParts(b)) }
	if !same([]any{upd("a", 1), upd("b", 1)}, []any{upd("b", 1), upd("a", 1)}) {
		t.Error("one step's updates in another order differ")
	}
	if same([]any{upd("a", 1), upd("b", 2)}, []any{upd("b", 1), upd("a", 2)}) {
		t.Error("updates of two steps swapped compare equal")
	}
	if same([]any{start, result}, []any{result, start}) {
		t.Error("a task result ahead of its start compares equal")
	}
}
