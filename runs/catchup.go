package runs

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// CatchupLimit caps how many of a thread's latest checkpoints a new
// subscriber is sent; the thread page links to the full history.
const CatchupLimit = 200

// Subscribe registers a subscriber to the thread's events. It returns the
// catch-up first: the thread's checkpoints so far (the latest
// CatchupLimit), oldest first, as events with Catchup set, ending with a
// caught_up event carrying the thread's status; then the live events
// arrive on sub.C. The subscriber is registered before the checkpoints are
// read, so nothing is missed: an event of a step that is both in the
// catch-up and live is sent twice, and consumers apply events
// idempotently (keyed by task id and step).
func (m *Manager) Subscribe(ctx context.Context, threadID string) (catchup []Event, sub *Subscription, err error) {
	m.mu.Lock()
	t, ok := m.threads[threadID]
	if !ok {
		m.mu.Unlock()
		return nil, nil, fmt.Errorf("%w %q", ErrUnknownThread, threadID)
	}
	sub = t.hub.subscribe()
	graph := t.info.Graph
	m.mu.Unlock()
	g, err := m.Graph(graph)
	if err != nil {
		sub.Close()
		return nil, nil, err
	}
	catchup, err = Catchup(ctx, g, threadID)
	if err != nil {
		sub.Close()
		return nil, nil, err
	}
	info, err := m.Thread(threadID)
	if err != nil {
		sub.Close()
		return nil, nil, err
	}
	if info.Status == StatusRunning {
		catchup = append(catchup, running(catchup)...)
	}
	catchup = append(catchup, Event{Kind: KindCaughtUp, Catchup: true, Thread: threadID, RunID: info.RunID, Status: info.Status, Error: info.Error, Interrupts: previews(info.Pending), Time: info.Updated})
	return catchup, sub, nil
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

// Catchup rebuilds a thread's history as events, oldest first: for each
// checkpoint a barrier (the channels whose version it bumped against its
// parent, old → new) and a checkpoint event, then the tasks planned from
// it with their outcome when they ran (finished, failed, interrupted).
// Durations, attempts and triggers are not stored in checkpoints, so these
// events do not carry them. A run_started event precedes the first
// checkpoint of each run.
func Catchup(ctx context.Context, g engine.Compiled, threadID string) ([]Event, error) {
	p := g.Pregel()
	saver := p.Checkpointer()
	if saver == nil {
		return nil, nil
	}
	cfg := checkpoints.Config{ThreadID: threadID}
	tups, err := saver.List(ctx, checkpoints.ListQuery{ThreadID: threadID}, checkpoints.ListOptions{Limit: CatchupLimit})
	if err != nil {
		return nil, fmt.Errorf("runs: list checkpoints of thread %q: %w", threadID, err)
	}
	snaps, err := p.GetStateHistory(ctx, cfg, engine.HistoryOptions{Limit: CatchupLimit})
	if err != nil {
		return nil, fmt.Errorf("runs: history of thread %q: %w", threadID, err)
	}
	byID := make(map[string]*engine.StateSnapshot, len(snaps))
	for _, s := range snaps {
		byID[s.Config.CheckpointID] = s
	}
	versions := make(map[string]map[string]int64, len(tups))
	for _, tup := range tups {
		versions[tup.Config.CheckpointID] = tup.Checkpoint.ChannelVersions
	}
	var out []Event
	lastRun := ""
	for i := len(tups) - 1; i >= 0; i-- {
		tup := tups[i]
		md := tup.Metadata
		base := Event{Catchup: true, Thread: threadID, RunID: md.RunID, Time: tup.Checkpoint.TS}
		if md.RunID != lastRun || i == len(tups)-1 {
			ev := base
			ev.Kind = KindRunStarted
			out = append(out, ev)
			lastRun = md.RunID
		}
		var parent map[string]int64
		if tup.ParentConfig != nil {
			parent = versions[tup.ParentConfig.CheckpointID]
		}
		if bumps := diffVersions(parent, tup.Checkpoint.ChannelVersions); len(bumps) > 0 {
			ev := base
			ev.Kind, ev.Step, ev.Bumps = KindBarrier, md.Step, bumps
			out = append(out, ev)
		}
		snap := byID[tup.Config.CheckpointID]
		ev := base
		ev.Kind, ev.Step, ev.Checkpoint, ev.Source = KindCheckpoint, md.Step, tup.Config.CheckpointID, string(md.Source)
		if snap != nil {
			ev.Next = snap.Next
		}
		out = append(out, ev)
		if snap == nil {
			continue
		}
		for _, ts := range snap.Tasks {
			if ts.Name == engine.Start {
				continue
			}
			te := base
			te.Step, te.Node, te.TaskID = md.Step+1, ts.Name, ts.ID
			te.Kind = KindTaskPlanned
			out = append(out, te)
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
	}
	return out, nil
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
