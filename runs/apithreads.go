package runs

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/checkpoints"
)

// ErrThreadExists: CreateThread of an id that is taken.
var ErrThreadExists = errors.New("thread exists")

// CreateThread registers a thread that has no run yet (the Agent Server
// API's POST /threads): idle, with the given metadata, and bound to graph
// when one is given (else its first run binds one). An empty id makes a
// fresh one. A taken id is ErrThreadExists.
func (m *Manager) CreateThread(ctx context.Context, id, graph string, metadata map[string]any) (Thread, error) {
	if id == "" {
		id = uuid.NewString()
	}
	if err := CheckThreadID(id); err != nil {
		return Thread{}, err
	}
	if graph != "" {
		if _, err := m.Graph(graph); err != nil {
			return Thread{}, err
		}
	}
	if _, err := m.Thread(ctx, id); err == nil {
		return Thread{}, fmt.Errorf("%w: %q", ErrThreadExists, id)
	} else if !errors.Is(err, ErrUnknownThread) {
		return Thread{}, err
	}
	now := Stamp(m.now())
	rec := ThreadRecord{ID: id, Graph: graph, Status: StatusIdle, Updated: now, Created: now, Metadata: metadata}
	if err := CheckThreadRecord(rec); err != nil {
		return Thread{}, err
	}
	if err := m.store.SaveThread(ctx, rec); err != nil {
		return Thread{}, err
	}
	return m.Thread(ctx, id)
}

// PatchThread merges metadata into the thread's (a key set to null stays,
// with null, as upstream merges) and returns the thread.
func (m *Manager) PatchThread(ctx context.Context, id string, metadata map[string]any) (Thread, error) {
	t, err := m.lockThread(ctx, id)
	if err != nil {
		return Thread{}, err
	}
	merged := maps.Clone(t.info.Metadata)
	if merged == nil {
		merged = map[string]any{}
	}
	maps.Copy(merged, metadata)
	probe := m.record(t.info)
	probe.Metadata = merged
	if err := CheckThreadRecord(probe); err != nil {
		m.mu.Unlock()
		return Thread{}, err
	}
	t.info.Metadata = merged
	t.info.Updated = Stamp(m.now())
	t.changes++
	rec, changes := m.record(t.info), t.changes
	m.touch(t)
	m.mu.Unlock()
	m.write(t, rec, changes)
	return m.Thread(ctx, id)
}

// CountThreads counts the threads f selects (its limit and offset aside).
func (m *Manager) CountThreads(ctx context.Context, f ThreadFilter) (int, error) {
	return m.store.CountThreads(ctx, f)
}

// DeleteThread removes a thread: its active run is cancelled and waited
// for, then its checkpoints, its runs' records and its registry record go.
// Open Studio tabs of the thread are let go.
func (m *Manager) DeleteThread(ctx context.Context, id string) error {
	info, err := m.Thread(ctx, id)
	if err != nil {
		return err
	}
	if m.queue != nil {
		// Its pending runs go with it, first: the end of its active run
		// would start the next one.
		if _, err := m.queue.Unqueue(ctx, id, ""); err != nil {
			return fmt.Errorf("runs: delete the pending runs of thread %q: %w", id, err)
		}
	}
	if info.Status == StatusRunning {
		if err := m.Cancel(ctx, id); err != nil && !errors.Is(err, ErrNotRunning) {
			return err
		}
		if _, err := m.Wait(ctx, id); err != nil {
			return err
		}
	}
	// From here no run starts on the thread and no edit is made (a page's
	// start in the same instant is refused as busy), until it is gone.
	t, _, ctx, end, err := m.beginEdit(ctx, id, "it got a new run while it was being deleted; delete it again")
	if err != nil {
		return err
	}
	defer end()
	if g, ok := m.graphs[info.Graph]; ok {
		if err := g.Pregel().Checkpointer().DeleteThread(ctx, id); err != nil {
			return fmt.Errorf("runs: delete the checkpoints of thread %q: %w", id, err)
		}
	}
	// Records of its runs waiting to be written again would bring them
	// back (under the same id, onto a new thread), and so would those
	// being written: a client hears a run's end before its record is
	// written.
	m.mu.Lock()
	for key := range m.unsavedRuns {
		if key[0] == id {
			delete(m.unsavedRuns, key)
		}
	}
	m.mu.Unlock()
	if err := m.awaitEndWrites(ctx, id, ""); err != nil {
		return err
	}
	recs, err := m.runLog.ListRuns(ctx, id, 0)
	if err != nil {
		return fmt.Errorf("runs: delete thread %q: %w", id, err)
	}
	for _, r := range recs {
		if err := m.runLog.DeleteRun(ctx, id, r.RunID); err != nil && !errors.Is(err, ErrUnknownRun) {
			return fmt.Errorf("runs: delete thread %q: %w", id, err)
		}
	}
	if err := m.store.DeleteThread(ctx, id); err != nil && !errors.Is(err, ErrUnknownThread) {
		return fmt.Errorf("runs: delete thread %q: %w", id, err)
	}
	m.mu.Lock()
	if cur, ok := m.threads[id]; ok && cur == t {
		delete(m.threads, id)
		delete(m.unsaved, t)
		t.hub.closeAll()
	}
	m.mu.Unlock()
	return nil
}

// CopyThread copies a thread with its checkpoints and metadata to a new
// thread (a fresh id), and returns the copy: its status is what its
// checkpoints say (interrupted when the source waits at interrupts).
func (m *Manager) CopyThread(ctx context.Context, id string) (Thread, error) {
	info, err := m.Thread(ctx, id)
	if err != nil {
		return Thread{}, err
	}
	if info.Status == StatusRunning {
		return Thread{}, fmt.Errorf("%w: thread %q has an active run; copy it once the run ends", ErrThreadBusy, id)
	}
	dst := uuid.NewString()
	if g, ok := m.graphs[info.Graph]; ok {
		if err := g.Pregel().Checkpointer().CopyThread(ctx, id, dst); err != nil {
			return Thread{}, fmt.Errorf("runs: copy thread %q: %w", id, err)
		}
	}
	now := Stamp(m.now())
	rec := m.record(info)
	rec.ID, rec.Created, rec.Updated, rec.Owner, rec.Metadata = dst, now, now, "", maps.Clone(info.Metadata)
	if rec.Status == StatusRunning {
		rec.Status = StatusIdle
	}
	if err := m.store.SaveThread(ctx, rec); err != nil {
		return Thread{}, err
	}
	return m.Thread(ctx, dst)
}

// PatchCheckpointMetadata merges metadata into the metadata of the
// thread's latest checkpoint (the API's PATCH /threads/{id}/state), the
// checkpoint's values and position unchanged. The engine's own keys
// (source, step, parents, run_id) cannot be patched (ErrInvalidInput).
// Refused with ErrThreadBusy while a run is active.
func (m *Manager) PatchCheckpointMetadata(ctx context.Context, threadID string, metadata map[string]any) error {
	for _, k := range []string{"source", "step", "parents", "run_id"} {
		if _, ok := metadata[k]; ok {
			return fmt.Errorf("%w: metadata key %q is the engine's; it cannot be patched", ErrInvalidInput, k)
		}
	}
	if err := storable("metadata", metadata); err != nil {
		return err
	}
	_, graph, ctx, end, err := m.beginEdit(ctx, threadID, "patch its checkpoint once it ends")
	if err != nil {
		return err
	}
	defer end()
	g, ok := m.graphs[graph]
	if !ok {
		return fmt.Errorf("%w: thread %q has no checkpoint yet", ErrUnknownCheckpoint, threadID)
	}
	saver := g.Pregel().Checkpointer()
	tup, err := saver.Get(ctx, checkpoints.Config{ThreadID: threadID})
	if err != nil {
		return fmt.Errorf("runs: read the head of thread %q: %w", threadID, err)
	}
	if tup == nil {
		return fmt.Errorf("%w: thread %q has no checkpoint yet", ErrUnknownCheckpoint, threadID)
	}
	md := tup.Metadata
	md.Extra = maps.Clone(md.Extra)
	if md.Extra == nil {
		md.Extra = map[string]any{}
	}
	maps.Copy(md.Extra, metadata)
	parent := checkpoints.Config{ThreadID: threadID, Namespace: tup.Config.Namespace}
	if tup.ParentConfig != nil {
		parent.CheckpointID = tup.ParentConfig.CheckpointID
	}
	// Saving the checkpoint's id again replaces its metadata and keeps its
	// writes and its place in the thread.
	if _, err := saver.Put(ctx, parent, tup.Checkpoint, md, maps.Clone(tup.Checkpoint.ChannelVersions)); err != nil {
		return fmt.Errorf("runs: patch the metadata of thread %q's head: %w", threadID, err)
	}
	return nil
}
