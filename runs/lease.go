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

// Drain refuses new runs (ErrThreadBusy, saying the Studio is stopping)
// and waits until the runs this process executes have ended, or ctx ends
// (then Close hands the rest back to the queue, or ends them).
func (m *Manager) Drain(ctx context.Context) error {
	m.mu.Lock()
	m.draining = true
	m.mu.Unlock()
	done := make(chan struct{})
	go func() {
		m.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errCancelled is the cause of a run cancelled by someone (Cancel, a
// cancel from another process), as against one cut by its Manager
// closing.
var errCancelled = errors.New("runs: cancelled")

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
	qr, err := queuedRun(req, runID, from, started)
	if err != nil {
		return Lease{}, err
	}
	l, err := m.queue.Claim(ctx, qr)
	switch {
	case errors.Is(err, ErrThreadBusy):
		return Lease{}, fmt.Errorf("%w: thread %q already has an active run; wait for it or cancel it", ErrThreadBusy, req.thread)
	case err != nil:
		return Lease{}, fmt.Errorf("runs: claim thread %q for a run: %w", req.thread, err)
	}
	return l, nil
}

// queuedRun is a launch as the queue keeps it.
func queuedRun(req launchRequest, runID, from string, started time.Time) (QueuedRun, error) {
	in, err := encodeInput(req.input)
	if err != nil {
		return QueuedRun{}, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	return QueuedRun{Graph: req.graph, Thread: req.thread, RunID: runID, Kind: req.kind, Input: in, Options: req.opts,
		CheckpointID: req.checkpointID, Origin: req.origin, Answers: req.answers, Metadata: req.metadata, Meta: req.meta,
		Started: started, From: from, ResumeOf: req.resumeOf, Stream: queuedStreamOf(req.stream), MustExist: req.mustExist}, nil
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
	// Stopping: the run was cut by this process closing, not ended on
	// its own (interrupted, failed, finished) nor cancelled by someone,
	// which are recorded as such (finish).
	stopping := !lost && m.base.Err() != nil && errors.Is(err, context.Canceled) && !errors.Is(context.Cause(runCtx), errCancelled)
	if !lost && !stopping {
		return false
	}
	// The events written so far go first, while the lease still holds.
	m.closeWriter(t, nil)
	if stopping {
		ctx, cancel := storeContext()
		if err := m.queue.HandBack(ctx, l); err != nil && !errors.Is(err, ErrLeaseLost) {
			// Its lease expires and another process takes it over.
			m.report(fmt.Errorf("runs: hand back run %q of thread %q: %w", l.RunID, l.Thread, err))
		}
		cancel()
	}
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
	err := m.takeover(ctx, qr, l)
	if err != nil && l.Attempt >= MaxTakeovers && m.base.Err() == nil && ctx.Err() == nil {
		// The same failure every time (a state type changed by a deploy,
		// a graph no process serves): the run ends rather than keep its
		// thread busy for ever.
		return errors.Join(err, m.endQueued(ctx, qr, l, StatusError,
			fmt.Sprintf("the run could not be taken over in %d attempts: %s", l.Attempt, cleanText(err.Error()))))
	}
	return err
}

// takeover is Takeover's work.
func (m *Manager) takeover(ctx context.Context, qr QueuedRun, l Lease) error {
	if qr.Edit {
		// The change's process died: its write landed whole or not at
		// all, and nothing is left to do but let the thread go.
		return m.queue.Finish(ctx, l)
	}
	g, err := m.Graph(qr.Graph)
	switch {
	case err != nil && qr.Cancel:
		return m.endQueued(ctx, qr, l, StatusIdle, "cancelled")
	case err != nil:
		return err // handed back: another process may serve the graph
	}
	if err := m.stopStale(ctx, qr.Thread, l.Fence); err != nil {
		return err
	}
	req := launchRequest{g: g, graph: qr.Graph, thread: qr.Thread, opts: qr.Options, checkpointID: qr.CheckpointID,
		origin: qr.Origin, kind: qr.Kind, answers: qr.Answers, runID: qr.RunID, metadata: qr.Metadata, meta: qr.Meta,
		resumeOf: qr.ResumeOf, lease: &l, takeover: true, started: &qr.Started, stream: qr.Stream.spec(), mustExist: qr.MustExist}
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
		// A nil input acknowledges breakpoints (it is how a person
		// continues past one): a run that had stopped, or was about to
		// stop, is ended here as it would have ended, never continued.
		end, ended, err := endOf(ctx, g, st, qr.Options)
		if err != nil {
			return err
		}
		if ended {
			req.ended = &end
		}
	}
	if qr.Cancel && req.ended == nil {
		// Cancelled while it waited for a process: it ends as cancelled,
		// as it would have where it ran.
		var cancelled error = context.Canceled
		req.ended, req.continuing = &cancelled, true
	}
	// The run log's record of the run so far is continued.
	prior := m.priorRecord(ctx, qr)
	req.prior = prior
	if _, err := m.launch(ctx, req); err != nil {
		return err
	}
	return m.waitHere(ctx, qr.Thread)
}

// waitHere waits until the run this process launched on thread (a
// takeover's, a queued run's) has ended here, or ctx ends.
func (m *Manager) waitHere(ctx context.Context, thread string) error {
	t, err := m.holdThread(ctx, thread)
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

// staleWait bounds how long a takeover waits for a stale run of its
// thread in this process to end (stopStale).
const staleWait = 2 * time.Second

// stopStale stops a run of the thread that this process still runs under
// an older fence than the lease a takeover has just taken (its renewals
// failed for longer than the lease: it lost it and will be fenced out),
// and waits for it to let the thread go. A run that does not end within
// staleWait (a node that ignores its context) leaves the takeover to be
// handed back, for another process or a later try.
func (m *Manager) stopStale(ctx context.Context, thread string, fence int64) error {
	m.mu.Lock()
	t, ok := m.threads[thread]
	if !ok || t.cancel == nil || t.fence == 0 || t.fence >= fence {
		m.mu.Unlock()
		return nil
	}
	stop, done := t.stop, t.done
	m.mu.Unlock()
	stop(ErrLeaseLost)
	select {
	case <-done:
		return nil
	case <-time.After(staleWait):
		return fmt.Errorf("runs: thread %q still runs here under a lost lease", thread)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// MaxTakeovers is how many times a run is taken over by processes that
// cannot run it (they do not serve its graph, a rolling deploy renamed
// it; its input no longer fits the state type) before it is ended as
// failed, rather than keep its thread busy for ever.
const MaxTakeovers = 10

// endQueued ends a queued run this process holds but cannot run (its
// graph is not served here) with status and errText, in the registry and
// the run log, under the lease, then releases it.
func (m *Manager) endQueued(ctx context.Context, qr QueuedRun, l Lease, status Status, errText string) error {
	fctx := fenced(ctx, qr.Thread, l.Fence)
	at := Stamp(m.now())
	if rec, err := m.store.GetThread(ctx, qr.Thread); err == nil {
		rec.Status, rec.Error, rec.Owner, rec.Updated, rec.RunID = status, errText, "", at, qr.RunID
		rec.Before, rec.After = nil, nil
		if err := m.store.SaveThread(fctx, rec); err != nil {
			return fmt.Errorf("runs: end run %q of thread %q: %w", qr.RunID, qr.Thread, err)
		}
	} else if !errors.Is(err, ErrUnknownThread) {
		return fmt.Errorf("runs: end run %q of thread %q: %w", qr.RunID, qr.Thread, err)
	}
	run := qr.record()
	if prior := m.priorRecord(ctx, qr); prior != nil {
		run = *prior
	}
	run.Status, run.Error, run.Ended = status, errText, at
	if err := m.runLog.SaveRun(fctx, run); err != nil {
		return fmt.Errorf("runs: end run %q of thread %q: %w", qr.RunID, qr.Thread, err)
	}
	if err := m.queue.Finish(ctx, l); err != nil {
		return err
	}
	m.endStoredParts(ctx, qr)
	m.mu.Lock()
	if t, ok := m.threads[qr.Thread]; ok && t.cancel == nil {
		t.info.Status, t.info.Error, t.info.Updated = status, errText, at
		t.hub.publish(Event{Kind: KindRunFinished, Thread: qr.Thread, RunID: qr.RunID, Status: status, Error: errText, Time: at})
	}
	m.mu.Unlock()
	return nil
}

// endStoredParts ends the stored stream of a queued run ended without
// running (or a run whose start failed): clients following it on other
// processes see it end.
func (m *Manager) endStoredParts(ctx context.Context, qr QueuedRun) {
	if s := m.partStore(); s != nil && qr.Stream != nil {
		if err := s.EndParts(ctx, qr.Thread, qr.RunID, qr.Stream.Keep); err != nil {
			m.report(fmt.Errorf("runs: end the stored parts of run %q: %w", qr.RunID, err))
		}
	}
}

// endOf reports whether a run whose head checkpoint is st had ended, or
// was bound to end at st before running anything more, and how: at an
// interrupt, at a breakpoint before st's next tasks, at a breakpoint after
// the tasks of the step that wrote st, or finished. end is the error its
// Invoke would have returned (nil when it finished).
func endOf(ctx context.Context, g engine.Compiled, st *engine.StateSnapshot, opts StartOptions) (end error, ended bool, err error) {
	// The run's breakpoints, else the graph's own, as the engine takes
	// them; "*" is every node but the hidden start.
	before, after := opts.InterruptBefore, opts.InterruptAfter
	gBefore, gAfter := g.Pregel().Breakpoints()
	if before == nil {
		before = gBefore
	}
	if after == nil {
		after = gAfter
	}
	hits := func(names, bp []string) []string {
		var out []string
		for _, n := range names {
			if (slices.Contains(bp, "*") && n != engine.Start) || slices.Contains(bp, n) {
				out = append(out, n)
			}
		}
		return out
	}
	switch {
	case len(st.Interrupts) > 0:
		return &engine.Interrupted{Interrupts: slices.Clone(st.Interrupts)}, true, nil
	case st.WritesPending:
		return nil, false, nil
	}
	// A fork's first checkpoint is where its run meant to go on from,
	// past any breakpoint there (a nil input acknowledges it): only a
	// step's or an input's checkpoint stops before its next tasks.
	stepped := st.Metadata.Source == checkpoints.SourceLoop || st.Metadata.Source == checkpoints.SourceInput
	if hit := hits(st.Next, before); stepped && len(hit) > 0 {
		return &engine.Interrupted{Before: hit}, true, nil
	}
	if len(after) > 0 && st.Metadata.Source == checkpoints.SourceLoop && st.ParentConfig != nil {
		// The tasks that wrote st are those its parent planned.
		parent, err := g.Pregel().GetState(ctx, *st.ParentConfig)
		if err != nil {
			return nil, false, fmt.Errorf("runs: read the step before a run's head: %w", err)
		}
		if hit := hits(parent.Next, after); len(hit) > 0 {
			return &engine.Interrupted{After: hit}, true, nil
		}
	}
	if len(st.Next) == 0 {
		return nil, true, nil
	}
	return nil, false, nil
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
		// This process's own run's events were published here as they
		// happened; another run's, arriving late while this process
		// runs one, are stale.
		local := runID == t.localRun || t.cancel != nil
		m.mu.Unlock()
		if local {
			return
		}
		ev.Thread, ev.Seq = id, 0
		t.hub.publishRemote(ev)
	})
	m.mu.Lock()
	if m.threads[id] != t {
		// Let go (evicted) while the log was read: nothing will stop it.
		stop()
		t.unfollow = nil
	} else {
		t.unfollow = stop
	}
	m.mu.Unlock()
}
