package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// DefaultRenewEvery is how often a running run renews its lease, and so
// how soon it notices a cancel asked in another process (WithRenewEvery).
const DefaultRenewEvery = 500 * time.Millisecond

// WithRenewEvery sets how often a run renews its lease (WithQueue); the
// queue's lease must last several times longer.
func WithRenewEvery(d time.Duration) ManagerOption {
	return func(m *Manager) { m.renewEvery = d }
}

// KindRunTakeover: a process took over a run whose process stopped (or
// lost its lease) and continues it from its last checkpoint. Attempt is
// the takeover's count (2 for the first).
const KindRunTakeover Kind = "run_takeover"

// fenced puts a lease's fencing token on ctx (none for 0).
func fenced(ctx context.Context, thread string, fence int64) context.Context {
	if fence == 0 {
		return ctx
	}
	return checkpoints.WithFence(ctx, checkpoints.Fence{Thread: thread, Token: fence})
}

// claim records the run in the queue and takes the thread's lease.
func (m *Manager) claim(ctx context.Context, req launchRequest, runID, from string, started time.Time) (Lease, error) {
	in, err := encodeInput(req.input)
	if err != nil {
		return Lease{}, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	qr := QueuedRun{Graph: req.graph, Thread: req.thread, RunID: runID, Kind: req.kind, Input: in, Options: req.opts,
		CheckpointID: req.checkpointID, Origin: req.origin, Answers: req.answers, Metadata: req.metadata, Meta: req.meta,
		Started: started, From: from, ResumeOf: req.resumeOf}
	l, err := m.queue.Claim(ctx, qr)
	switch {
	case errors.Is(err, ErrThreadBusy):
		return Lease{}, fmt.Errorf("%w: thread %q already has an active run; wait for it or cancel it", ErrThreadBusy, req.thread)
	case err != nil:
		return Lease{}, fmt.Errorf("runs: claim thread %q for a run: %w", req.thread, err)
	}
	return l, nil
}

// release ends the run in the queue. A failure other than a lost lease
// is reported: the lease then expires, and whoever takes the run over
// finds it ended (Takeover) and only records that.
func (m *Manager) release(l Lease) error {
	ctx, cancel := storeContext()
	defer cancel()
	err := m.queue.Finish(ctx, l)
	if err != nil && !errors.Is(err, ErrLeaseLost) {
		m.report(fmt.Errorf("runs: release thread %q after run %q: %w", l.Thread, l.RunID, err))
	}
	return err
}

// renew keeps the run's lease until ctx (the run's) ends; it cancels the
// run when someone asked (Queue.Cancel), and stops it with cause
// ErrLeaseLost when the lease went to another process.
func (m *Manager) renew(ctx context.Context, t *thread, l Lease, stop context.CancelCauseFunc) {
	defer m.wg.Done()
	every := m.renewEvery
	if every <= 0 {
		every = DefaultRenewEvery
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cancelAsked, err := m.queue.Renew(ctx, l)
		switch {
		case errors.Is(err, ErrLeaseLost):
			stop(ErrLeaseLost)
			return
		case err != nil:
			if ctx.Err() == nil {
				m.report(fmt.Errorf("runs: renew the lease of thread %q: %w", l.Thread, err))
			}
		case cancelAsked:
			m.mu.Lock()
			if t.starting {
				t.cancelAsked = true
			} else if t.cancel != nil {
				t.cancel()
			}
			m.mu.Unlock()
		}
	}
}

// leaseGone reports whether the run ended because this process may not
// finish it: another process took it over (its writes were fenced out,
// or its lease was lost), or this process is stopping, in which case it
// hands the run back for another process to continue. Either way nothing
// more is written for it here, and what this process holds of the thread
// is read again from the registry when next looked at.
func (m *Manager) leaseGone(runCtx context.Context, err error, t *thread, l Lease) bool {
	lost := errors.Is(err, checkpoints.ErrFenced) || errors.Is(context.Cause(runCtx), ErrLeaseLost)
	stopping := !lost && m.base.Err() != nil
	if !lost && !stopping {
		return false
	}
	if stopping {
		ctx, cancel := storeContext()
		if err := m.queue.HandBack(ctx, l); err != nil && !errors.Is(err, ErrLeaseLost) {
			// Its lease expires and another process takes it over.
			m.report(fmt.Errorf("runs: hand back run %q of thread %q: %w", l.RunID, l.Thread, err))
		}
		cancel()
	}
	m.closeWriter(t, nil)
	m.mu.Lock()
	// The new holder's events of this run are not this process's.
	t.localRun = ""
	t.cancel, t.run, t.starting, t.fence = nil, nil, false, 0
	t.saved = t.changes
	delete(m.unsaved, t)
	delete(m.unsavedRuns, [2]string{l.Thread, l.RunID})
	m.mu.Unlock()
	return true
}

// Takeover continues a queued run whose process stopped (or handed it
// back), under lease l which this process now holds, and returns once
// the run has ended here (or was lost again). A run whose head
// checkpoint it wrote goes on from there, keeping the writes of the
// tasks of the cut step that finished (so that step's other tasks run
// again: at-least-once); a run that never saved a checkpoint starts
// again from its input. A run that had ended, all but releasing its
// lease, is only recorded as ended.
func (m *Manager) Takeover(ctx context.Context, qr QueuedRun, l Lease) error {
	if m.queue == nil {
		return errors.New("runs: Takeover needs a Manager with a queue (WithQueue)")
	}
	if m.base.Err() != nil {
		return errors.New("runs: the Manager is closing: the run is left to another process")
	}
	g, err := m.Graph(qr.Graph)
	if err != nil {
		return err
	}
	req := launchRequest{g: g, graph: qr.Graph, thread: qr.Thread, opts: qr.Options, checkpointID: qr.CheckpointID,
		origin: qr.Origin, kind: qr.Kind, answers: qr.Answers, runID: qr.RunID, metadata: qr.Metadata, meta: qr.Meta,
		resumeOf: qr.ResumeOf, lease: &l, takeover: true, started: &qr.Started}
	req.input = qr.Input.decode()
	if u, ok := req.input.(engine.Update); ok {
		// JSON turned the state's numbers into float64s: coerced again.
		c, err := coerceInput(g.ZeroState(), u)
		if err != nil {
			return err
		}
		req.input = engine.Update(c)
	}
	st, err := g.Pregel().GetState(ctx, checkpoints.Config{ThreadID: qr.Thread})
	if err != nil {
		return fmt.Errorf("runs: read where run %q of thread %q got to: %w", qr.RunID, qr.Thread, err)
	}
	if st.Config.CheckpointID != "" && st.Metadata.RunID == qr.RunID {
		req.continuing, req.input, req.checkpointID = true, nil, ""
	}
	// The run log's record of the run so far is continued.
	prior := m.priorRecord(ctx, qr)
	req.prior = prior
	if _, err := m.launch(ctx, req); err != nil {
		return err
	}
	t, err := m.lockThread(ctx, qr.Thread)
	if err != nil {
		return err
	}
	done := t.done
	m.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// priorRecord is the run log's record of a run taken over, if it has
// one.
func (m *Manager) priorRecord(ctx context.Context, qr QueuedRun) *RunRecord {
	recs, err := m.runLog.ListRuns(ctx, qr.Thread, RunLogLimit)
	if err != nil {
		m.report(fmt.Errorf("runs: read the record of run %q taken over: %w", qr.RunID, err))
		return nil
	}
	i := slices.IndexFunc(recs, func(r RunRecord) bool { return r.RunID == qr.RunID })
	if i < 0 {
		return nil
	}
	r := recs[i]
	r.Ended, r.Status, r.Error = time.Time{}, StatusRunning, ""
	return &r
}

// closeWriter stops the active run's events going to the event log,
// writing last (when given) after them, and flushes what was added. A
// write refused by the fence is not reported: the run's new holder
// writes its events.
func (m *Manager) closeWriter(t *thread, last *Event) {
	m.mu.Lock()
	w := t.writer
	t.writer = nil
	m.mu.Unlock()
	if w == nil {
		return
	}
	t.hub.setSink(nil)
	if last != nil {
		ev := *last
		ev.Seq = 0
		if b, err := json.Marshal(ev); err == nil {
			w.Add(b)
		}
	}
	if err := w.Close(); err != nil && !errors.Is(err, checkpoints.ErrFenced) {
		m.report(fmt.Errorf("runs: write the events of thread %q to the event log: %w", t.info.ID, err))
	}
}

// follow makes t's hub receive the events other processes write to the
// event log from now on (WithEventLog), once: called when a tab
// subscribes, before its catch-up is read, so nothing between the two is
// missed (events in both are applied idempotently). It lasts until the
// thread is let go (evictLocked, Close).
func (m *Manager) follow(ctx context.Context, t *thread) {
	if m.events == nil {
		return
	}
	m.mu.Lock()
	if t.unfollow != nil {
		m.mu.Unlock()
		return
	}
	t.unfollow = func() {} // claimed; a subscribed thread is not evicted meanwhile
	id := t.info.ID
	m.mu.Unlock()
	runID, bodies, last, err := m.events.Recent(ctx, id, RetainEvents)
	if err != nil {
		m.report(fmt.Errorf("runs: follow the events of thread %q: %w", id, err))
		m.mu.Lock()
		t.unfollow = nil
		m.mu.Unlock()
		return
	}
	m.mu.Lock()
	local := runID == t.localRun
	m.mu.Unlock()
	if !local {
		// The run's events from before this process followed the log:
		// its catch-ups show their details as the executing process's do.
		evs := make([]Event, 0, len(bodies))
		for _, b := range bodies {
			var ev Event
			if json.Unmarshal(b, &ev) == nil {
				ev.Thread, ev.Seq = id, 0
				evs = append(evs, ev)
			}
		}
		t.hub.backfill(evs...)
	}
	stop := m.events.Follow(id, last, func(runID string, body []byte) {
		var ev Event
		if json.Unmarshal(body, &ev) != nil {
			return
		}
		m.mu.Lock()
		local := runID == t.localRun
		m.mu.Unlock()
		if local {
			return // published here as it happened
		}
		ev.Thread, ev.Seq = id, 0
		t.hub.publishRemote(ev)
	})
	m.mu.Lock()
	t.unfollow = stop
	m.mu.Unlock()
}
