package engine

import (
	"fmt"
	"reflect"
	"slices"
)

// prepare plans the next superstep's tasks: Sends first, then nodes whose
// triggers have newer versions than they last saw.
func (l *loop) prepare() ([]*task, error) {
	l.prepares++
	tasks := l.tasks[:0]
	if tch := l.chans[l.g.tasksIdx]; tch.IsAvailable() {
		v, _ := tch.Get()
		sends, err := asSends(v)
		if err != nil {
			return nil, err
		}
		for idx, s := range sends {
			n, ok := l.g.nodes[s.Node]
			if !ok {
				return nil, fmt.Errorf("%w: Send to unknown node %q", ErrInvalidUpdate, s.Node)
			}
			arg, err := decodeArg(n, s.Arg)
			if err != nil {
				return nil, err
			}
			if n.needsState {
				if _, err := l.state(); err != nil {
					return nil, err
				}
			}
			t := l.newTask(n)
			t.push, t.idx, t.triggers, t.input = true, idx, pushTriggers, arg
			if l.needIDs {
				t.ID()
			}
			if err := l.prepareCache(t); err != nil {
				return nil, err
			}
			tasks = append(tasks, t)
		}
	}
	for _, ni := range l.pullCandidates() {
		n := l.g.nodeList[ni]
		if !l.triggered(n) {
			continue
		}
		if n.needsState {
			if _, err := l.state(); err != nil {
				return nil, err
			}
		}
		in, ok, err := l.readInput(n)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		t := l.newTask(n)
		t.triggers, t.input, t.idx = n.sortedTriggers(), in, -1
		t.builtInput = n.input != nil
		if l.needIDs {
			t.ID()
		}
		if err := l.prepareCache(t); err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	}
	l.tasks = tasks[:0]
	return tasks, nil
}

var pushTriggers = []string{pushKind}

// nextTasks returns the tasks of the coming step: those planned when the
// last checkpoint was saved (planNext), unless the loop planned since
// (prepare reuses the task list), else it plans them now.
func (l *loop) nextTasks() ([]*task, error) {
	if l.hasPlanned && l.plannedAt == l.prepares {
		tasks := l.planned
		l.planned, l.hasPlanned = nil, false
		for _, t := range tasks {
			if err := l.prepareCache(t); err != nil {
				return nil, err
			}
		}
		return tasks, nil
	}
	l.planned, l.hasPlanned = nil, false
	return l.prepare()
}

// planNext plans the step after the checkpoint being saved, so that the
// checkpoint is saved with its tasks' names (Checkpoint.Next) and a
// reload shows what a live listener was told; the loop then runs these
// tasks (nextTasks) rather than planning again. A planning error leaves
// Next unknown (nil): the loop's own planning reports it.
func (l *loop) planNext() []string {
	l.step++ // the tasks run at the next step: their ids say so
	// Cache keys (a CachePolicy's Key is the user's code) are computed
	// when the planned tasks are taken to run (nextTasks), not here: a run
	// that stops after this save (a breakpoint after a node, the
	// recursion limit) or a state edit computes none for the step it does
	// not reach. (A breakpoint before a node is checked once the keys
	// are computed, as upstream does.)
	l.planning = true
	tasks, err := l.prepare()
	l.step--
	l.planning = false
	if err != nil {
		l.planned, l.hasPlanned = nil, false
		return nil
	}
	l.planned, l.hasPlanned, l.plannedAt = tasks, true, l.prepares
	return taskNames(tasks)
}

// taskNames is a step's Checkpoint.Next: its tasks' names, in plan order.
func taskNames(tasks []*task) []string {
	if len(tasks) == 1 && tasks[0].node != nil {
		return tasks[0].node.alone
	}
	names := make([]string, len(tasks))
	for i, t := range tasks {
		names[i] = t.name
	}
	return names
}

// state returns the StateGraph state (a *S) as of the current step. The
// loop builds it while planning for every node that needs it, so tasks
// running in parallel only read it.
func (l *loop) state() (any, error) {
	if l.stateVal != nil {
		return l.stateVal, nil
	}
	p := l.g.statePlan
	if l.emit != nil || l.stateBuf == nil || l.stateAll {
		v, err := p.build(l.reader())
		if err != nil {
			return nil, err
		}
		if l.emit == nil {
			l.stateBuf, l.stateAll, l.stateDirty = v, false, l.stateDirty[:0]
			l.statePtr = reflect.ValueOf(v).UnsafePointer()
		}
		l.stateVal = v
		return v, nil
	}
	if err := p.refresh(l.statePtr, l.reader(), l.stateDirty); err != nil {
		l.stateAll = true
		return nil, err
	}
	l.stateDirty = l.stateDirty[:0]
	l.stateVal = l.stateBuf
	return l.stateVal, nil
}

// newTask takes a task from the loop's pool: tasks of a finished step are
// reused, so a long run allocates none per step.
func (l *loop) newTask(n *Node) *task {
	var t *task
	if len(l.free) > 0 {
		t = l.free[len(l.free)-1]
		l.free = l.free[:len(l.free)-1]
		// Only the run state is cleared (in place: a composite literal
		// would be built on the stack and copied over); the buffers are
		// emptied.
		t.taskRun = taskRun{}
		b := &t.taskBufs
		b.writes, b.wch = b.writes[:0], b.wch[:0]
		b.encoded, b.encBuf = b.encoded[:0], b.encBuf[:0]
		b.ov.names, b.ov.vals = b.ov.names[:0], b.ov.vals[:0]
	} else {
		t = &task{}
		t.writes, t.wch = t.wbuf[:0], t.wcbuf[:0]
	}
	t.l, t.name, t.node = l, n.Name, n
	return t
}

// recycle returns a finished step's tasks to the pool, unless events or
// a saver may still hold them.
func (l *loop) recycle(tasks []*task) {
	if l.emit != nil {
		return
	}
	l.free = append(l.free, tasks...)
}

func (l *loop) taskNS(name string) string {
	if l.ns == "" {
		return name
	}
	return l.ns + "|" + name
}

func (l *loop) pullCandidates() []int {
	c := l.candidates[:0]
	if !l.updatedKnown {
		for i := range l.g.nodeList {
			c = append(c, i)
		}
	} else {
		for _, ch := range l.updated {
			c = append(c, l.g.trigNodes[ch]...)
		}
		if len(c) > 1 {
			sortFew(c)
			c = slices.Compact(c)
		}
	}
	l.candidates = c
	return c
}

// sortFew sorts channel or node indexes, of which a step has a few:
// without a call into the sort for none, one or two.
func sortFew(s []int) {
	switch {
	case len(s) < 2:
	case len(s) == 2:
		if s[1] < s[0] {
			s[0], s[1] = s[1], s[0]
		}
	default:
		slices.Sort(s)
	}
}

func (l *loop) triggered(n *Node) bool {
	seen := l.seen[n.idx]
	for k, c := range n.trig {
		if !l.chans[c].IsAvailable() {
			continue
		}
		if seen == nil || l.versions[c] > seen[k] {
			return true
		}
	}
	return false
}

func (n *Node) sortedTriggers() []string {
	if !slices.IsSorted(n.Triggers) {
		n.Triggers = slices.Sorted(slices.Values(n.Triggers))
	}
	return n.Triggers
}

func (l *loop) prepareCache(t *task) error {
	if l.planning || t.node.Cache == nil || l.g.cfg.Cache == nil {
		return nil
	}
	k, err := t.node.Cache.key(t.node, t.input)
	if err != nil {
		return fmt.Errorf("node %q: %w", t.name, err)
	}
	t.cacheKey, t.useCache = k, true
	return nil
}

func asSends(v any) ([]Send, error) {
	switch x := v.(type) {
	case []Send:
		return x, nil
	case []any:
		out := make([]Send, 0, len(x))
		for _, e := range x {
			switch s := e.(type) {
			case Send:
				out = append(out, s)
			case *Send:
				out = append(out, *s)
			default:
				return nil, fmt.Errorf("%w: %T written to the tasks channel is not a Send", ErrInvalidUpdate, e)
			}
		}
		return out, nil
	case nil:
		return nil, nil
	}
	return nil, fmt.Errorf("%w: tasks channel holds %T", ErrInvalidUpdate, v)
}
