package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/runs"
)

// Stateless runs run on a thread of their own, made for them; with
// on_completion "delete" (the default) the thread and the run's record go
// once the run ends and its answer was sent.
func (a *API) mountStateless(r chi.Router) {
	r.Post("/runs/stream", a.createStateless(modeStream))
	r.Post("/runs/wait", a.createStateless(modeWait))
	r.Post("/runs", a.createStateless(modeBackground))
	r.Post("/runs/batch", a.createBatch)
	r.Post("/runs/cancel", a.cancelMany)
	r.Get("/runs/{run_id}/stream", a.joinStatelessStream)
}

// statelessRuns maps a stateless run to its thread while it is known.
type statelessRuns struct {
	mu     sync.Mutex
	thread map[string]string
}

func (s *statelessRuns) put(run, thread string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.thread == nil {
		s.thread = map[string]string{}
	}
	s.thread[run] = thread
}

func (s *statelessRuns) get(run string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.thread[run]
	return t, ok
}

func (s *statelessRuns) drop(run string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.thread, run)
}

func (a *API) createStateless(mode createMode) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		raw, body, err := decodeRunCreate(r)
		if err != nil {
			fail(w, r, a.log, err)
			return
		}
		run, thread, p, err := a.startStateless(r.Context(), raw, body, mode == modeStream)
		if err != nil {
			fail(w, r, a.log, err)
			return
		}
		a.answerRun(w, r, mode, "/runs/"+run.id, thread, run, p)
		go a.finishStateless(thread, run, p)
	}
}

// startStateless validates a stateless run and starts it on a new thread.
func (a *API) startStateless(ctx context.Context, raw map[string]any, body runCreate, streaming bool) (*apiRun, string, *runPlan, error) {
	p, err := plan(raw, body, streaming)
	if err != nil {
		return nil, "", nil, err
	}
	if p.checkpointID != "" {
		return nil, "", nil, invalid("checkpoint_id", "a stateless run has a thread of its own, with no checkpoints to start from")
	}
	if p.input == nil {
		return nil, "", nil, invalid("input", "a stateless run starts a new thread: give input")
	}
	p.createThread, p.stateless = true, true
	thread := newRunID()
	run, err := a.startRun(ctx, thread, p)
	if err != nil {
		return nil, "", nil, err
	}
	a.stateless.put(run.id, thread)
	return run, thread, p, nil
}

// finishStateless waits for a stateless run to end, delivers its webhook
// (before anything is deleted), and with on_completion "delete" (the
// default) deletes its thread: at once, or, for a resumable stream, once
// a client's reconnect window has passed, so a dropped stream can still
// fetch its tail. The run stays reachable by its id (join, cancel) until
// then. Callers run it in the background, after their answer.
func (a *API) finishStateless(thread string, run *apiRun, p *runPlan) {
	defer a.stateless.drop(run.id)
	ctx := context.Background()
	if p.body.Webhook != "" {
		a.deliverWebhook(thread, run, p.body.Webhook)
	}
	<-run.started
	if run.err == nil {
		if err := a.waitRun(ctx, thread, run); err != nil {
			a.log.Error("api: stateless run", "run", run.id, "error", err)
			return
		}
	}
	if p.streaming && p.body.StreamResumable {
		select {
		case <-time.After(StatelessReconnectWindow):
		case <-a.done:
		}
	}
	if p.body.OnCompletion == "keep" {
		return
	}
	if err := a.cfg.Runs.DeleteThread(ctx, thread); err != nil && !errors.Is(err, runs.ErrUnknownThread) {
		a.log.Error("api: delete a stateless run's thread", "run", run.id, "thread", thread, "error", err)
	}
}

// StatelessReconnectWindow is how long a resumable stateless stream's
// thread outlives its run, for a client that reconnects for the tail.
var StatelessReconnectWindow = 30 * time.Second

// createBatch starts several stateless runs in the background and
// answers their Run objects, in order. A batch is checked whole before any
// run starts.
func (a *API) createBatch(w http.ResponseWriter, r *http.Request) {
	var bodies []json.RawMessage
	if err := decodeBody(r, &bodies, false); err != nil {
		fail(w, r, a.log, err)
		return
	}
	if len(bodies) == 0 || len(bodies) > 100 {
		fail(w, r, a.log, invalid("body", "send 1 to 100 run requests, not %d", len(bodies)))
		return
	}
	type item struct {
		raw  map[string]any
		body runCreate
	}
	items := make([]item, len(bodies))
	for i, b := range bodies {
		if err := json.Unmarshal(b, &items[i].body); err != nil {
			fail(w, r, a.log, invalid("["+strconv.Itoa(i)+"]", "%v", err))
			return
		}
		_ = json.Unmarshal(b, &items[i].raw)
		if _, err := plan(items[i].raw, items[i].body, false); err != nil {
			fail(w, r, a.log, invalid("["+strconv.Itoa(i)+"]", "%v", err))
			return
		}
	}
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		run, thread, p, err := a.startStateless(r.Context(), it.raw, it.body, false)
		if err != nil {
			// Runs before it started: report this one's failure in its
			// place rather than a status that would make the SDK retry
			// the whole batch.
			out = append(out, map[string]any{"status": "error", "error": publicMessage(a.log, err)})
			continue
		}
		rec, err := a.runObject(r.Context(), thread, run.id)
		if err != nil {
			rec = run.pendingJSON(thread)
		}
		out = append(out, rec)
		go a.finishStateless(thread, run, p)
	}
	writeJSON(w, http.StatusOK, out)
}

// cancelMany cancels runs by id (of one thread, or stateless), or every
// run with a status (pending, running, or all).
func (a *API) cancelMany(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ThreadID string   `json:"thread_id"`
		RunIDs   []string `json:"run_ids"`
		Status   string   `json:"status"`
	}
	if err := decodeBody(r, &body, false); err != nil {
		fail(w, r, a.log, err)
		return
	}
	action := r.URL.Query().Get("action")
	if action != "" && action != "interrupt" && action != "rollback" {
		fail(w, r, a.log, invalid("action", "%q: use interrupt or rollback", action))
		return
	}
	type target struct{ thread, run string }
	var targets []target
	switch {
	case len(body.RunIDs) > 0 && body.Status != "":
		fail(w, r, a.log, invalid("status", "give run_ids or status, not both"))
		return
	case len(body.RunIDs) > 0:
		for i, id := range body.RunIDs {
			if err := checkUUID("run_ids["+strconv.Itoa(i)+"]", id); err != nil {
				fail(w, r, a.log, err)
				return
			}
			thread := body.ThreadID
			if thread == "" {
				t, ok := a.stateless.get(id)
				if !ok {
					fail(w, r, a.log, notFound("run %q: give thread_id for a run of a thread", id))
					return
				}
				thread = t
			}
			targets = append(targets, target{thread, id})
		}
	case body.Status == "pending" || body.Status == "running" || body.Status == "all":
		if body.Status != "running" {
			pend, err := a.allPending(r.Context())
			if err != nil {
				fail(w, r, a.log, err)
				return
			}
			for _, q := range pend {
				targets = append(targets, target{q.req.Thread, q.id})
			}
		}
		if body.Status != "pending" {
			ts, err := a.cfg.Runs.ListThreads(r.Context(), runs.ThreadFilter{Status: runs.StatusRunning})
			if err != nil {
				fail(w, r, a.log, err)
				return
			}
			for _, t := range ts {
				targets = append(targets, target{t.ID, t.RunID})
			}
		}
	default:
		fail(w, r, a.log, invalid("run_ids", "name the runs (run_ids) or a status: pending, running or all"))
		return
	}
	for _, t := range targets {
		err := a.cancelOne(r.Context(), t.thread, t.run, action == "rollback")
		if errors.Is(err, runs.ErrUnknownThread) && body.Status != "" {
			continue // gone meanwhile (a stateless run's thread): nothing to cancel
		}
		if err != nil {
			fail(w, r, a.log, err)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// cancelOne cancels a queued or active run and waits for it to end; with
// rollback it and its checkpoints are then deleted. A run that already
// ended is left as it is.
func (a *API) cancelOne(ctx context.Context, thread, runID string, rollback bool) error {
	q, ok, err := a.findPending(ctx, thread, runID, false)
	if err != nil {
		return err
	}
	if ok {
		cancelled, err := a.cancelPending(ctx, q, rollback)
		if err != nil || cancelled {
			return err
		}
	}
	return a.stopRun(ctx, thread, runID, rollback)
}

// joinStatelessStream is joinStream for a stateless run.
func (a *API) joinStatelessStream(w http.ResponseWriter, r *http.Request) {
	runID := chi.URLParam(r, "run_id")
	if err := checkUUID("run_id", runID); err != nil {
		fail(w, r, a.log, err)
		return
	}
	thread, ok := a.stateless.get(runID)
	if !ok {
		fail(w, r, a.log, notFound("stateless run %q not found (a deleted run's thread is gone with it)", runID))
		return
	}
	rctx := chi.RouteContext(r.Context())
	rctx.URLParams.Add("thread_id", thread)
	a.joinStream(w, r)
}
