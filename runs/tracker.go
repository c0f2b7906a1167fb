package runs

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// tracker follows one thread's events to say what the engine's events do
// not say directly: which graph edges fired for each task, and which
// top-level state keys each checkpoint changed. The hub runs one per
// thread over the live engine events (under its lock); Catchup runs one
// over the checkpoints, so a page rebuilt from checkpoints shows what a
// page that watched the run shows.
type tracker struct {
	edges  edgeState
	values valueState
	// updated holds the channels the last barrier updated until the
	// checkpoint that follows it (live events report them separately).
	updated []string
	// out holds what the last engine event computed for the events made
	// from it: edges by task id, the checkpoint's value changes.
	plan   map[string][]Edge
	change []ValueChange
	reset  bool
}

// observe feeds one engine event to the tracker (live path).
func (t *tracker) observe(ev engine.Event) {
	switch e := ev.(type) {
	case engine.BarrierApplied:
		t.updated = e.Updated
		for _, b := range e.Bumps {
			t.values.bump(b.Channel)
		}
	case engine.CheckpointSaved:
		parent := ""
		if e.Parent != nil {
			parent = e.Parent.CheckpointID
		}
		id := e.Config.CheckpointID
		t.edges.checkpoint(id, parent, e.Metadata.Source == checkpoints.SourceInput, t.updated)
		t.updated = nil
		ops, known := t.values.next(id, parent, e.Values)
		t.change, t.reset = renderValues(e.Values, ops, !known), !known
	case engine.StepPlanned:
		tasks := make([]plannedTask, 0, len(e.Tasks))
		for _, k := range e.Tasks {
			tasks = append(tasks, plannedTask{ID: k.ID, Node: k.Name, Push: k.Path == "__pregel_push", Triggers: k.Triggers})
		}
		t.plan = t.edges.planned(tasks)
	case engine.TaskFinished:
		for _, w := range e.Writes {
			if w.Key == checkpoints.TasksChannel {
				if s, ok := sendTarget(w.Value); ok {
					t.edges.sent(e.Task.Name, s)
				}
				continue
			}
			t.edges.wrote(e.Task.Name, w.Key)
		}
	}
}

// annotate adds to an event what the tracker computed for it.
func (t *tracker) annotate(ev *Event) {
	switch ev.Kind {
	case KindTaskPlanned:
		ev.Edges = t.plan[ev.TaskID]
	case KindCheckpoint:
		ev.Values, ev.Reset = t.change, t.reset
		t.change, t.reset = nil, false
	}
}

// sendTarget is the node a write to the tasks channel sends to: a Send
// live, its JSON ({"node": ...}) when read back from a checkpoint.
func sendTarget(v any) (string, bool) {
	switch s := v.(type) {
	case engine.Send:
		return s.Node, true
	case *engine.Send:
		return s.Node, s != nil
	case json.RawMessage:
		var x struct {
			Node string `json:"node"`
		}
		if json.Unmarshal(s, &x) == nil && x.Node != "" {
			return x.Node, true
		}
	}
	return "", false
}

// plannedTask is what edge tracking needs of a planned task.
type plannedTask struct {
	ID, Node string
	// Push is set for a Send's task; Triggers are a pulled task's trigger
	// channels (those that did not change are skipped).
	Push     bool
	Triggers []string
}

// edgeState finds the edges that fired. A task pulled in step s by
// channel ch was caused by the tasks that wrote ch since ch last
// triggered a task: for a plain or conditional edge that is the source
// task of step s-1; for a deferred node it may be an earlier step (the
// channel waits for the run to go quiet); for a join every source that
// wrote the barrier channel, whatever its step. The input counts as the
// __start__ node. A Send's task was caused by the tasks that sent it in
// step s-1. A channel "triggered" step s when the barrier before it
// updated it (the engine's updated channels), which is exactly when the
// engine plans a task from it.
type edgeState struct {
	last    string              // the checkpoint the state follows
	updated map[string]bool     // channels the barrier before it updated
	writers map[string][]string // channel → nodes that wrote it since it last triggered a task
	sends   map[string][]string // node → nodes that sent it a task in the last step
	// sendCount counts the Sends to each node in the last step (a
	// catch-up tells Send tasks from pulled ones by it).
	sendCount map[string]int
	plan      map[string][]Edge // task id → edges of the last planned step
}

// checkpoint moves the state to checkpoint id. A checkpoint that does not
// follow the previous one (a fork, an edit of an older checkpoint, the
// first one seen after a restart) starts from nothing: which tasks wrote
// what before it is not known, so its first step shows no edges rather
// than wrong ones.
func (s *edgeState) checkpoint(id, parent string, input bool, updated []string) {
	if s.last == "" || parent != s.last {
		s.writers, s.sends, s.sendCount, s.plan = nil, nil, nil, nil
	}
	s.last = id
	s.updated = make(map[string]bool, len(updated))
	for _, ch := range updated {
		s.updated[ch] = true
		if input {
			s.wrote(engine.Start, ch)
		}
	}
}

func (s *edgeState) wrote(node, channel string) {
	if s.writers == nil {
		s.writers = map[string][]string{}
	}
	if !slices.Contains(s.writers[channel], node) {
		s.writers[channel] = append(s.writers[channel], node)
	}
}

func (s *edgeState) sent(from, to string) {
	if s.sends == nil {
		s.sends, s.sendCount = map[string][]string{}, map[string]int{}
	}
	s.sendCount[to]++
	if !slices.Contains(s.sends[to], from) {
		s.sends[to] = append(s.sends[to], from)
	}
}

// planned returns the edges of each task of a step, by task id. A step
// planned again (a resume runs the interrupted step's tasks again, with
// the same ids) keeps the edges found the first time.
func (s *edgeState) planned(tasks []plannedTask) map[string][]Edge {
	out := make(map[string][]Edge, len(tasks))
	var fired []string
	for _, t := range tasks {
		if t.Node == engine.Start {
			continue
		}
		if es, ok := s.plan[t.ID]; ok {
			out[t.ID] = es
			continue
		}
		var es []Edge
		add := func(from string) {
			if e := (Edge{from, t.Node}); !slices.Contains(es, e) {
				es = append(es, e)
			}
		}
		if t.Push {
			for _, from := range s.sends[t.Node] {
				add(from)
			}
		} else {
			for _, ch := range t.Triggers {
				if !s.updated[ch] {
					continue
				}
				fired = append(fired, ch)
				for _, from := range s.writers[ch] {
					add(from)
				}
			}
		}
		out[t.ID] = es
	}
	for _, ch := range fired {
		delete(s.writers, ch)
	}
	s.sends, s.sendCount = nil, nil
	s.plan = out
	return out
}

// valueState follows the state a thread page's values panel shows: the
// values at the last checkpoint, and the channels bumped since.
type valueState struct {
	last   string
	known  bool
	values map[string]any
	// keysOnly is set once forget dropped the values (each key maps to
	// nil): enough to diff a step on the same branch, not a fork.
	keysOnly bool
	bumped   map[string]bool
}

// forget drops the values and keeps their keys, when a run ends: an idle
// thread should not hold its whole state in memory. A run that goes on
// from the last checkpoint (a resume) is still diffed by the bumped keys;
// a fork or an edit of an older checkpoint then gets a reset.
func (v *valueState) forget() {
	if v.keysOnly || v.values == nil {
		return
	}
	keys := make(map[string]any, len(v.values))
	for k := range v.values {
		keys[k] = nil
	}
	v.values, v.keysOnly = keys, true
}

func (v *valueState) bump(channel string) {
	if v.bumped == nil {
		v.bumped = map[string]bool{}
	}
	v.bumped[channel] = true
}

// next moves to checkpoint id with values and returns the op of each key
// that changed. When the checkpoint follows the previous one, a key
// changed exactly when its channel's version was bumped, so no value is
// compared; after a fork or edit of an older checkpoint the values are
// compared key by key. known is false when there was no previous state to
// compare with (the ops then say only which keys the step bumped).
func (v *valueState) next(id, parent string, values map[string]any) (ops map[string]string, known bool) {
	ops = map[string]string{}
	sameBranch := parent != "" && parent == v.last
	known = v.known && (sameBranch || !v.keysOnly)
	switch {
	case !known:
		for k := range values {
			if v.bumped[k] {
				ops[k] = OpChanged
			}
		}
	case sameBranch:
		for k := range v.bumped {
			_, now := values[k]
			_, was := v.values[k]
			switch {
			case now && !was:
				ops[k] = OpAdded
			case was && !now:
				ops[k] = OpRemoved
			case now:
				ops[k] = OpChanged
			}
		}
	default:
		for k, nv := range values {
			ov, was := v.values[k]
			switch {
			case !was:
				ops[k] = OpAdded
			case !reflect.DeepEqual(ov, nv):
				ops[k] = OpChanged
			}
		}
		for k := range v.values {
			if _, now := values[k]; !now {
				ops[k] = OpRemoved
			}
		}
	}
	v.last, v.known, v.values, v.keysOnly = id, true, values, false
	clear(v.bumped)
	return ops, known
}

// renderValues previews the keys a values update carries, sorted: the
// changed keys, or with all every key (a reset) marked with its op.
func renderValues(values map[string]any, ops map[string]string, all bool) []ValueChange {
	var keys []string
	if all {
		keys = slices.Collect(maps.Keys(values))
	} else {
		keys = slices.Collect(maps.Keys(ops))
	}
	slices.Sort(keys)
	out := make([]ValueChange, 0, len(keys))
	for _, k := range keys {
		c := ValueChange{Key: k, Op: ops[k]}
		if v, ok := values[k]; ok {
			c.JSON, c.Truncated, c.Size = PreviewSize(v, ValuePreviewBytes)
			if !c.Truncated {
				c.Size = 0 // the preview is the whole value
			}
		} else {
			c.Op = OpRemoved
		}
		out = append(out, c)
	}
	return out
}

// triggerIndex says which nodes a channel triggers, from what the
// compiled graph shows of itself (the engine does not export node
// triggers). A StateGraph names its trigger channels: branch:to:<node>
// for plain, conditional, deferred and Command edges, join:<a>+<b>:<node>
// for joins, __start__ for the input node. A low-level Pregel graph's
// topology labels each edge with the channel it goes through.
type triggerIndex struct {
	nodes   map[string]bool
	byLabel map[string][]string
	low     bool
}

func newTriggerIndex(g engine.Compiled) triggerIndex {
	x := triggerIndex{nodes: map[string]bool{}, byLabel: map[string][]string{}}
	for _, n := range g.Pregel().NodeNames() {
		x.nodes[n] = true
	}
	if _, low := g.(*engine.Pregel); low {
		x.low = true
		for _, e := range g.Topology().Edges {
			if e.Label != "" && e.To != engine.End && !slices.Contains(x.byLabel[e.Label], e.To) {
				x.byLabel[e.Label] = append(x.byLabel[e.Label], e.To)
			}
		}
	}
	return x
}

// triggered lists the nodes channel ch triggers.
func (x triggerIndex) triggered(ch string) []string {
	if x.low {
		return x.byLabel[ch]
	}
	switch {
	case ch == engine.Start && x.nodes[engine.Start]:
		return []string{engine.Start}
	case strings.HasPrefix(ch, "branch:to:"):
		if n := ch[len("branch:to:"):]; x.nodes[n] {
			return []string{n}
		}
	case strings.HasPrefix(ch, "join:"):
		// join:<sources joined by +>:<node>; a node name may itself hold
		// ':' or '+', so take the longest node name that ends the channel.
		best := ""
		for n := range x.nodes {
			if len(n) > len(best) && strings.HasSuffix(ch, ":"+n) {
				best = n
			}
		}
		if best != "" {
			return []string{best}
		}
	}
	return nil
}

// triggers lists the channels among updated that trigger node.
func (x triggerIndex) triggers(node string, updated []string) []string {
	var out []string
	for _, ch := range updated {
		if slices.Contains(x.triggered(ch), node) {
			out = append(out, ch)
		}
	}
	return out
}
