package runs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// CatchupLimit caps how many of a thread's latest checkpoints a new
// subscriber is sent; the thread page links to the full history.
const CatchupLimit = 200

// Subscribe registers a subscriber to the thread's events. It returns the
// catch-up first: the head's lineage (at most CatchupLimit checkpoints),
// oldest first, as events with Catchup set, with the details checkpoints
// do not keep folded in from the run log (answers, durations, attempts,
// cache hits, cancelled tasks; see withRunLog) and from the thread's
// retained events, ending with a caught_up event
// carrying the thread's status and a cursor; then the live events arrive
// on sub.C. The subscriber is registered before the checkpoints are read,
// so nothing is missed: an event of a step that is both in the catch-up
// and live is sent twice, and consumers apply events idempotently (keyed
// by task id and step). Chunks, which are appended, are the exception:
// the text of the replies still streaming is taken with the registration,
// so each chunk is in the catch-up's text or live, once.
func (m *Manager) Subscribe(ctx context.Context, threadID string) (catchup []Event, sub *Subscription, err error) {
	t, err := m.holdThread(ctx, threadID)
	if err != nil {
		return nil, nil, err
	}
	h := t.hub
	sub, cursor, streaming := h.subscribeAt()
	m.mu.Unlock()
	m.follow(ctx, t)
	catchup, err = m.history(ctx, threadID, h, streaming)
	if err != nil {
		sub.Close()
		return nil, nil, err
	}
	caught, err := m.caughtUp(ctx, threadID, cursor)
	if err != nil {
		sub.Close()
		return nil, nil, err
	}
	return append(catchup, caught), sub, nil
}

// SubscribeFrom is Subscribe for a subscriber that already shows the
// thread up to cursor (a page rendered from History, a tab reconnecting
// with the cursor of the last event it applied): the catch-up is only the
// retained live events after the cursor, then caught_up, and no
// checkpoint is read. A cursor from another process, or one whose
// following events are no longer retained, gets Subscribe's full
// catch-up. A malformed cursor is ErrInvalidInput (see CheckCursor).
func (m *Manager) SubscribeFrom(ctx context.Context, threadID, cursor string) (catchup []Event, sub *Subscription, err error) {
	c, err := parseCursor(cursor)
	if err != nil {
		return nil, nil, err
	}
	t, err := m.holdThread(ctx, threadID)
	if err != nil {
		return nil, nil, err
	}
	evs, sub, at, err := t.hub.resume(c)
	m.mu.Unlock()
	if errors.Is(err, errCursorGone) {
		return m.Subscribe(ctx, threadID)
	}
	m.follow(ctx, t)
	caught, err := m.caughtUp(ctx, threadID, at)
	if err != nil {
		sub.Close()
		return nil, nil, err
	}
	return append(evs, caught), sub, nil
}

// History returns what Subscribe's catch-up holds, without subscribing
// and without the caught_up event, and the cursor it is current to: a
// page renders it, then subscribes with SubscribeFrom(cursor). The cursor
// is taken before the checkpoints are read, so the events after it may
// repeat some of what the page shows (applying them again is harmless).
//
// A thread of an earlier process (or one evicted while idle), known only
// from the registry, is loaded and gets a hub with no retained events:
// its catch-up is what its checkpoints hold.
func (m *Manager) History(ctx context.Context, threadID string) ([]Event, string, error) {
	t, err := m.holdThread(ctx, threadID)
	if err != nil {
		return nil, "", err
	}
	h := t.hub
	m.mu.Unlock()
	// Followed from before the cursor: the tab that subscribes from it
	// next gets other processes' events after it from this hub.
	m.follow(ctx, t)
	cursor := h.cursor()
	evs, err := m.history(ctx, threadID, h, h.streamingNow())
	return evs, cursor, err
}

// history is the thread's catch-up: its checkpoints as events, the
// retained live details merged in, and while it runs the tasks at work
// and streaming, the replies still streaming (taken by the caller, with
// its subscription if it has one).
func (m *Manager) history(ctx context.Context, threadID string, h *hub, streaming []Event) ([]Event, error) {
	info, err := m.Thread(ctx, threadID)
	if err != nil {
		return nil, err
	}
	g, err := m.Graph(info.Graph)
	if err != nil {
		return nil, err
	}
	evs, err := Catchup(ctx, g, threadID)
	if err != nil {
		return nil, err
	}
	recs, err := m.runLogOf(ctx, threadID, RunLogLimit)
	if err != nil {
		return nil, fmt.Errorf("runs: read the run log of thread %q: %w", threadID, err)
	}
	live := h.retained()
	evs = withSubgraphTasks(withRunLog(mergeDetails(evs, live), recs), live)
	if info.Status == StatusRunning {
		evs = append(evs, running(evs)...)
		// The text of the replies still streaming, whole (see
		// KindMessageChunk).
		evs = append(evs, streaming...)
	}
	return evs, nil
}

func (m *Manager) caughtUp(ctx context.Context, threadID, cursor string) (Event, error) {
	info, err := m.Thread(ctx, threadID)
	if err != nil {
		return Event{}, err
	}
	return Event{Kind: KindCaughtUp, Catchup: true, Thread: threadID, RunID: info.RunID, Status: info.Status, Error: info.Error,
		Interrupts: previews(info.Pending), Cursor: cursor, Time: info.Updated}, nil
}

// mergeDetails adds to catch-up task events what only live events know:
// triggers, durations, attempts, cache hits, and edges where the
// checkpoints could not tell them (the first step after a fork). Events
// are matched by step and task id; the latest live event of a task wins.
func mergeDetails(evs, live []Event) []Event {
	if len(live) == 0 {
		return evs
	}
	type detail struct {
		triggers []string
		edges    []Edge
		ms       float64
		attempt  int
		cached   bool
		done     bool
	}
	byTask := map[string]*detail{}
	for i := range live {
		ev := &live[i]
		if ev.TaskID == "" {
			continue
		}
		key := strconv.Itoa(ev.Step) + "-" + ev.TaskID
		d := byTask[key]
		if d == nil {
			d = &detail{}
			byTask[key] = d
		}
		if len(ev.Triggers) > 0 {
			d.triggers = ev.Triggers
		}
		if len(ev.Edges) > 0 {
			d.edges = ev.Edges
		}
		if ev.Attempt > 0 {
			d.attempt = ev.Attempt
		}
		if ev.Kind == KindTaskFinished {
			d.ms, d.cached, d.done = ev.DurationMS, ev.Cached, true
		}
	}
	for i := range evs {
		ev := &evs[i]
		d := byTask[strconv.Itoa(ev.Step)+"-"+ev.TaskID]
		if ev.TaskID == "" || d == nil {
			continue
		}
		switch ev.Kind {
		case KindTaskPlanned:
			if len(ev.Triggers) == 0 {
				ev.Triggers = d.triggers
			}
			if len(ev.Edges) == 0 {
				ev.Edges = d.edges
			}
		case KindTaskFinished:
			if d.done {
				ev.DurationMS, ev.Cached = d.ms, d.cached
			}
			ev.Attempt = max(ev.Attempt, d.attempt)
		case KindTaskFailed, KindTaskInterrupted:
			ev.Attempt = max(ev.Attempt, d.attempt)
		}
	}
	return evs
}

// withSubgraphTasks places the retained live task events of subgraphs
// (checkpoints of the thread's graph do not hold them) right after the
// task_planned event of the thread graph's task they ran in, as catch-up
// events: a page rebuilt from the catch-up lights the nodes of an
// expanded subgraph as the live page did. Subgraph tasks of a task the
// catch-up does not list (cut by CatchupLimit) are left out.
func withSubgraphTasks(evs, live []Event) []Event {
	byRoot := map[string][]Event{}
	for _, ev := range live {
		if ev.Path == "" || ev.root == "" {
			continue
		}
		ev.Seq, ev.Catchup, ev.encoded = 0, true, nil
		byRoot[ev.root] = append(byRoot[ev.root], ev)
	}
	if len(byRoot) == 0 {
		return evs
	}
	out := make([]Event, 0, len(evs)+len(live))
	for _, ev := range evs {
		out = append(out, ev)
		if ev.Kind != KindTaskPlanned || ev.Path != "" {
			continue
		}
		if inner, ok := byRoot[ev.TaskID]; ok {
			out = append(out, inner...)
			delete(byRoot, ev.TaskID)
		}
	}
	return out
}

// running lists, as task_started events, the tasks planned from the last
// checkpoint that have no outcome yet: while the thread runs, those are
// the tasks at work (checkpoints do not record that a task started).
func running(evs []Event) []Event {
	last := -1
	for i, ev := range evs {
		if ev.Kind == KindCheckpoint {
			last = i
		}
	}
	if last < 0 {
		return nil
	}
	var out []Event
	for i := last + 1; i < len(evs); i++ {
		ev := evs[i]
		if ev.Kind != KindTaskPlanned {
			continue
		}
		done := slices.ContainsFunc(evs[i+1:], func(o Event) bool { return o.TaskID == ev.TaskID && o.Kind != KindTaskPlanned })
		if !done {
			ev.Kind = KindTaskStarted
			out = append(out, ev)
		}
	}
	return out
}

// Subscribers reports how many subscribers the thread has.
func (m *Manager) Subscribers(threadID string) int {
	m.mu.Lock()
	t, ok := m.threads[threadID]
	m.mu.Unlock()
	if !ok {
		return 0
	}
	return t.hub.count()
}

// Catchup rebuilds the history of a thread's head as events, oldest
// first: the latest checkpoint's lineage (its parent chain, see lineage),
// so a fork's abandoned branch is left out. For each checkpoint a barrier (the channels whose version it bumped against its
// parent, old → new) and a checkpoint event, then the tasks planned from
// it with the edges that caused them and their outcome when they ran
// (finished, failed, interrupted). The last checkpoint event carries the
// whole state, previewed (Reset), marked with the keys its step changed.
// Durations, attempts and cache hits are not stored in checkpoints, so
// these events do not carry them (the Manager folds its run log in). A
// run_started event precedes the first checkpoint of each run (and of
// each state edit: their run id is "").
//
// It reads the history once, as raw tuples: their versions, updated
// channels and pending writes give the edges, and the engine's StateOf
// derives from the same tuples the next tasks, task outcomes and values.
func Catchup(ctx context.Context, g engine.Compiled, threadID string) ([]Event, error) {
	p := g.Pregel()
	saver := p.Checkpointer()
	if saver == nil {
		return nil, nil
	}
	tups, err := saver.List(ctx, checkpoints.ListQuery{ThreadID: threadID}, checkpoints.ListOptions{Limit: CatchupLimit})
	if err != nil {
		return nil, fmt.Errorf("runs: list checkpoints of thread %q: %w", threadID, err)
	}
	tups, err = lineage(ctx, saver, tups)
	if err != nil {
		return nil, fmt.Errorf("runs: lineage of thread %q: %w", threadID, err)
	}
	versions := make(map[string]map[string]int64, len(tups))
	for _, tup := range tups {
		versions[tup.Config.CheckpointID] = tup.Checkpoint.ChannelVersions
	}
	trig := newTriggerIndex(g)
	var edges edgeState
	var vals valueState
	var out []Event
	lastRun := ""
	lastCkpt, lastOps := -1, map[string]string(nil)
	var lastValues map[string]any
	for i := len(tups) - 1; i >= 0; i-- {
		tup := tups[i]
		md := tup.Metadata
		base := Event{Catchup: true, Thread: threadID, Time: tup.Checkpoint.TS}
		if md.RunID != lastRun || i == len(tups)-1 {
			ev := base
			ev.Kind, ev.RunID = KindRunStarted, md.RunID
			out = append(out, ev)
			lastRun = md.RunID
		}
		var parent map[string]int64
		parentID := ""
		if tup.ParentConfig != nil {
			parentID = tup.ParentConfig.CheckpointID
			parent = versions[parentID]
		}
		bumps := diffVersions(parent, tup.Checkpoint.ChannelVersions)
		if len(bumps) > 0 {
			ev := base
			ev.Kind, ev.Step, ev.Bumps = KindBarrier, md.Step, bumps
			out = append(out, ev)
		}
		for _, b := range bumps {
			vals.bump(b.Channel)
		}
		id := tup.Config.CheckpointID
		edges.checkpoint(id, parentID, md.Source == checkpoints.SourceInput, tup.Checkpoint.UpdatedChannels)
		// As GetStateHistory does: each checkpoint as saved, without the
		// pending writes of an interrupted step applied.
		snap, err := p.StateOf(tup, false)
		if err != nil {
			return nil, fmt.Errorf("runs: state of checkpoint %q of thread %q: %w", id, threadID, err)
		}
		ev := base
		ev.Kind, ev.Step, ev.Checkpoint, ev.Source, ev.Parent = KindCheckpoint, md.Step, id, string(md.Source), parentID
		ev.Next = snap.Next
		lastOps, _ = vals.next(id, parentID, snap.Values)
		lastCkpt, lastValues = len(out), snap.Values
		out = append(out, ev)
		plan := edges.planned(catchupTasks(snap.Tasks, tup.Checkpoint.UpdatedChannels, &edges, trig))
		names := make(map[string]string, len(snap.Tasks))
		// When the lineage goes on from this checkpoint by an edit or a
		// fork rather than by its own step, what its tasks wrote belongs
		// to the abandoned branch: those tasks are left out. (A task
		// that was interrupted or failed wrote nothing, and stays.)
		superseded := i > 0 && tups[i-1].Metadata.Source != checkpoints.SourceLoop
		for _, ts := range snap.Tasks {
			names[ts.ID] = ts.Name
			if ts.Name == engine.Start || superseded && ts.Error == "" && len(ts.Interrupts) == 0 && ts.Result != nil {
				continue
			}
			te := base
			te.Step, te.Node, te.TaskID = md.Step+1, ts.Name, ts.ID
			te.Kind, te.Edges = KindTaskPlanned, plan[ts.ID]
			out = append(out, te)
			te.Edges = nil
			switch {
			case ts.Error != "":
				te.Kind, te.Error = KindTaskFailed, ts.Error
				out = append(out, te)
			case len(ts.Interrupts) > 0:
				te.Kind, te.Interrupts = KindTaskInterrupted, previews(ts.Interrupts)
				out = append(out, te)
			case ts.Result != nil:
				te.Kind = KindTaskFinished
				for k := range ts.Result {
					te.Writes = append(te.Writes, k)
				}
				sort.Strings(te.Writes)
				out = append(out, te)
			}
		}
		// The writes of the tasks planned here feed the next step's edges.
		for _, w := range tup.PendingWrites {
			node, ok := names[w.TaskID]
			if !ok || superseded {
				continue
			}
			if w.Channel == checkpoints.TasksChannel {
				if to, ok := sendTarget(w.Value); ok {
					edges.sent(node, to)
				}
				continue
			}
			edges.wrote(node, w.Channel)
		}
	}
	if lastCkpt >= 0 {
		out[lastCkpt].Values, out[lastCkpt].Reset = renderValues(lastValues, lastOps, true), true
	}
	return out, nil
}

// lineage is the head's own history, newest first: the thread's latest
// checkpoint (tups[0]) and its parents, up to CatchupLimit of them. A
// fork leaves the abandoned branch out, so a page never mixes the steps
// of two branches. Parents not among tups (a long abandoned branch pushed
// them out of the newest CatchupLimit) are read one by one.
func lineage(ctx context.Context, saver checkpoints.Saver, tups []*checkpoints.Tuple) ([]*checkpoints.Tuple, error) {
	if len(tups) == 0 {
		return tups, nil
	}
	byID := make(map[string]*checkpoints.Tuple, len(tups))
	for _, t := range tups {
		byID[t.Config.CheckpointID] = t
	}
	out := []*checkpoints.Tuple{tups[0]}
	for len(out) < CatchupLimit {
		p := out[len(out)-1].ParentConfig
		if p == nil || p.CheckpointID == "" {
			break
		}
		t, ok := byID[p.CheckpointID]
		if !ok {
			var err error
			if t, err = saver.Get(ctx, *p); err != nil {
				return nil, err
			}
			if t == nil {
				break
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// catchupTasks describes a checkpoint's tasks for edge tracking. Snapshots
// do not say which task is a Send's, nor a task's triggers: the engine
// plans Send tasks first, one per Send the previous step wrote, so the
// first tasks of a node that was sent to are its Send tasks; a pulled
// task's triggers are the updated channels that trigger its node.
func catchupTasks(ts []engine.TaskState, updated []string, edges *edgeState, trig triggerIndex) []plannedTask {
	pushes := maps.Clone(edges.sendCount)
	out := make([]plannedTask, 0, len(ts))
	for _, t := range ts {
		pt := plannedTask{ID: t.ID, Node: t.Name}
		if pushes[t.Name] > 0 {
			pt.Push = true
			pushes[t.Name]--
		} else {
			pt.Triggers = trig.triggers(t.Name, updated)
		}
		out = append(out, pt)
	}
	return out
}

// diffVersions lists the channels whose version differs between parent
// and child, sorted by channel.
func diffVersions(parent, child map[string]int64) []Bump {
	var out []Bump
	for ch, v := range child {
		if old := parent[ch]; old != v {
			out = append(out, Bump{Channel: ch, Old: old, New: v})
		}
	}
	slices.SortFunc(out, func(a, b Bump) int {
		if a.Channel < b.Channel {
			return -1
		}
		if a.Channel > b.Channel {
			return 1
		}
		return 0
	})
	return out
}
