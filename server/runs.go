package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
)

// HeartbeatInterval is how often a quiet stream gets a comment line and a
// waiting runs.wait or join a newline, so proxies keep the connection.
var HeartbeatInterval = 10 * time.Second

// waitKeepAlive is how often runs.wait writes a newline while it waits.
var waitKeepAlive = time.Second

func (a *API) mountRuns(r chi.Router) {
	r.Post("/threads/{thread_id}/runs/stream", a.createRun(modeStream))
	r.Post("/threads/{thread_id}/runs/wait", a.createRun(modeWait))
	r.Post("/threads/{thread_id}/runs", a.createRun(modeBackground))
	r.Get("/threads/{thread_id}/runs", a.listRuns)
	r.Get("/threads/{thread_id}/runs/{run_id}", a.getRun)
	r.Delete("/threads/{thread_id}/runs/{run_id}", a.deleteRun)
	r.Get("/threads/{thread_id}/runs/{run_id}/join", a.joinRun)
	r.Get("/threads/{thread_id}/runs/{run_id}/stream", a.joinStream)
	r.Post("/threads/{thread_id}/runs/{run_id}/cancel", a.cancelRun)
}

type createMode int

const (
	modeStream createMode = iota
	modeWait
	modeBackground
)

// createRun serves the three ways to create a run on a thread: streamed,
// waited for, or in the background.
func (a *API) createRun(mode createMode) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		thread := chi.URLParam(r, "thread_id")
		if err := checkThreadID("thread_id", thread); err != nil {
			fail(w, r, a.log, err)
			return
		}
		raw, body, err := decodeRunCreate(r)
		if err != nil {
			fail(w, r, a.log, err)
			return
		}
		p, err := plan(raw, body, mode == modeStream)
		if err != nil {
			fail(w, r, a.log, err)
			return
		}
		run, err := a.startRun(r.Context(), thread, p)
		if err != nil {
			fail(w, r, a.log, err)
			return
		}
		a.answerRun(w, r, mode, "/threads/"+thread+"/runs/"+run.id, thread, run, p)
	}
}

// decodeRunCreate reads a run-create body, and the same body as a map:
// the request's arguments, kept with the run as its kwargs.
func decodeRunCreate(r *http.Request) (map[string]any, runCreate, error) {
	var body runCreate
	b, err := decodeBodyRaw(r, &body, false)
	if err != nil {
		return nil, body, err
	}
	var raw map[string]any
	_ = json.Unmarshal(b, &raw)
	return raw, body, nil
}

// answerRun answers a created run as its route does: the Run object
// (background), its final values (wait) or its events (stream). From here
// the run exists, so nothing answers a status the SDK would retry.
// location is where the run is found (Content-Location).
func (a *API) answerRun(w http.ResponseWriter, r *http.Request, mode createMode, location, thread string, run *apiRun, p *runPlan) {
	w.Header().Set("Content-Location", location)
	switch mode {
	case modeBackground:
		rec, err := a.runObject(r.Context(), thread, run.id)
		if err != nil {
			rec = run.pendingJSON(thread)
		}
		writeJSON(w, http.StatusOK, rec)
	case modeWait:
		a.waitAndAnswer(w, r, thread, run)
	case modeStream:
		if p.body.StreamResumable {
			w.Header().Set("Location", location+"/stream")
		}
		a.stream(w, r, thread, run.id, run, -1, true, p.cancelOnDrop)
	}
}

// apiRun is a run the API created: started, or waiting in its thread's
// queue (started is closed once it has started or failed to).
type apiRun struct {
	id      string
	req     runs.RunRequest
	created time.Time
	started chan struct{}
	err     error
	// delay is how long after created a queued run may start
	// (after_seconds).
	delay time.Duration
	// cancelled is closed when a queued run is cancelled before it
	// started (cancelQueued).
	cancelled chan struct{}
	once      sync.Once
}

// errCancelledQueued is the error of a queued run cancelled before it
// started.
var errCancelledQueued = errors.New("cancelled before it started")

// errThreadDeleted ends the queued runs of a deleted thread.
var errThreadDeleted = errors.New("its thread was deleted before it started")

// cancelQueued cancels a run still in its thread's queue: it never
// starts, and reads back as "interrupted".
//
// A run behind the head of its queue is taken out at once; the head is
// told through cancelled, and its drain ends it. Either way started is
// closed when cancelQueued returns, unless the head had just been handed
// to the run manager, in which case it runs (and is the thread's active
// run to cancel).
func (a *API) cancelQueued(r *apiRun) {
	q := &a.queue
	q.mu.Lock()
	list := q.threads[r.req.Thread]
	i := slices.Index(list, r)
	if i > 0 {
		q.threads[r.req.Thread] = slices.Delete(list, i, i+1)
		delete(q.byID, r.id)
		r.err = errCancelledQueued
		q.rememberEnded(r)
		close(r.started)
	}
	q.mu.Unlock()
	r.once.Do(func() { close(r.cancelled) })
	<-r.started
}

// rememberEnded keeps a queued run that never started, for a later get
// or join; q.mu is held.
func (q *queues) rememberEnded(r *apiRun) {
	if q.ended == nil {
		q.ended = map[string]*apiRun{}
	}
	q.ended[r.id] = r
	q.endedOrder = append(q.endedOrder, r.id)
	if len(q.endedOrder) > runs.PartLogsKept {
		delete(q.ended, q.endedOrder[0])
		q.endedOrder = q.endedOrder[1:]
	}
}

// pendingJSON is the Run object of a run still in its thread's queue.
func (r *apiRun) pendingJSON(thread string) map[string]any {
	meta := r.req.Meta
	if meta == nil {
		meta = &runs.RunMeta{}
	}
	return map[string]any{
		"run_id": r.id, "thread_id": thread, "assistant_id": meta.Assistant,
		"created_at": r.created.UTC().Format(time.RFC3339Nano), "updated_at": r.created.UTC().Format(time.RFC3339Nano),
		"status": "pending", "metadata": orEmptyMap(meta.Metadata), "kwargs": orEmptyMap(meta.Kwargs),
		"multitask_strategy": meta.Strategy,
	}
}

// startRun resolves the assistant and the thread and starts the run under
// the plan's multitask strategy: at once when the thread is free, else
// rejected (409), after the active run was cancelled (interrupt) or
// cancelled and deleted with its checkpoints (rollback), or queued
// behind it (enqueue, the default).
func (a *API) startRun(ctx context.Context, thread string, p *runPlan) (*apiRun, error) {
	if p.body.AssistantID == "" {
		return nil, invalid("assistant_id", "required: an assistant id or a graph id")
	}
	as, err := a.resolveAssistant(ctx, p.body.AssistantID)
	if err != nil {
		return nil, err
	}
	assistantID, graph := as.ID, as.Graph
	// The run's config over the assistant's: its recursion limit applies
	// when the run gives none.
	if p.options.RecursionLimit == 0 {
		if rl, ok := plainJSON(as.Config["recursion_limit"]).(float64); ok && rl >= 1 && rl <= runs.MaxRecursionLimit && rl == float64(int(rl)) {
			p.options.RecursionLimit = int(rl)
		}
	}
	if p.body.Webhook != "" {
		if err := a.checkWebhook(p.body.Webhook); err != nil {
			return nil, err
		}
	}
	run, err := a.launchRun(ctx, thread, assistantID, graph, p)
	if err == nil && p.body.Webhook != "" && !p.stateless {
		go a.deliverWebhook(thread, run, p.body.Webhook)
	}
	return run, err
}

// launchRun is startRun once the assistant is known.
func (a *API) launchRun(ctx context.Context, thread, assistantID, graph string, p *runPlan) (*apiRun, error) {
	info, err := a.cfg.Runs.Thread(ctx, thread)
	switch {
	case errors.Is(err, runs.ErrUnknownThread):
		if !p.createThread {
			return nil, notFound("thread %q not found; create it first, or pass if_not_exists: \"create\"", thread)
		}
	case err != nil:
		return nil, err
	case info.Graph != "" && info.Graph != graph:
		return nil, conflict("thread %q runs graph %q; assistant %q runs %q", thread, info.Graph, p.body.AssistantID, graph)
	}
	if p.input == nil && p.checkpointID == "" && (err != nil || info.Graph == "") {
		return nil, invalid("input", "null continues a thread from a checkpoint, and thread %q has none yet; give input", thread)
	}
	metadata := map[string]any{}
	for k, v := range p.body.Metadata {
		metadata[k] = v
	}
	runID := newRunID()
	metadata["run_id"], metadata["graph_id"], metadata["assistant_id"] = runID, graph, assistantID
	run := &apiRun{id: runID, created: time.Now(), started: make(chan struct{}), cancelled: make(chan struct{}), req: runs.RunRequest{
		Graph: graph, Thread: thread, RunID: runID, Input: p.input, CheckpointID: p.checkpointID,
		Options: p.options, Metadata: metadata, Origin: runs.OriginAPI,
		Stream:    &runs.StreamSpec{Modes: engineModes(p.modes), Subgraphs: p.body.StreamSubgraphs, Keep: p.body.StreamResumable || p.streaming},
		Meta:      &runs.RunMeta{Assistant: assistantID, Metadata: p.body.Metadata, Kwargs: p.kwargs, Strategy: p.strategy},
		MustExist: !p.createThread,
	}}
	// A run that may wait in a queue is checked now: its client hears of
	// a bad input at once, not as a failure when its turn comes.
	if err := a.cfg.Runs.CheckRun(ctx, run.req); err != nil {
		return nil, err
	}
	if p.body.AfterSeconds != nil && *p.body.AfterSeconds > 0 {
		// A delayed run on a thread to create: the thread is made now,
		// so the run is listed on it while it waits; but not for a run
		// the queue refuses (it is full).
		create := err != nil
		delay := time.Duration(*p.body.AfterSeconds * float64(time.Second))
		if !a.durable() {
			if err := a.queueRoom(thread); err != nil {
				return nil, err
			}
			if create {
				if _, err := a.cfg.Runs.CreateThread(ctx, thread, graph, nil); err != nil && !errors.Is(err, runs.ErrThreadExists) {
					return nil, err
				}
			}
			if err := a.addPending(ctx, run, delay); err != nil {
				return nil, err
			}
		} else {
			// The queue's own limits say whether there is room: a thread
			// made for a run it refuses goes again. (Made first, so that
			// a run due at once never finds it missing.)
			made := false
			if create {
				_, err := a.cfg.Runs.CreateThread(ctx, thread, graph, nil)
				if err != nil && !errors.Is(err, runs.ErrThreadExists) {
					return nil, err
				}
				made = err == nil
			}
			if err := a.addPending(ctx, run, delay); err != nil {
				if made {
					if derr := a.cfg.Runs.DeleteThread(ctx, thread); derr != nil && !errors.Is(derr, runs.ErrUnknownThread) {
						a.log.Error("api: delete the thread made for a refused delayed run", "thread", thread, "error", derr)
					}
				}
				return nil, err
			}
		}
		a.bookkeep(ctx, thread, graph, assistantID)
		return run, nil
	}
	for attempt := 0; ; attempt++ {
		// Runs queued on the thread make it busy too: a new run neither
		// jumps the queue nor slips in before a delayed run (a durable
		// manager's claim refuses it itself).
		err := runs.ErrThreadBusy
		if a.durable() || len(a.queuedOf(thread)) == 0 {
			_, err = a.cfg.Runs.Run(ctx, run.req)
		}
		if err == nil {
			close(run.started)
			a.bookkeep(ctx, thread, graph, assistantID)
			return run, nil
		}
		if !errors.Is(err, runs.ErrThreadBusy) || attempt == 3 {
			return nil, err
		}
		switch p.strategy {
		case strategyReject:
			return nil, conflict("thread %q is busy with another run; multitask_strategy reject refuses a second one", thread)
		case strategyEnqueue:
			if err := a.addPending(ctx, run, 0); err != nil {
				return nil, err
			}
			a.bookkeep(ctx, thread, graph, assistantID)
			return run, nil
		case strategyInterrupt, strategyRollback:
			if err := a.cancelAllPending(ctx, thread); err != nil {
				return nil, err
			}
			if err := a.stopRun(ctx, thread, "", p.strategy == strategyRollback); err != nil {
				return nil, err
			}
		}
	}
}

// bookkeep records on the thread which graph and assistant it last ran
// (metadata graph_id and assistant_id), as upstream's run creation does.
// A failure is logged: the run exists, and its answer must not be an
// error the SDK would retry.
func (a *API) bookkeep(ctx context.Context, thread, graph, assistantID string) {
	info, err := a.cfg.Runs.Thread(ctx, thread)
	if err == nil && info.Metadata["graph_id"] == graph && info.Metadata["assistant_id"] == assistantID {
		return
	}
	if err == nil {
		_, err = a.cfg.Runs.PatchThread(ctx, thread, map[string]any{"graph_id": graph, "assistant_id": assistantID})
	}
	if err != nil {
		a.log.Error("api: record the thread's graph and assistant", "thread", thread, "error", err)
	}
}

// stopRun cancels the thread's active run (run runID, or whichever runs
// when runID is ""), waits for it to end and, with rollback, deletes it
// and every checkpoint it wrote. A run that is not active (it ended
// meanwhile, or the thread was busy with queued runs only) is left alone:
// a finished run is never rolled back from under the runs after it.
func (a *API) stopRun(ctx context.Context, thread, runID string, rollback bool) error {
	info, err := a.cfg.Runs.Thread(ctx, thread)
	if err != nil {
		return err
	}
	if info.Status != runs.StatusRunning || runID != "" && info.RunID != runID {
		return nil
	}
	finish, err := a.cancelActive(ctx, thread, info.RunID, rollback)
	if errors.Is(err, runs.ErrNotRunning) {
		return nil // it ended meanwhile: left alone
	}
	if err != nil {
		return err
	}
	return finish(ctx)
}

// cancelActive cancels the thread's active run runID now and returns
// finish, which waits for it to end and, with rollback, deletes it and its
// checkpoints. A rollback holds the thread's queued runs until finish has
// run, so none starts on checkpoints about to go.
func (a *API) cancelActive(ctx context.Context, thread, runID string, rollback bool) (finish func(context.Context) error, err error) {
	release := func() {}
	if rollback {
		if release, err = a.holdPending(ctx, thread); err != nil {
			return nil, err
		}
	}
	err = a.cfg.Runs.CancelRun(ctx, thread, runID)
	if errors.Is(err, runs.ErrNotRunning) {
		// It ended on its own before the cancel reached it (and the
		// next run may have started since): there is nothing to stop,
		// and a finished run is not rolled back.
		release()
		return nil, err
	}
	if err != nil {
		release()
		return nil, err
	}
	return func(ctx context.Context) error {
		defer release()
		if _, err := a.cfg.Runs.Wait(ctx, thread); err != nil {
			return err
		}
		if rollback {
			if err := a.cfg.Runs.DeleteRun(ctx, thread, runID, true); err != nil && !errors.Is(err, runs.ErrUnknownRun) {
				return err
			}
		}
		return nil
	}, nil
}

// The queues of runs waiting for their thread (enqueue, after_seconds).
type queues struct {
	mu      sync.Mutex
	threads map[string][]*apiRun
	byID    map[string]*apiRun
	// ended are queued runs that never started (cancelled, or the
	// server stopped), the latest PartLogsKept of them.
	ended      map[string]*apiRun
	endedOrder []string
	// holds counts, per thread, the rollbacks under way: its queued
	// runs wait for them (holdQueue); released is closed when the count
	// falls to 0.
	holds    map[string]int
	released map[string]chan struct{}
}

// holdQueue keeps the thread's queued runs from starting until release
// is called: a rollback deletes the stopped run's checkpoints before the
// next run may start on them.
func (a *API) holdQueue(thread string) (release func()) {
	q := &a.queue
	q.mu.Lock()
	if q.holds == nil {
		q.holds, q.released = map[string]int{}, map[string]chan struct{}{}
	}
	if q.holds[thread] == 0 {
		q.released[thread] = make(chan struct{})
	}
	q.holds[thread]++
	q.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			q.mu.Lock()
			defer q.mu.Unlock()
			if q.holds[thread]--; q.holds[thread] == 0 {
				close(q.released[thread])
				delete(q.holds, thread)
				delete(q.released, thread)
			}
		})
	}
}

// held returns a channel closed when the thread's queue is no longer
// held, or nil when it is not held.
func (a *API) held(thread string) <-chan struct{} {
	a.queue.mu.Lock()
	defer a.queue.mu.Unlock()
	return a.queue.released[thread]
}

// waitIdle waits until the thread has no active run, or the queued run
// is cancelled meanwhile.
func (a *API) waitIdle(thread string, run *apiRun) (runs.Thread, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-run.cancelled:
			cancel()
		case <-a.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	t, err := a.cfg.Runs.Wait(ctx, thread)
	if ctx.Err() != nil {
		return t, nil // the loop sees why
	}
	return t, err
}

// enqueue puts run at the end of its thread's queue; the thread's first
// queued run starts once the thread has no active run (and its delay has
// passed), then the next.
func (a *API) enqueue(run *apiRun, delay time.Duration) error {
	q := &a.queue
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.room(run.req.Thread); err != nil {
		return err
	}
	if q.threads == nil {
		q.threads, q.byID = map[string][]*apiRun{}, map[string]*apiRun{}
	}
	thread := run.req.Thread
	run.delay = delay
	// The thread exists now (a queued run waits behind another, or a
	// delayed one's thread was made for it): deleted meanwhile, it stays
	// deleted.
	run.req.MustExist = true
	q.byID[run.id] = run
	q.threads[thread] = append(q.threads[thread], run)
	if len(q.threads[thread]) == 1 {
		go a.drain(thread)
	}
	return nil
}

// room says whether one more run may queue on thread; q.mu is held.
func (q *queues) room(thread string) error {
	if len(q.threads[thread]) >= MaxQueuedPerThread || len(q.byID) >= MaxQueued {
		return conflict("too many runs are queued (at most %d per thread, %d in all); wait for some to finish", MaxQueuedPerThread, MaxQueued)
	}
	return nil
}

// queueRoom is room for a caller not holding the queue's lock.
func (a *API) queueRoom(thread string) error {
	a.queue.mu.Lock()
	defer a.queue.mu.Unlock()
	return a.queue.room(thread)
}

// Bounds of the run queues: each queued run holds its request.
const (
	MaxQueuedPerThread = 100
	MaxQueued          = 10_000
)

// drain starts the queued runs of a thread one after the other.
func (a *API) drain(thread string) {
	q := &a.queue
	for {
		q.mu.Lock()
		run := q.threads[thread][0]
		q.mu.Unlock()
		if wait := time.Until(run.created.Add(run.delay)); wait > 0 {
			select {
			case <-time.After(wait):
			case <-a.done:
			case <-run.cancelled:
			}
		}
		for {
			select {
			case <-a.done:
				run.err = errors.New("the server stopped before the run started")
			case <-run.cancelled:
				run.err = errCancelledQueued
			default:
			}
			if run.err != nil {
				break
			}
			if _, err := a.waitIdle(thread, run); err != nil {
				if errors.Is(err, runs.ErrUnknownThread) {
					// The thread was deleted under the queue: its runs go
					// with it, rather than bring it back.
					err = errThreadDeleted
				}
				run.err = err
				break
			}
			if h := a.held(thread); h != nil {
				select {
				case <-h:
				case <-run.cancelled:
				case <-a.done:
				}
				continue
			}
			_, err := a.cfg.Runs.Run(context.Background(), run.req)
			if errors.Is(err, runs.ErrThreadBusy) {
				continue
			}
			run.err = err
			break
		}
		if run.err != nil && !errors.Is(run.err, errCancelledQueued) && !errors.Is(run.err, errThreadDeleted) {
			a.log.Error("api: a queued run did not start", "thread", thread, "run", run.id, "error", run.err)
		}
		// Out of the queue before anyone waiting on started wakes: a
		// caller that cancelled it then finds the thread's queue without
		// it.
		q.mu.Lock()
		q.threads[thread] = q.threads[thread][1:]
		delete(q.byID, run.id)
		if run.err != nil {
			// What a client asks of it later: it ended without running.
			q.rememberEnded(run)
		}
		empty := len(q.threads[thread]) == 0
		if empty {
			delete(q.threads, thread)
		}
		q.mu.Unlock()
		close(run.started)
		if empty {
			return
		}
	}
}

// queued returns a run still waiting in its thread's queue.
func (a *API) queued(runID string) (*apiRun, bool) {
	a.queue.mu.Lock()
	defer a.queue.mu.Unlock()
	r, ok := a.queue.byID[runID]
	return r, ok
}

// forgetEnded drops a never-started run from what get and list report.
func (a *API) forgetEnded(runID string) {
	a.queue.mu.Lock()
	defer a.queue.mu.Unlock()
	delete(a.queue.ended, runID)
	a.queue.endedOrder = slices.DeleteFunc(a.queue.endedOrder, func(id string) bool { return id == runID })
}

// neverStartedOf lists a thread's queued runs that ended without
// starting.
func (a *API) neverStartedOf(thread string) []*apiRun {
	a.queue.mu.Lock()
	defer a.queue.mu.Unlock()
	var out []*apiRun
	for _, id := range a.queue.endedOrder {
		if r := a.queue.ended[id]; r != nil && r.req.Thread == thread {
			out = append(out, r)
		}
	}
	return out
}

// neverStarted returns a queued run that ended without starting.
func (a *API) neverStarted(runID string) (*apiRun, bool) {
	a.queue.mu.Lock()
	defer a.queue.mu.Unlock()
	r, ok := a.queue.ended[runID]
	return r, ok
}

// queuedOf lists the runs waiting in a thread's queue, oldest first.
func (a *API) queuedOf(thread string) []*apiRun {
	a.queue.mu.Lock()
	defer a.queue.mu.Unlock()
	return append([]*apiRun(nil), a.queue.threads[thread]...)
}

// runObject is the Run object of a run in the run log.
func (a *API) runObject(ctx context.Context, thread, runID string) (map[string]any, error) {
	q, ok, err := a.findPending(ctx, thread, runID, false)
	if err != nil {
		return nil, err
	}
	if ok {
		return q.pendingJSON(thread), nil
	}
	if q, ok := a.neverStarted(runID); ok && q.req.Thread == thread {
		o := q.pendingJSON(thread)
		o["status"] = "error"
		if errors.Is(q.err, errCancelledQueued) {
			o["status"] = "interrupted"
		}
		return o, nil
	}
	rec, err := a.cfg.Runs.RunRecord(ctx, thread, runID)
	if err != nil {
		return nil, err
	}
	return runJSON(rec), nil
}

// runJSON is a run record as the API's Run object. A run that stopped at
// an interrupt or a breakpoint did its work and ends "success" (its
// thread is "interrupted"), as upstream's workers report it; a cancelled
// one is "interrupted".
func runJSON(rec runs.RunRecord) map[string]any {
	meta := rec.Meta
	if meta == nil {
		meta = &runs.RunMeta{}
	}
	updated := rec.Started
	if !rec.Ended.IsZero() {
		updated = rec.Ended
	}
	return map[string]any{
		"run_id": rec.RunID, "thread_id": rec.Thread, "assistant_id": meta.Assistant,
		"created_at": rec.Started.UTC().Format(time.RFC3339Nano), "updated_at": updated.UTC().Format(time.RFC3339Nano),
		"status": runStatus(rec), "metadata": orEmptyMap(meta.Metadata), "kwargs": orEmptyMap(meta.Kwargs),
		"multitask_strategy": strategyOr(meta.Strategy),
	}
}

func strategyOr(s string) string {
	if s == "" {
		return strategyReject // the Studio's pages reject a second run
	}
	return s
}

func runStatus(rec runs.RunRecord) string {
	switch {
	case rec.Ended.IsZero():
		return "running"
	case rec.Status == runs.StatusError:
		return "error"
	case rec.Error == "cancelled":
		return "interrupted"
	}
	return "success"
}

func orEmptyMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func (a *API) listRuns(w http.ResponseWriter, r *http.Request) {
	thread := chi.URLParam(r, "thread_id")
	if err := checkThreadID("thread_id", thread); err != nil {
		fail(w, r, a.log, err)
		return
	}
	q := r.URL.Query()
	limit, err := intParam(q.Get("limit"), "limit", 10, 1, 1000)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	offset, err := intParam(q.Get("offset"), "offset", 0, 0, 1<<30)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	status := q.Get("status")
	if _, err := a.cfg.Runs.Thread(r.Context(), thread); err != nil {
		fail(w, r, a.log, err)
		return
	}
	recs, err := a.cfg.Runs.ThreadRuns(r.Context(), thread, 0)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	// Newest first, the queued ones (newest of all) before them.
	var all []map[string]any
	pend, err := a.pendingOf(r.Context(), thread)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	for i := len(pend) - 1; i >= 0; i-- {
		all = append(all, pend[i].pendingJSON(thread))
	}
	for i := len(recs) - 1; i >= 0; i-- {
		all = append(all, runJSON(recs[i]))
	}
	for _, q := range a.neverStartedOf(thread) {
		o, err := a.runObject(r.Context(), thread, q.id)
		if err == nil {
			all = append(all, o)
		}
	}
	// Newest first by creation, whichever list a run came from.
	slices.SortStableFunc(all, func(x, y map[string]any) int {
		return strings.Compare(y["created_at"].(string), x["created_at"].(string))
	})
	out := []map[string]any{}
	for _, o := range all {
		if status == "" || o["status"] == status {
			out = append(out, o)
		}
	}
	if offset >= len(out) {
		out = out[:0]
	} else {
		out = out[offset:min(len(out), offset+limit)]
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *API) getRun(w http.ResponseWriter, r *http.Request) {
	thread, runID, err := runParams(r)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	o, err := a.runObject(r.Context(), thread, runID)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	writeJSON(w, http.StatusOK, o)
}

func (a *API) deleteRun(w http.ResponseWriter, r *http.Request) {
	thread, runID, err := runParams(r)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	if _, ok, err := a.findPending(r.Context(), thread, runID, false); err != nil || ok {
		if err == nil {
			err = conflict("run %q is queued; cancel it first", runID)
		}
		fail(w, r, a.log, err)
		return
	}
	if err := a.cfg.Runs.DeleteRun(r.Context(), thread, runID, false); err != nil {
		fail(w, r, a.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// cancelRun cancels a run (action interrupt, the default: what it saved
// stays) or rolls it back (action rollback: it and its checkpoints are
// deleted). wait=1 answers 204 once it has ended, else 202 at once.
func (a *API) cancelRun(w http.ResponseWriter, r *http.Request) {
	thread, runID, err := runParams(r)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	q := r.URL.Query()
	action := q.Get("action")
	if action == "" {
		action = "interrupt"
	}
	if action != "interrupt" && action != "rollback" {
		fail(w, r, a.log, invalid("action", "%q: use interrupt or rollback", action))
		return
	}
	wait, _ := flagParam(r, "wait")
	qr, ok, err := a.findPending(r.Context(), thread, runID, false)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	if ok {
		// Not started: it never will (unless it was starting just now;
		// then it is the active run, cancelled below). Rolled back, it
		// is as if it never was.
		cancelled, err := a.cancelPending(r.Context(), qr, action == "rollback")
		if err != nil {
			fail(w, r, a.log, err)
			return
		}
		if cancelled {
			w.WriteHeader(map[bool]int{true: http.StatusNoContent, false: http.StatusAccepted}[wait])
			return
		}
	}
	info, err := a.cfg.Runs.Thread(r.Context(), thread)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	if _, err := a.cfg.Runs.RunRecord(r.Context(), thread, runID); err != nil {
		fail(w, r, a.log, err)
		return
	}
	active := info.Status == runs.StatusRunning && info.RunID == runID
	if !active {
		// An ended run is not cancelled, nor rolled back from the middle
		// of its thread's history (DELETE removes its record).
		fail(w, r, a.log, conflict("run %q has ended; there is nothing to cancel", runID))
		return
	}
	finish, err := a.cancelActive(r.Context(), thread, runID, action == "rollback")
	if errors.Is(err, runs.ErrNotRunning) {
		// It ended just now, before the cancel reached it.
		err = conflict("run %q has ended; there is nothing to cancel", runID)
	}
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	if !wait {
		go func() {
			if err := finish(context.Background()); err != nil {
				a.log.Error("api: cancel", "thread", thread, "run", runID, "error", err)
			}
		}()
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if err := finish(r.Context()); err != nil {
		fail(w, r, a.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// joinRun waits for a run to end and answers the thread's values then
// (or the run's error in the body), like runs.wait.
func (a *API) joinRun(w http.ResponseWriter, r *http.Request) {
	thread, runID, err := runParams(r)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	run, err := a.existingRun(r.Context(), thread, runID)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	a.waitAndAnswer(w, r, thread, run)
}

// existingRun finds a run the API can wait on: queued, or in the run log.
func (a *API) existingRun(ctx context.Context, thread, runID string) (*apiRun, error) {
	q, ok, err := a.findPending(ctx, thread, runID, true)
	if err != nil {
		return nil, err
	}
	if ok {
		return q, nil
	}
	if q, ok := a.neverStarted(runID); ok && q.req.Thread == thread {
		return q, nil
	}
	rec, err := a.cfg.Runs.RunRecord(ctx, thread, runID)
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	close(done)
	run := &apiRun{id: runID, started: done}
	if rec.Meta != nil && rec.Meta.NotStarted != "" {
		// A durable queue's run cancelled before it started.
		run.err = errCancelledQueued
	}
	return run, nil
}

// joinStream streams a run's parts: those after Last-Event-ID (a
// reconnect of a resumable stream; -1 from the start), else the live ones
// from now.
func (a *API) joinStream(w http.ResponseWriter, r *http.Request) {
	thread, runID, err := runParams(r)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	run, err := a.existingRun(r.Context(), thread, runID)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	after, meta := -2, true
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		n, err := strconv.Atoi(last)
		if err != nil || n < -1 {
			fail(w, r, a.log, invalid("Last-Event-ID", "%q: want the id of the last event received, or -1", last))
			return
		}
		after, meta = n, n < 0
	}
	// A GET is not a state change to cross-origin protection, yet this
	// one can cancel a run when it is dropped: a page on another site
	// (which the browser marks cross-site) may read the stream, if CORS
	// allows it, but never cancel through it.
	// The SDK writes 0 or 1; anything else reads as no.
	cancel, _ := flagParam(r, "cancel_on_disconnect")
	cancel = cancel && !a.crossSite(r)
	a.stream(w, r, thread, runID, run, after, meta, cancel)
}

func runParams(r *http.Request) (string, string, error) {
	thread, runID := chi.URLParam(r, "thread_id"), chi.URLParam(r, "run_id")
	if err := checkThreadID("thread_id", thread); err != nil {
		return "", "", err
	}
	if err := checkUUID("run_id", runID); err != nil {
		return "", "", err
	}
	return thread, runID, nil
}

// stream writes a run's parts as server-sent events. Event 0 is the
// metadata event; part k of the run is event k+1, so a reconnect with the
// last id it saw gets exactly what it missed. after is the last event id
// the client has (-1: none, so metadata is sent; -2: a join, which gets
// the metadata and the live parts from now on).
func (a *API) stream(w http.ResponseWriter, r *http.Request, thread, runID string, run *apiRun, after int, meta, cancelOnDrop bool) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	ctx := r.Context()
	if meta {
		writeEvent(w, "metadata", 0, map[string]any{"run_id": runID, "thread_id": thread, "attempt": 1})
		flush()
	}
	// A queued run has no parts yet.
	for waiting := true; waiting; {
		select {
		case <-run.started:
			waiting = false
		case <-ctx.Done():
			a.dropped(thread, runID, cancelOnDrop)
			return
		case <-time.After(HeartbeatInterval):
			_, _ = w.Write([]byte(": heartbeat\n\n"))
			flush()
		}
	}
	if run.err != nil {
		writeEvent(w, "error", -1, map[string]any{"error": "RunNotStarted", "message": publicMessage(a.log, run.err)})
		return
	}
	from := max(after, 0) // part ids are event ids - 1: the first part missed
	if after == -2 {
		from = runs.PartsFromNow
	}
	// Another replica's run is read from the parts it stores.
	log, ok := a.cfg.Runs.RunParts(ctx, thread, runID, from)
	if !ok {
		// A run of the Studio's pages, one whose parts are no longer
		// kept, or one another replica runs without storing its parts:
		// its end is all there is to say, once it has ended.
		for {
			wctx, cancel := context.WithTimeout(ctx, HeartbeatInterval)
			_, err := a.cfg.Runs.Wait(wctx, thread)
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				a.dropped(thread, runID, cancelOnDrop)
				return
			}
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				break // the thread went: its end is what the record says
			}
			_, _ = w.Write([]byte(": heartbeat\n\n"))
			flush()
		}
		a.endStream(ctx, w, thread, runID)
		return
	}
	last := after - 1 // part ids are event ids - 1
	if after == -2 {
		// A join: from now on.
		last = log.Last()
	}
	for {
		rctx, cancel := context.WithTimeout(ctx, HeartbeatInterval)
		parts, ended, err := log.Read(rctx, last)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				a.dropped(thread, runID, cancelOnDrop)
				return
			}
			_, _ = w.Write([]byte(": heartbeat\n\n"))
			flush()
			continue
		}
		for _, p := range parts {
			data := p.Data
			if p.Mode == engine.StreamDebug {
				data = debugCheckpoints(data)
			}
			writeEvent(w, eventName(p), p.ID+1, data)
			last = p.ID
		}
		flush()
		if ended {
			a.endStream(ctx, w, thread, runID)
			flush()
			return
		}
	}
}

// endStream closes a stream: with an error event when the run failed.
func (a *API) endStream(ctx context.Context, w http.ResponseWriter, thread, runID string) {
	rec, err := a.cfg.Runs.RunRecord(ctx, thread, runID)
	if err == nil && rec.Status == runs.StatusError {
		writeEvent(w, "error", -1, map[string]any{"error": "GraphError", "message": rec.Error})
	}
}

// dropped handles a client that went away mid-stream: with
// on_disconnect cancel, the run is cancelled if it still goes on.
func (a *API) dropped(thread, runID string, cancelOnDrop bool) {
	if !cancelOnDrop {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if q, ok, err := a.findPending(ctx, thread, runID, false); ok {
		if _, err := a.cancelPending(ctx, q, false); err != nil {
			a.log.Error("api: cancel a queued run its dropped client asked to cancel", "thread", thread, "run", runID, "error", err)
		}
	} else if err != nil {
		a.log.Error("api: find the run a dropped client asked to cancel", "thread", thread, "run", runID, "error", err)
	}
	// This run only: never the thread's next one.
	if err := a.cfg.Runs.CancelRun(ctx, thread, runID); err != nil && !errors.Is(err, runs.ErrNotRunning) && !errors.Is(err, runs.ErrUnknownThread) {
		a.log.Error("api: cancel the run its dropped client asked to cancel", "thread", thread, "run", runID, "error", err)
	}
}

// eventName is a part's SSE event: its mode ("messages" for
// messages-tuple), then its subgraph namespace, "|"-separated.
func eventName(p runs.Part) string {
	name := string(p.Mode)
	if len(p.Namespace) > 0 {
		name += "|" + strings.Join(p.Namespace, "|")
	}
	return name
}

// writeEvent writes one event; id < 0 writes none (an error event).
func writeEvent(w http.ResponseWriter, name string, id int, data any) {
	var raw []byte
	switch d := data.(type) {
	case json.RawMessage:
		raw = d
	default:
		var err error
		if raw, err = json.Marshal(d); err != nil {
			raw = []byte(`{"error":"Error","message":"the event could not be encoded"}`)
		}
	}
	var b strings.Builder
	b.WriteString("event: ")
	b.WriteString(name)
	b.WriteString("\ndata: ")
	b.Write(raw)
	b.WriteString("\n")
	if id >= 0 {
		b.WriteString("id: ")
		b.WriteString(strconv.Itoa(id))
		b.WriteString("\n")
	}
	b.WriteString("\n")
	_, _ = w.Write([]byte(b.String()))
}

// waitAndAnswer answers runs.wait and join: 200 at once (the run exists),
// a newline every second while the run goes on (leading whitespace is
// valid JSON and keeps proxies from timing out), then the thread's values
// with its pending interrupts under "__interrupt__", or
// {"__error__": {error, message}} when the run failed.
func (a *API) waitAndAnswer(w http.ResponseWriter, r *http.Request, thread string, run *apiRun) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	flush()
	ctx := r.Context()
	tick := time.NewTicker(waitKeepAlive)
	defer tick.Stop()
	done := make(chan error, 1)
	go func() {
		select {
		case <-run.started:
		case <-ctx.Done():
			done <- ctx.Err()
			return
		}
		if run.err != nil {
			done <- run.err
			return
		}
		done <- a.waitRun(ctx, thread, run)
	}()
	var err error
	for waiting := true; waiting; {
		select {
		case err = <-done:
			waiting = false
		case <-tick.C:
			_, _ = w.Write([]byte("\n"))
			flush()
		}
	}
	if ctx.Err() != nil {
		return
	}
	body, err := a.finalValues(ctx, thread, run.id, err)
	if err != nil {
		body = map[string]any{"__error__": map[string]any{"error": "Error", "message": publicMessage(a.log, err)}}
	}
	raw, jerr := json.Marshal(body)
	if jerr != nil {
		raw = []byte(`{"__error__":{"error":"Error","message":"the values could not be encoded"}}`)
	}
	_, _ = w.Write(raw)
}

// waitRun waits until the run has ended: on its part log when this API
// started it, else (a run of the Studio's pages) on its record and the
// thread, never on a later run of the thread.
func (a *API) waitRun(ctx context.Context, thread string, run *apiRun) error {
	if run.req.Stream != nil {
		if l := run.req.Stream.Log(); l != nil {
			return l.Wait(ctx)
		}
	}
	pause := 10 * time.Millisecond
	for {
		rec, err := a.cfg.Runs.RunRecord(ctx, thread, run.id)
		if err != nil {
			return err
		}
		if !rec.Ended.IsZero() {
			return nil
		}
		info, err := a.cfg.Runs.Thread(ctx, thread)
		if err != nil {
			return err
		}
		switch {
		case info.Status == runs.StatusRunning:
			// This run, or one before it: either way it goes first.
			if _, err := a.cfg.Runs.Wait(ctx, thread); err != nil {
				return err
			}
			continue
		case info.RunID == run.id:
			// It ended (a run that ended is read ended, from the Manager
			// until its record is written: this is a record lost).
			return nil
		}
		// The thread is idle and its last run another. With a durable
		// queue this one may be claimed and not started yet (a run that
		// ended is read ended; one whose process died is taken over and
		// ended): nothing tells when it starts, look again shortly.
		// Without one, a claimed run starts at once, and a record that
		// never ended is a process's that died (the thread was settled,
		// its record not): it ended.
		if !a.durable() {
			return nil
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return ctx.Err()
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}

// finalValues is what wait and join answer once the run ended: the
// thread's values, with "__interrupt__" when it waits at interrupts, or
// the run's error.
func (a *API) finalValues(ctx context.Context, thread, runID string, waitErr error) (any, error) {
	if waitErr != nil {
		return nil, waitErr
	}
	rec, err := a.cfg.Runs.RunRecord(ctx, thread, runID)
	if err != nil {
		return nil, err
	}
	if rec.Status == runs.StatusError {
		return map[string]any{"__error__": map[string]any{"error": "GraphError", "message": rec.Error}}, nil
	}
	info, err := a.cfg.Runs.Thread(ctx, thread)
	if err != nil {
		return nil, err
	}
	g, err := a.cfg.Runs.Graph(info.Graph)
	if err != nil {
		return nil, err
	}
	snap, err := g.Pregel().GetState(ctx, checkpoints.Config{ThreadID: thread})
	if err != nil {
		return nil, err
	}
	values := map[string]any{}
	for k, v := range snap.Values {
		values[k] = v
	}
	if len(snap.Interrupts) > 0 {
		values["__interrupt__"] = interruptsJSON(snap.Interrupts)
	}
	return values, nil
}

// interruptsJSON is the API's Interrupt list: value and id.
func interruptsJSON(is []engine.Interruption) []map[string]any {
	out := make([]map[string]any, 0, len(is))
	for _, i := range is {
		out = append(out, map[string]any{"value": i.Value, "id": i.ID})
	}
	return out
}

// intParam reads an integer query parameter within [lo, hi].
func intParam(s, name string, def, lo, hi int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, invalid(name, "%q: want a whole number from %d to %d", s, lo, hi)
	}
	return n, nil
}

// checkUUID refuses a path id that is not a UUID, as upstream's
// validation does.
func checkUUID(field, s string) error {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return invalid(field, "%q is not a UUID", clipped(s))
	}
	for i, c := range s {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			continue
		}
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return invalid(field, "%q is not a UUID", clipped(s))
		}
	}
	return nil
}

// newRunID is a fresh run id: a time-ordered UUID, as upstream's.
func newRunID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// debugCheckpoints adds to a debug checkpoint event's payload its
// checkpoint and parent_checkpoint, as the Agent Server's debug stream
// has them (LangGraph Studio draws its checkpoint tree from them).
func debugCheckpoints(raw json.RawMessage) json.RawMessage {
	var ev map[string]any
	if json.Unmarshal(raw, &ev) != nil || ev["type"] != "checkpoint" {
		return raw
	}
	payload, ok := ev["payload"].(map[string]any)
	if !ok {
		return raw
	}
	checkpointOf := func(cfg any) any {
		c, _ := cfg.(map[string]any)
		conf, ok := c["configurable"].(map[string]any)
		if !ok {
			return nil
		}
		return map[string]any{"thread_id": conf["thread_id"], "checkpoint_ns": conf["checkpoint_ns"], "checkpoint_id": conf["checkpoint_id"], "checkpoint_map": nil}
	}
	payload["checkpoint"], payload["parent_checkpoint"] = checkpointOf(payload["config"]), checkpointOf(payload["parent_config"])
	out, err := json.Marshal(ev)
	if err != nil {
		return raw
	}
	return out
}

// checkThreadID refuses a path thread id no thread can have. Upstream
// takes UUIDs only; a Studio thread may have any id the Studio accepts
// (letters, digits, '.', '_', '-'), and those are API threads too, so
// the API takes what the Studio does (every UUID among them).
func checkThreadID(field, s string) error {
	if err := runs.CheckThreadID(s); err != nil {
		return invalid(field, "%q is not a thread id: use a UUID (or letters, digits, '.', '_' and '-')", clipped(s))
	}
	return nil
}
