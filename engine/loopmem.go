package engine

import "github.com/superstep-dev/superstep/engine/channels"

// loopMem is what a finished run leaves to the next run of the same graph:
// its task objects and its per-channel and per-node buffers. A graph run
// many times (a request handler, a benchmark, a Studio) then allocates
// little beyond what its nodes return. Runs with a listener keep nothing:
// events may still hold their tasks.
type loopMem struct {
	free       []*task
	chans      []channels.Channel
	versions   []int64
	seen       [][]int64 // by node; entries are spare storage
	seenDirty  []bool
	grouped    [][]any
	touchedSet []bool
	tasks      []*task
	runBuf     []*task
	candidates []int
	updated    []int
	touched    []int
	stateDirty []int
	bumps      []ChannelBump
	volFull    []int
	volNext    []int
	volIn      []bool
	// ctxs holds the unused rest of a block of task contexts.
	ctxs taskContexts
	// saves are the buffers of the run's checkpoints saved in the
	// background (async durability).
	saves []*asyncSave
}

// adopt takes the buffers of an earlier run.
func (l *loop) adopt(m *loopMem) {
	l.mem = m
	l.free = m.free
	l.tasks, l.runBuf = m.tasks[:0], m.runBuf[:0]
	l.candidates, l.updated, l.touched = m.candidates[:0], m.updated[:0], m.touched[:0]
	l.stateDirty, l.bumps = m.stateDirty[:0], m.bumps[:0]
	l.volFull, l.volNext, l.volIn = m.volFull[:0], m.volNext[:0], m.volIn
	l.ctxs = m.ctxs
}

// release hands the run's buffers to the next run, unless a listener may
// still hold its tasks. Nothing of the run may be used afterwards.
func (l *loop) release() {
	if l.emit != nil || l.g == nil {
		return
	}
	m := l.mem
	if m == nil {
		m = &loopMem{}
	}
	for _, t := range l.free {
		// Drop what the tasks point to, so a pooled task keeps no state
		// of this run alive.
		t.l, t.node, t.input, t.err, t.resume, t.interrupts = nil, nil, nil, nil, nil, nil
		t.tctx, t.nextCtx, t.scratch = nil, nil, nil
		clear(t.writes[:cap(t.writes)])
		clear(t.wbuf[:])
		clear(t.ov.vals)
		t.ov.base = nil
		clear(t.encoded[:cap(t.encoded)])
	}
	for i := range l.grouped {
		clear(l.grouped[i])
		l.grouped[i] = l.grouped[i][:0]
	}
	clear(l.touchedSet)
	// The next run takes the channels it can empty; nothing of this run
	// holds them (its output is built, its values are copies or shared
	// values that no channel modifies).
	for i, ch := range l.chans {
		if e, ok := ch.(channels.Emptier); ok {
			e.Empty()
		} else {
			l.chans[i] = nil
		}
	}
	*m = loopMem{
		free: l.free, chans: l.chans, versions: l.versions, seen: l.seen, seenDirty: l.seenDirty,
		grouped: l.grouped, touchedSet: l.touchedSet, tasks: clearTasks(l.tasks), runBuf: clearTasks(l.runBuf),
		candidates: l.candidates, updated: l.updated, touched: l.touched, stateDirty: l.stateDirty, bumps: l.bumps,
		volFull: l.volFull, volNext: l.volNext, volIn: l.volIn, ctxs: l.ctxs, saves: m.saves,
	}
	if l.persist != nil {
		m.saves = l.persist.saves()
	}
	l.g.mem.Put(m)
}

func clearTasks(ts []*task) []*task {
	clear(ts[:cap(ts)])
	return ts[:0]
}

// reuse returns s with length n and every element zero, reusing its
// storage when it is large enough.
func reuse[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}
