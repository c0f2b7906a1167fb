package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/superstep-dev/superstep/runs"
)

// Runs waiting for their thread (the enqueue strategy, after_seconds).
// With a durable run manager (runs.Manager.Durable: a queue in Postgres)
// they are pending runs of the queue: they survive this process, any
// replica starts them when their turn comes, and any replica lists,
// gets, joins or cancels them. Otherwise this process keeps them
// (queues, in runs.go) and starts them itself (drain).

// durable reports whether waiting runs are kept by the run manager.
func (a *API) durable() bool { return a.cfg.Runs.Durable() }

// queueLimits are the bounds of the pending runs.
var queueLimits = runs.QueueLimits{PerThread: MaxQueuedPerThread, Total: MaxQueued}

// addPending puts run in its thread's queue, to start after delay once
// the runs ahead of it have ended.
func (a *API) addPending(ctx context.Context, run *apiRun, delay time.Duration) error {
	if !a.durable() {
		return a.enqueue(run, delay)
	}
	// The thread exists now: deleted meanwhile, it stays deleted.
	run.req.MustExist = true
	run.delay = delay
	err := a.cfg.Runs.Enqueue(ctx, run.req, delay, queueLimits)
	if errors.Is(err, runs.ErrQueueFull) {
		return conflict("%s", err.Error())
	}
	if err != nil {
		return err
	}
	a.watch(run) // its creator waits on it: stream, wait, webhook
	return nil
}

// pendingOf lists the runs waiting for the thread, oldest first.
func (a *API) pendingOf(ctx context.Context, thread string) ([]*apiRun, error) {
	if !a.durable() {
		return a.queuedOf(thread), nil
	}
	qrs, err := a.cfg.Runs.PendingRuns(ctx, thread)
	if err != nil {
		return nil, err
	}
	out := make([]*apiRun, len(qrs))
	for i, qr := range qrs {
		out[i] = pendingRun(qr)
	}
	return out, nil
}

// waitedFor reports which of the threads have runs waiting for them:
// one query for a page of threads.
func (a *API) waitedFor(ctx context.Context, ts []runs.Thread) (map[string]bool, error) {
	if !a.durable() {
		out := map[string]bool{}
		for _, t := range ts {
			out[t.ID] = len(a.queuedOf(t.ID)) > 0
		}
		return out, nil
	}
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	return a.cfg.Runs.PendingThreads(ctx, ids)
}

// findPending returns a run waiting for thread, if runID is one. With
// wait (a caller that waits for it to start: a join, a stream), a run of
// the durable queue is watched, its started closed when it leaves the
// queue; every waiter on one run shares one watch.
func (a *API) findPending(ctx context.Context, thread, runID string, wait bool) (*apiRun, bool, error) {
	if !a.durable() {
		r, ok := a.queued(runID)
		return r, ok && r.req.Thread == thread, nil
	}
	// The queue says whether it is pending still; a watched run's
	// waiters hear of it only at the next poll.
	qr, ok, err := a.cfg.Runs.PendingRun(ctx, runID)
	if err != nil || !ok || qr.Thread != thread {
		return nil, false, err
	}
	r := pendingRun(qr)
	if wait {
		r = a.watch(r)
	} else if w := a.watched(runID); w != nil {
		r = w // a cancel through it is seen by its waiters
	}
	return r, true, nil
}

// cancelPending cancels a run waiting for its thread: it never starts,
// and reads back as "interrupted" (unless forget: rolled back, as if it
// never was). It reports false when the run started meanwhile: it is
// the thread's active run then.
func (a *API) cancelPending(ctx context.Context, r *apiRun, forget bool) (bool, error) {
	if !a.durable() {
		a.cancelQueued(r)
		cancelled := errors.Is(r.err, errCancelledQueued)
		if cancelled && forget {
			a.forgetEnded(r.id)
		}
		return cancelled, nil
	}
	taken, err := a.cfg.Runs.CancelPending(ctx, r.req.Thread, r.id, forget)
	return len(taken) > 0, err
}

// cancelAllPending cancels every run waiting for the thread.
func (a *API) cancelAllPending(ctx context.Context, thread string) error {
	if !a.durable() {
		for _, q := range a.queuedOf(thread) {
			a.cancelQueued(q)
		}
		return nil
	}
	_, err := a.cfg.Runs.CancelPending(ctx, thread, "", false)
	return err
}

// holdPending keeps the thread's waiting runs from starting until
// release is called.
func (a *API) holdPending(ctx context.Context, thread string) (release func(), err error) {
	if !a.durable() {
		return a.holdQueue(thread), nil
	}
	return a.cfg.Runs.HoldQueue(ctx, thread)
}

// allPending lists every run waiting for a thread, for a cancel by
// status.
func (a *API) allPending(ctx context.Context) ([]*apiRun, error) {
	if !a.durable() {
		a.queue.mu.Lock()
		defer a.queue.mu.Unlock()
		out := make([]*apiRun, 0, len(a.queue.byID))
		for _, q := range a.queue.byID {
			out = append(out, q)
		}
		return out, nil
	}
	return a.pendingOf(ctx, "")
}

// pendingRun is a run of the durable queue as the API holds it.
func pendingRun(qr runs.QueuedRun) *apiRun {
	r := &apiRun{id: qr.RunID, created: qr.Started, started: make(chan struct{}), cancelled: make(chan struct{}),
		req: runs.RunRequest{Graph: qr.Graph, Thread: qr.Thread, RunID: qr.RunID, Meta: qr.Meta, Metadata: qr.Metadata}}
	if !qr.NotBefore.IsZero() {
		r.delay = qr.NotBefore.Sub(qr.Started)
	}
	return r
}

// watchEvery is how often the durable queue is asked which watched runs
// are pending still; startedWithin bounds how long a run that left it
// without a trace is waited on before its waiters are let go.
const (
	watchEvery    = 100 * time.Millisecond
	startedWithin = 3 * time.Second
)

// watchers are the runs of the durable queue that callers of this
// process wait on to start (their stream, wait or webhook), polled
// together, in one query per round.
type watchers struct {
	mu   sync.Mutex
	runs map[string]*watched // by run id
	on   bool
}

// watched is a run of the durable queue callers wait on, and when it
// left the queue (zero: not yet).
type watched struct {
	run  *apiRun
	left time.Time
}

// watch closes run.started (with run.err set when it never started) once
// it has left the durable queue, and returns the run its waiters share:
// run, or the one already watched under its id.
func (a *API) watch(run *apiRun) *apiRun {
	w := &a.watching
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.runs == nil {
		w.runs = map[string]*watched{}
	}
	if x, ok := w.runs[run.id]; ok {
		return x.run
	}
	w.runs[run.id] = &watched{run: run}
	if !w.on {
		w.on = true
		go a.poll()
	}
	return run
}

// watched returns the run watched under runID, if any.
func (a *API) watched(runID string) *apiRun {
	a.watching.mu.Lock()
	defer a.watching.mu.Unlock()
	if x, ok := a.watching.runs[runID]; ok {
		return x.run
	}
	return nil
}

// poll resolves the watched runs until none is left.
func (a *API) poll() {
	w := &a.watching
	tick := time.NewTicker(watchEvery)
	defer tick.Stop()
	for {
		select {
		case <-a.done:
			w.mu.Lock()
			for _, x := range w.runs {
				x.run.err = errors.New("the server stopped; the run stays queued (another replica, or this one restarted, starts it)")
				close(x.run.started)
			}
			w.runs, w.on = nil, false
			w.mu.Unlock()
			return
		case <-tick.C:
		}
		w.mu.Lock()
		ids := make([]string, 0, len(w.runs))
		for id := range w.runs {
			ids = append(ids, id)
		}
		w.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		pending, err := a.cfg.Runs.StillPending(ctx, ids)
		if err != nil {
			cancel()
			a.log.Error("api: poll the queued runs", "error", err)
			continue
		}
		w.mu.Lock()
		var left []*watched
		for id, x := range w.runs {
			if pending[id] {
				continue
			}
			if x.left.IsZero() {
				x.left = time.Now()
			}
			left = append(left, x)
		}
		w.mu.Unlock()
		for _, x := range left {
			if a.resolve(ctx, x) {
				w.mu.Lock()
				delete(w.runs, x.run.id)
				w.mu.Unlock()
				close(x.run.started)
			}
		}
		cancel()
		w.mu.Lock()
		if len(w.runs) == 0 {
			w.on = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
	}
}

// resolve says whether a run that left the durable queue can be let go
// to its waiters: it started (its record, running or ended, is there;
// its stream's parts are stored wherever it runs, see
// runs.Manager.RunParts), or it never will (cancelled before it
// started, its thread deleted), which run.err says. A run gone without
// a trace (rolled back while it waited) is let go after startedWithin.
func (a *API) resolve(ctx context.Context, x *watched) bool {
	r := x.run
	rec, err := a.cfg.Runs.RunRecord(ctx, r.req.Thread, r.id)
	switch {
	case err == nil && rec.Meta != nil && rec.Meta.NotStarted != "":
		r.err = errCancelledQueued
		return true
	case err == nil:
		return true
	case errors.Is(err, runs.ErrUnknownThread):
		r.err = errThreadDeleted
		return true
	case errors.Is(err, runs.ErrUnknownRun):
		if _, terr := a.cfg.Runs.Thread(ctx, r.req.Thread); errors.Is(terr, runs.ErrUnknownThread) {
			r.err = errThreadDeleted
			return true
		}
	}
	a.watching.mu.Lock()
	since := x.left
	a.watching.mu.Unlock()
	return time.Since(since) > startedWithin
}
