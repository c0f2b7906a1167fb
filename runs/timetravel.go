package runs

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// ErrUnknownCheckpoint: the thread has no checkpoint with that id.
var ErrUnknownCheckpoint = errors.New("unknown checkpoint")

// Checkpoint reads one checkpoint of a thread ("" for the latest) from
// the thread's graph's saver, ErrUnknownCheckpoint when there is none.
func (m *Manager) Checkpoint(ctx context.Context, threadID, checkpointID string) (*checkpoints.Tuple, error) {
	info, err := m.Thread(ctx, threadID)
	if err != nil {
		return nil, err
	}
	g, err := m.Graph(info.Graph)
	if err != nil {
		return nil, err
	}
	tup, err := g.Pregel().Checkpointer().Get(ctx, checkpoints.Config{ThreadID: threadID, CheckpointID: checkpointID})
	if err != nil {
		return nil, fmt.Errorf("runs: read checkpoint %q of thread %q: %w", checkpointID, threadID, err)
	}
	if tup == nil {
		return nil, fmt.Errorf("%w: thread %q has no checkpoint %q", ErrUnknownCheckpoint, threadID, checkpointID)
	}
	return tup, nil
}

// beginEdit claims a thread for a change no run may overlap (a state
// edit, a checkpoint's metadata patch, a delete): while it holds, runs
// and other edits are refused with ErrThreadBusy. A run that is active,
// or an edit under way, refuses the claim, with advice saying what to do.
// It returns the thread, its graph, and end, which lets the thread go.
//
// With a queue the claim is also the thread's lease, taken in Postgres
// (Queue.Claim), so no process starts a run during the change; the
// returned context carries the lease's fence for the change's writes.
func (m *Manager) beginEdit(ctx context.Context, threadID, advice string) (t *thread, graph string, ectx context.Context, end func(), err error) {
	t, err = m.lockThread(ctx, threadID)
	if err != nil {
		return nil, "", nil, nil, err
	}
	if t.info.Status == StatusRunning || t.updating {
		m.mu.Unlock()
		return nil, "", nil, nil, fmt.Errorf("%w: thread %q has an active run or another change under way; %s", ErrThreadBusy, threadID, advice)
	}
	t.updating = true
	graph = t.info.Graph
	m.mu.Unlock()
	let := func() {
		m.mu.Lock()
		t.updating = false
		m.mu.Unlock()
	}
	if m.queue == nil {
		return t, graph, ctx, let, nil
	}
	l, err := m.queue.Claim(ctx, QueuedRun{Graph: graph, Thread: threadID, RunID: "edit-" + uuid.NewString(), Edit: true, Started: Stamp(m.now())})
	if err != nil {
		let()
		if errors.Is(err, ErrThreadBusy) {
			return nil, "", nil, nil, fmt.Errorf("%w: thread %q has an active run or another change under way; %s", ErrThreadBusy, threadID, advice)
		}
		return nil, "", nil, nil, fmt.Errorf("runs: claim thread %q for a change: %w", threadID, err)
	}
	// The change's registry write (a state edit's) carries the fence too.
	m.mu.Lock()
	t.fence = l.Fence
	m.mu.Unlock()
	// Renewed while the change lasts, as a run's lease is: a long one
	// (a delete of a thread with many checkpoints) is not taken for a
	// dead process's. Lost all the same, the change's context ends.
	ectx, stop := context.WithCancelCause(ctx)
	m.wg.Add(1)
	go m.renew(ectx, t, l, stop)
	return t, graph, fenced(ectx, threadID, l.Fence), func() {
		stop(nil)
		m.mu.Lock()
		t.fence = 0
		m.mu.Unlock()
		m.release(l)
		let()
	}, nil
}

// UpdateState applies values to the thread's checkpoint checkpointID
// ("" for the latest) as if node asNode had returned them ("" lets the
// engine infer the node), writing a new checkpoint; on an older
// checkpoint that starts a branch. It returns the new checkpoint's id.
//
// It is refused with ErrThreadBusy while a run is active: the run would
// write its next checkpoint on top of the edit, or the edit on top of a
// half-finished step. Values the state rejects (an unknown key, a wrong
// type, an unknown node) are ErrInvalidInput carrying the engine's message,
// and nothing is written. Afterwards the thread is idle: its head is the
// new checkpoint, so interrupts pending at the old head are no longer
// what a resume would answer; RunFrom(ctx, thread, "") continues from the
// edit.
func (m *Manager) UpdateState(ctx context.Context, threadID, checkpointID string, values map[string]any, asNode string) (string, error) {
	t, graph, ctx, end, err := m.beginEdit(ctx, threadID, "wait for it or cancel it before editing its state")
	if err != nil {
		return "", err
	}
	defer end()

	g, err := m.Graph(graph)
	if err != nil {
		return "", err
	}
	switch {
	case asNode == "", asNode == engine.AsCopy, asNode == engine.AsInput:
		// A copy forks the checkpoint (source "fork"); input applies the
		// values as a new run's input (source "input").
	case asNode == engine.End:
		// With no values, finishes the pending tasks' step.
	case asNode == engine.Start || !slices.Contains(g.Pregel().NodeNames(), asNode):
		return "", fmt.Errorf("%w: as-node %q is not a node of graph %q (nor %s, %s or %s)", ErrInvalidInput, asNode, graph, engine.AsCopy, engine.AsInput, engine.End)
	}
	if _, err := m.Checkpoint(ctx, threadID, checkpointID); err != nil {
		return "", err
	}
	var vals any
	if values != nil {
		vals = map[string]any(values)
	}
	var evs []Event
	cfg, err := g.Pregel().UpdateStateWith(ctx, checkpoints.Config{ThreadID: threadID, CheckpointID: checkpointID},
		[][]engine.StateUpdate{{{Values: vals, AsNode: asNode}}},
		engine.UpdateOptions{Listener: func(ev engine.Event) { evs = append(evs, fromEngine(threadID, "", ev, m.now())...) }})
	if err != nil {
		if errors.Is(err, engine.ErrInvalidUpdate) || errors.Is(err, engine.ErrInvalidGraph) {
			return "", fmt.Errorf("%w: %v", ErrInvalidInput, err)
		}
		return "", fmt.Errorf("runs: update thread %q: %w", threadID, err)
	}
	m.mu.Lock()
	t.info.Status, t.info.Error, t.info.Updated = StatusIdle, "", Stamp(m.now())
	t.info.StateUpdated = t.info.Updated
	t.info.Pending, t.info.Before, t.info.After = nil, nil, nil
	t.changes++
	m.mu.Unlock()
	// Written while the thread is still marked updating, so no run can
	// start (and write its record) before this write is done.
	m.persist(t)
	t.hub.publish(evs...)
	t.hub.settle()
	return cfg.CheckpointID, nil
}

// RunFrom re-runs the thread from checkpoint checkpointID, or continues
// from its latest checkpoint when checkpointID is "": the engine forks the
// checkpoint and runs its next tasks again (no new input). It goes through
// the same single-run rule and event fan-out as Start (ErrThreadBusy while
// a run is active) and reuses the last run's options.
func (m *Manager) RunFrom(ctx context.Context, threadID, checkpointID string) (Thread, error) {
	info, err := m.Thread(ctx, threadID)
	if err != nil {
		return Thread{}, err
	}
	if info.Status == StatusRunning {
		return Thread{}, fmt.Errorf("%w: thread %q already has an active run; wait for it or cancel it", ErrThreadBusy, threadID)
	}
	if _, err := m.Checkpoint(ctx, threadID, checkpointID); err != nil {
		return Thread{}, err
	}
	g, err := m.Graph(info.Graph)
	if err != nil {
		return Thread{}, err
	}
	return m.launch(ctx, launchRequest{g: g, graph: info.Graph, thread: threadID, opts: info.Options, checkpointID: checkpointID, kind: RunFromCheckpoint})
}
