package runs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/superstep-dev/superstep/engine"
)

// Pending runs: with a queue (WithQueue), a run that waits for its
// thread (the Agent Server API's enqueued and delayed runs) is kept in
// the queue rather than in a process's memory, so it survives the
// process that received it and any process starts it when its turn
// comes (StartQueued). Without a queue the API keeps such runs itself.

// Durable reports whether runs are kept in a queue (WithQueue), pending
// ones included.
func (m *Manager) Durable() bool { return m.queue != nil }

// errNoQueue is the error of the pending-run methods without a queue.
var errNoQueue = errors.New("runs: pending runs need a Manager with a queue (WithQueue)")

// MaxHold bounds how long a hold (HoldQueue) keeps a thread's pending
// runs waiting after its process died or stalled.
const MaxHold = 30 * time.Second

// Enqueue keeps req pending in its thread's queue, to start after delay
// once every run ahead of it has ended. req is checked now, as Run checks
// it (a bad input is refused here, not when its turn comes); its RunID
// must be set. ErrQueueFull past limits.
func (m *Manager) Enqueue(ctx context.Context, req RunRequest, delay time.Duration, limits QueueLimits) error {
	if m.queue == nil {
		return errNoQueue
	}
	if req.RunID == "" {
		return fmt.Errorf("%w: a pending run needs its id", ErrInvalidInput)
	}
	lr, err := m.prepareRun(ctx, req)
	if err != nil {
		return err
	}
	qr, err := queuedRun(lr, lr.runID, "", Stamp(m.now()))
	if err != nil {
		return err
	}
	if delay > 0 {
		qr.NotBefore = qr.Started.Add(delay)
	}
	if err := m.queue.Enqueue(ctx, qr, limits); err != nil {
		if errors.Is(err, ErrQueueFull) || errors.Is(err, ErrInvalidInput) {
			return err
		}
		return fmt.Errorf("runs: enqueue a run on thread %q: %w", req.Thread, err)
	}
	return nil
}

// PendingRuns lists the thread's pending runs, oldest first (every
// thread's for ""; none without a queue).
func (m *Manager) PendingRuns(ctx context.Context, thread string) ([]QueuedRun, error) {
	if m.queue == nil {
		return nil, nil
	}
	return m.queue.Pending(ctx, thread)
}

// PendingThreads reports which of threads have pending runs (none
// without a queue).
func (m *Manager) PendingThreads(ctx context.Context, threads []string) (map[string]bool, error) {
	if m.queue == nil || len(threads) == 0 {
		return map[string]bool{}, nil
	}
	return m.queue.PendingThreads(ctx, threads)
}

// PendingRun finds a pending run by id.
func (m *Manager) PendingRun(ctx context.Context, runID string) (QueuedRun, bool, error) {
	if m.queue == nil {
		return QueuedRun{}, false, nil
	}
	return m.queue.PendingRun(ctx, runID)
}

// StillPending reports which of runIDs are pending still.
func (m *Manager) StillPending(ctx context.Context, runIDs []string) (map[string]bool, error) {
	if m.queue == nil {
		return nil, errNoQueue
	}
	return m.queue.StillPending(ctx, runIDs)
}

// CancelPending takes pending runs out of their thread's queue (run
// runID, or all of the thread's for ""): they never start. Unless
// forget, each is recorded in the run log as cancelled before it started
// (its RunMeta.NotStarted), so any process reports it. It returns the
// runs it took: one that started meanwhile is not among them, and is the
// thread's active run.
func (m *Manager) CancelPending(ctx context.Context, thread, runID string, forget bool) ([]QueuedRun, error) {
	if m.queue == nil {
		return nil, errNoQueue
	}
	taken, err := m.queue.Unqueue(ctx, thread, runID)
	if err != nil {
		return nil, fmt.Errorf("runs: cancel the pending runs of thread %q: %w", thread, err)
	}
	if forget {
		return taken, nil
	}
	at := Stamp(m.now())
	for _, qr := range taken {
		rec := qr.record()
		meta := RunMeta{}
		if qr.Meta != nil {
			meta = *qr.Meta
		}
		meta.NotStarted = NotStartedCancelled
		rec.Meta, rec.Status, rec.Error, rec.Ended = &meta, StatusIdle, "cancelled", at
		if err := m.runLog.SaveRun(ctx, rec); err != nil {
			return taken, fmt.Errorf("runs: record the cancel of pending run %q: %w", qr.RunID, err)
		}
	}
	return taken, nil
}

// HoldQueue keeps the thread's pending runs from starting until release
// is called (a rollback deletes the cancelled run's checkpoints before
// the next run may start on them). The hold is renewed while held; it
// lapses MaxHold after this process dies or stalls, and a release after
// such a lapse is reported (ErrHoldLost): a queued run may have started.
func (m *Manager) HoldQueue(ctx context.Context, thread string) (release func(), err error) {
	if m.queue == nil {
		return nil, errNoQueue
	}
	rel, err := m.queue.Hold(ctx, thread, MaxHold)
	if err != nil {
		return nil, fmt.Errorf("runs: hold the pending runs of thread %q: %w", thread, err)
	}
	return func() {
		ctx, cancel := storeContext()
		defer cancel()
		if err := rel(ctx); err != nil {
			// The hold lapses on its own after MaxHold.
			m.report(fmt.Errorf("runs: release the pending runs of thread %q: %w", thread, err))
		}
	}, nil
}

// StartQueued starts a pending run whose turn came, under lease l (the queue's
// worker took it), and returns once it has ended here. A run whose
// thread was deleted while it waited is dropped; one that cannot start
// (its input no longer fits the thread) is recorded as failed. An error
// hands it back to the queue (a graph this process does not serve).
func (m *Manager) StartQueued(ctx context.Context, qr QueuedRun, l Lease) error {
	if m.queue == nil {
		return errNoQueue
	}
	if m.base.Err() != nil {
		return errors.New("runs: the Manager is closing: the run is left to another process")
	}
	in := qr.Input.decode()
	if u, ok := in.(engine.Update); ok {
		in = map[string]any(u) // as a caller gives it: prepareRun coerces it
	}
	req := RunRequest{Graph: qr.Graph, Thread: qr.Thread, RunID: qr.RunID, Input: in, CheckpointID: qr.CheckpointID,
		Options: qr.Options, Metadata: qr.Metadata, Stream: qr.Stream.spec(), Origin: qr.Origin, Meta: qr.Meta, MustExist: qr.MustExist}
	if _, err := m.Graph(qr.Graph); err != nil {
		return err
	}
	lr, err := m.prepareRun(ctx, req)
	if err == nil {
		lr.lease = &l
		_, err = m.launch(ctx, lr)
	}
	switch {
	case errors.Is(err, ErrUnknownThread):
		// Deleted while the run waited: it goes with its thread.
		if err := m.queue.Finish(ctx, l); err != nil {
			return err
		}
		m.endStoredParts(ctx, qr)
		return nil
	case err != nil:
		rec := qr.record()
		rec.Status, rec.Error, rec.Ended = StatusError, cleanText("the run did not start: "+err.Error()), Stamp(m.now())
		if serr := m.runLog.SaveRun(fenced(ctx, qr.Thread, l.Fence), rec); serr != nil {
			return errors.Join(err, serr)
		}
		if err := m.queue.Finish(ctx, l); err != nil {
			return err
		}
		m.endStoredParts(ctx, qr)
		return nil
	}
	return m.waitHere(ctx, qr.Thread)
}
