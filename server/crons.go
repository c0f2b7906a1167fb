package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/runs"
)

// Crons start runs on a schedule: on a thread of their own
// (POST /threads/{thread_id}/runs/crons) or, stateless, each firing on a
// new thread (POST /runs/crons). A firing starts its run as POST /runs
// would, with the body the cron was made with (its multitask strategy,
// webhook and the rest). Who fires what: a ticker in this process
// (runCronTicker), or, with a river queue, the leader's periodic job, so
// each due time fires once across replicas (crons_river.go).
func (a *API) mountCrons(r chi.Router) {
	r.Post("/runs/crons", a.createCron)
	r.Post("/threads/{thread_id}/runs/crons", a.createCron)
	r.Post("/runs/crons/search", a.searchCrons)
	r.Post("/runs/crons/count", a.countCrons)
	r.Patch("/runs/crons/{cron_id}", a.updateCron)
	r.Delete("/runs/crons/{cron_id}", a.deleteCron)
}

// CronTick is how often a process without a river queue looks for due
// crons.
const CronTick = time.Second

// cronKeys are the fields of a cron-create body that are the cron's own;
// the rest is the run-create body each firing uses.
var cronKeys = []string{"schedule", "end_time", "on_run_completed", "enabled", "thread_id"}

// Metadata keys every run a cron starts carries: which cron, and the due
// time it fired for. Together they name the firing, so a firing retried
// after a crash finds the run it already started.
const (
	cronIDKey   = "cron_id"
	cronFireKey = "cron_fire_time"
)

// now is the cron clock: time.Now unless a test set another.
func (a *API) now() time.Time {
	if f := a.clock.Load(); f != nil {
		return (*f)()
	}
	return time.Now()
}

// cronWire is a Cron as the API sends it (the SDK's Cron type).
type cronWire struct {
	CronID         string         `json:"cron_id"`
	AssistantID    string         `json:"assistant_id"`
	ThreadID       *string        `json:"thread_id"`
	OnRunCompleted *string        `json:"on_run_completed"`
	EndTime        *time.Time     `json:"end_time"`
	Schedule       string         `json:"schedule"`
	CreatedAt      time.Time      `json:"created_at"`
	UpdatedAt      time.Time      `json:"updated_at"`
	Payload        map[string]any `json:"payload"`
	UserID         *string        `json:"user_id"`
	NextRunDate    *time.Time     `json:"next_run_date"`
	Metadata       map[string]any `json:"metadata"`
	Enabled        bool           `json:"enabled"`
}

func cronToWire(c runs.Cron) cronWire {
	w := cronWire{CronID: c.ID, AssistantID: c.Assistant, EndTime: c.EndTime, Schedule: c.Schedule, CreatedAt: c.Created,
		UpdatedAt: c.Updated, Payload: orEmptyMap(c.Payload), NextRunDate: c.NextRun, Metadata: orEmptyMap(c.Metadata), Enabled: c.Enabled}
	if c.Thread != "" {
		w.ThreadID = &c.Thread
	} else {
		// What becomes of a firing's thread: a stateless cron's only.
		w.OnRunCompleted = &c.OnRunCompleted
	}
	if c.UserID != "" {
		w.UserID = &c.UserID
	}
	return w
}

// cronFields are what a search may select ("now" is in the SDK's list
// and selects nothing).
var cronFields = []string{"cron_id", "assistant_id", "thread_id", "on_run_completed", "end_time", "schedule", "created_at",
	"updated_at", "user_id", "payload", "next_run_date", "metadata", "enabled", "now"}

func (w cronWire) selected(fields []string) map[string]any {
	var all map[string]any
	b, _ := json.Marshal(w)
	_ = json.Unmarshal(b, &all)
	out := make(map[string]any, len(fields))
	for _, f := range fields {
		if v, ok := all[f]; ok {
			out[f] = v
		}
	}
	return out
}

// cronErr maps a cron store's errors to the API's statuses.
func cronErr(err error) error {
	switch {
	case errors.Is(err, runs.ErrUnknownCron):
		return notFound("%s", err.Error())
	case errors.Is(err, runs.ErrInvalidInput):
		return invalid("", "%s", strings.TrimPrefix(err.Error(), runs.ErrInvalidInput.Error()+": "))
	}
	return err
}

// cronOf checks a cron-create body: the cron's fields and the run-create
// body it keeps (which must plan as a run would).
func (a *API) cronOf(ctx context.Context, raw map[string]any, thread string) (runs.Cron, error) {
	now := a.now()
	c := runs.Cron{ID: uuid.NewString(), Thread: thread, Enabled: true, OnRunCompleted: "delete", Created: now, Updated: now}
	s, ok := raw["schedule"].(string)
	if !ok || strings.TrimSpace(s) == "" {
		return c, invalid("schedule", "required: a cron expression such as \"*/5 * * * *\" (minute hour day-of-month month day-of-week, UTC)")
	}
	if err := runs.CheckSchedule(s); err != nil {
		return c, invalid("schedule", "%s", strings.TrimPrefix(err.Error(), runs.ErrInvalidInput.Error()+": "))
	}
	c.Schedule = s
	if v, ok := raw["end_time"]; ok && v != nil {
		end, err := timeField("end_time", v)
		if err != nil {
			return c, err
		}
		c.EndTime = &end
	}
	if v, ok := raw["on_run_completed"]; ok && v != nil {
		s, _ := v.(string)
		if s != "delete" && s != "keep" {
			return c, invalid("on_run_completed", "%v: use delete or keep", v)
		}
		c.OnRunCompleted = s
	}
	if v, ok := raw["enabled"]; ok && v != nil {
		b, ok := v.(bool)
		if !ok {
			return c, invalid("enabled", "want a boolean, got %s", kindOf(v))
		}
		c.Enabled = b
	}
	payload := map[string]any{}
	for k, v := range raw {
		if !slices.Contains(cronKeys, k) && v != nil {
			payload[k] = v
		}
	}
	p, err := planPayload(payload)
	if err != nil {
		return c, err
	}
	if p.body.AfterSeconds != nil {
		return c, invalid("after_seconds", "a cron's runs start on its schedule")
	}
	if p.body.AssistantID == "" {
		return c, invalid("assistant_id", "required: an assistant id or a graph id")
	}
	as, err := a.resolveAssistant(ctx, p.body.AssistantID)
	if err != nil {
		return c, err
	}
	c.Assistant = as.ID
	payload["assistant_id"] = as.ID
	if md, ok := payload["metadata"].(map[string]any); ok {
		c.Metadata = md
	}
	req := runs.RunRequest{Graph: as.Graph, Thread: thread, Input: p.input, Options: p.options}
	if thread == "" {
		if p.checkpointID != "" {
			return c, invalid("checkpoint_id", "a stateless cron's runs each have a thread of their own, with no checkpoints to start from")
		}
		if p.input == nil {
			return c, invalid("input", "a stateless cron's runs each start a new thread: give input")
		}
		req.Thread = uuid.NewString()
	}
	makeThread := false
	if thread != "" {
		info, err := a.cfg.Runs.Thread(ctx, thread)
		switch {
		case errors.Is(err, runs.ErrUnknownThread):
			if !p.createThread {
				return c, notFound("thread %q not found; create it first, or pass if_not_exists: \"create\"", thread)
			}
			makeThread = true
		case err != nil:
			return c, err
		case info.Graph != "" && info.Graph != as.Graph:
			return c, conflict("thread %q runs graph %q; assistant %q runs %q", thread, info.Graph, p.body.AssistantID, as.Graph)
		}
	}
	if p.body.Webhook != "" {
		if err := a.checkWebhook(p.body.Webhook); err != nil {
			return c, err
		}
	}
	// Input the graph refuses is refused now, not at every firing.
	if err := a.cfg.Runs.CheckRun(ctx, req); err != nil {
		return c, err
	}
	if makeThread {
		// Made now rather than at the first firing: the cron is the
		// thread's from the start (and goes when it is deleted).
		if _, err := a.cfg.Runs.CreateThread(ctx, thread, as.Graph, nil); err != nil && !errors.Is(err, runs.ErrThreadExists) {
			return c, err
		}
	}
	c.Payload = payload
	c.NextRun = runs.NextRun(c.Schedule, c.EndTime, now)
	return c, nil
}

// planPayload plans a cron's run-create body as a run's.
func planPayload(payload map[string]any) (*runPlan, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, invalid("body", "%v", err)
	}
	var body runCreate
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		return nil, invalid(fieldOf(err), "%s", describeDecodeError(err))
	}
	return plan(payload, body, false)
}

// timeField reads an RFC 3339 time.
func timeField(field string, v any) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, invalid(field, "want an RFC 3339 time, got %s", kindOf(v))
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, invalid(field, "%q is not an RFC 3339 time (as 2026-01-02T15:04:05Z)", clipped(s))
	}
	return t.UTC(), nil
}

func (a *API) createCron(w http.ResponseWriter, r *http.Request) {
	thread := chi.URLParam(r, "thread_id")
	if thread != "" {
		if err := checkThreadID("thread_id", thread); err != nil {
			fail(w, r, a.log, err)
			return
		}
	}
	var raw map[string]any
	if err := decodeBody(r, &raw, false); err != nil {
		fail(w, r, a.log, err)
		return
	}
	c, err := a.cronOf(r.Context(), raw, thread)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	c, err = a.crons.CreateCron(r.Context(), c)
	if err != nil {
		fail(w, r, a.log, cronErr(err))
		return
	}
	writeJSON(w, http.StatusOK, cronToWire(c))
}

// cronFilter is the filter of a cron search or count.
type cronFilter struct {
	AssistantID *string `json:"assistant_id"`
	ThreadID    *string `json:"thread_id"`
	Enabled     *bool   `json:"enabled"`
}

func (a *API) cronQuery(ctx context.Context, f cronFilter) runs.CronQuery {
	var q runs.CronQuery
	if f.AssistantID != nil && *f.AssistantID != "" {
		q.Assistant = *f.AssistantID
		// A graph id selects the crons of its own assistant, as a run
		// made with it would run.
		if as, err := a.resolveAssistant(ctx, q.Assistant); err == nil {
			q.Assistant = as.ID
		}
	}
	if f.ThreadID != nil {
		q.Thread = *f.ThreadID
	}
	q.Enabled = f.Enabled
	return q
}

func (a *API) searchCrons(w http.ResponseWriter, r *http.Request) {
	var body struct {
		cronFilter
		searchPage
	}
	if err := decodeBody(r, &body, true); err != nil {
		fail(w, r, a.log, err)
		return
	}
	q := a.cronQuery(r.Context(), body.cronFilter)
	if err := readPage(body.searchPage, runs.CronSorts, cronFields, &q.Limit, &q.Offset, &q.SortBy, &q.Desc); err != nil {
		fail(w, r, a.log, err)
		return
	}
	if err := a.dropOrphanCrons(r.Context()); err != nil {
		fail(w, r, a.log, err)
		return
	}
	found, err := a.crons.SearchCrons(r.Context(), q)
	if err != nil {
		fail(w, r, a.log, cronErr(err))
		return
	}
	total, err := a.crons.CountCrons(r.Context(), q)
	if err != nil {
		fail(w, r, a.log, cronErr(err))
		return
	}
	paginate(w.Header(), q.Offset, len(found), q.Limit, total)
	writeJSON(w, http.StatusOK, selectedPage(found, body.Select, cronToWire))
}

func (a *API) countCrons(w http.ResponseWriter, r *http.Request) {
	var body cronFilter
	if err := decodeBody(r, &body, true); err != nil {
		fail(w, r, a.log, err)
		return
	}
	if err := a.dropOrphanCrons(r.Context()); err != nil {
		fail(w, r, a.log, err)
		return
	}
	n, err := a.crons.CountCrons(r.Context(), a.cronQuery(r.Context(), body))
	if err != nil {
		fail(w, r, a.log, cronErr(err))
		return
	}
	writeJSON(w, http.StatusOK, n)
}

func (a *API) cronParam(r *http.Request) (string, error) {
	id := chi.URLParam(r, "cron_id")
	if err := checkUUID("cron_id", id); err != nil {
		return "", err
	}
	return strings.ToLower(id), nil
}

// cronPayloadKeys are the run fields an update may change in a cron's
// payload (the SDK's CronsUpdatePayload).
var cronPayloadKeys = []string{"input", "config", "context", "webhook", "interrupt_before", "interrupt_after"}

func (a *API) updateCron(w http.ResponseWriter, r *http.Request) {
	id, err := a.cronParam(r)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	var raw map[string]any
	if err := decodeBody(r, &raw, true); err != nil {
		fail(w, r, a.log, err)
		return
	}
	cur, err := a.crons.GetCron(r.Context(), id)
	if err != nil {
		fail(w, r, a.log, cronErr(err))
		return
	}
	var p runs.CronPatch
	if v, ok := raw["schedule"]; ok && v != nil {
		s, ok := v.(string)
		if !ok {
			fail(w, r, a.log, invalid("schedule", "want a cron schedule string, got %s", kindOf(v)))
			return
		}
		if err := runs.CheckSchedule(s); err != nil {
			fail(w, r, a.log, invalid("schedule", "%s", strings.TrimPrefix(err.Error(), runs.ErrInvalidInput.Error()+": ")))
			return
		}
		p.Schedule = &s
	}
	if v, ok := raw["end_time"]; ok && v != nil {
		end, err := timeField("end_time", v)
		if err != nil {
			fail(w, r, a.log, err)
			return
		}
		p.EndTime = &end
	}
	if v, ok := raw["on_run_completed"]; ok && v != nil {
		s, _ := v.(string)
		if s != "delete" && s != "keep" {
			fail(w, r, a.log, invalid("on_run_completed", "%v: use delete or keep", v))
			return
		}
		p.OnRunCompleted = &s
	}
	if v, ok := raw["enabled"]; ok && v != nil {
		b, ok := v.(bool)
		if !ok {
			fail(w, r, a.log, invalid("enabled", "want a boolean, got %s", kindOf(v)))
			return
		}
		p.Enabled = &b
	}
	if v, ok := raw["metadata"]; ok && v != nil {
		md, ok := v.(map[string]any)
		if !ok {
			fail(w, r, a.log, invalid("metadata", "want an object, got %s", kindOf(v)))
			return
		}
		p.Metadata = md
	}
	payload := map[string]any{}
	for k, v := range cur.Payload {
		payload[k] = v
	}
	changed := false
	for _, k := range cronPayloadKeys {
		if v, ok := raw[k]; ok {
			payload[k], changed = v, true
		}
	}
	if p.Metadata != nil {
		md := map[string]any{}
		for k, v := range cur.Metadata {
			md[k] = v
		}
		for k, v := range p.Metadata {
			md[k] = v
		}
		payload["metadata"], changed = md, true
	}
	if changed {
		if err := a.checkCronPayload(r.Context(), cur, payload); err != nil {
			fail(w, r, a.log, err)
			return
		}
		p.Payload = payload
	}
	c, err := a.crons.UpdateCron(r.Context(), id, p, a.now())
	if err != nil {
		fail(w, r, a.log, cronErr(err))
		return
	}
	writeJSON(w, http.StatusOK, cronToWire(c))
}

// checkCronPayload checks a cron's new payload as its creation did: a
// refused input or webhook is a 4xx now, not a silent refusal at every
// firing.
func (a *API) checkCronPayload(ctx context.Context, cur runs.Cron, payload map[string]any) error {
	plan, err := planPayload(payload)
	if err != nil {
		return err
	}
	as, err := a.resolveAssistant(ctx, cur.Assistant)
	if err != nil {
		return err
	}
	if plan.body.Webhook != "" {
		if err := a.checkWebhook(plan.body.Webhook); err != nil {
			return err
		}
	}
	req := runs.RunRequest{Graph: as.Graph, Thread: cur.Thread, Input: plan.input, Options: plan.options}
	if req.Thread == "" {
		if plan.input == nil {
			return invalid("input", "a stateless cron's runs each start a new thread: give input")
		}
		req.Thread = uuid.NewString()
	}
	return a.cfg.Runs.CheckRun(ctx, req)
}

func (a *API) deleteCron(w http.ResponseWriter, r *http.Request) {
	id, err := a.cronParam(r)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	if err := a.crons.DeleteCron(r.Context(), id); err != nil {
		fail(w, r, a.log, cronErr(err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// dropOrphanCrons deletes the crons of threads and assistants deleted
// since, when the crons are in memory (Postgres deletes them with the
// thread's or the assistant's row).
func (a *API) dropOrphanCrons(ctx context.Context) error {
	mem, ok := a.crons.(*runs.MemoryCrons)
	if !ok {
		return nil
	}
	all, err := mem.SearchCrons(ctx, runs.CronQuery{})
	if err != nil {
		return err
	}
	for _, c := range all {
		gone, err := a.cronOrphaned(ctx, c)
		if err != nil {
			return err
		}
		if gone {
			if err := mem.DeleteCron(ctx, c.ID); err != nil && !errors.Is(err, runs.ErrUnknownCron) {
				return err
			}
		}
	}
	return nil
}

// cronOrphaned says whether a cron's thread or assistant is gone.
func (a *API) cronOrphaned(ctx context.Context, c runs.Cron) (bool, error) {
	if c.Thread != "" {
		_, err := a.cfg.Runs.Thread(ctx, c.Thread)
		if errors.Is(err, runs.ErrUnknownThread) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
	}
	_, err := a.cfg.Assistants.GetAssistant(ctx, c.Assistant)
	if errors.Is(err, runs.ErrUnknownAssistant) {
		return true, nil
	}
	return false, err
}

// runCronTicker fires this process's due crons every CronTick until the
// API closes: the way crons fire without a river queue.
func (a *API) runCronTicker() {
	t := time.NewTicker(CronTick)
	defer t.Stop()
	for {
		select {
		case <-a.done:
			return
		case <-t.C:
		}
		if a.cronTickerOff.Load() {
			continue
		}
		if _, err := a.fireDueCrons(context.Background()); err != nil {
			a.log.Error("api: fire due crons", "error", err)
		}
	}
}

// fireDueCrons takes the crons due now and fires them; it says how many
// it fired.
func (a *API) fireDueCrons(ctx context.Context) (int, error) {
	if err := a.dropOrphanCrons(ctx); err != nil {
		return 0, err
	}
	due, err := a.crons.Due(ctx, a.now())
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, f := range due {
		if err := a.fireCron(ctx, f); err != nil {
			errs = append(errs, err)
		}
	}
	return len(due), errors.Join(errs...)
}

// fireCron starts the run of one firing through the API's own create
// path, once: a firing whose run exists already (it is retried after a
// crash) starts nothing. The firing is found by its run's metadata on a
// thread's cron (the run log keeps it past the run's end, where a run id
// alone would be free again once its queue row went), and by its own
// thread, named after the firing, on a stateless one. An error is a
// server-side failure worth a retry; a run the API refuses (a busy
// thread under reject) is logged and the firing is done. A cron whose
// thread or assistant is gone is deleted.
func (a *API) fireCron(ctx context.Context, f runs.CronFiring) error {
	c := f.Cron
	at := f.At.UTC().Format(time.RFC3339Nano)
	p, err := planPayload(c.Payload)
	if err != nil {
		a.log.Error("api: a cron's run body no longer plans", "cron", c.ID, "error", err)
		return nil
	}
	md := map[string]any{}
	for k, v := range p.body.Metadata {
		md[k] = v
	}
	md[cronIDKey], md[cronFireKey] = c.ID, at
	p.body.Metadata = md
	thread := c.Thread
	if thread == "" {
		// The firing's own thread, the same in every process: it exists
		// once the run was started.
		thread = f.Key()
		if _, err := a.cfg.Runs.Thread(ctx, thread); err == nil {
			// Started before. Retried, the process that started it may
			// have died before it could delete the thread: this one
			// does, once the run (continued by any process) ended.
			if c.OnRunCompleted != "keep" {
				go a.deleteWhenIdle(thread)
			}
			return nil
		} else if !errors.Is(err, runs.ErrUnknownThread) {
			return err
		}
		p.createThread, p.stateless = true, true
		p.body.OnCompletion = c.OnRunCompleted
	} else {
		fired, err := a.firedOn(ctx, thread, c.ID, at)
		if errors.Is(err, runs.ErrUnknownThread) {
			_, err = a.crons.DeleteThreadCrons(ctx, thread)
			return err
		}
		if err != nil || fired {
			return err
		}
	}
	run, err := a.startRun(ctx, thread, p)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.code < 500 {
			if ae.code == http.StatusNotFound {
				// Its thread or assistant went meanwhile: so does it.
				if gone, err := a.cronOrphaned(ctx, c); err != nil || gone {
					if err == nil {
						if err = a.crons.DeleteCron(ctx, c.ID); errors.Is(err, runs.ErrUnknownCron) {
							err = nil
						}
					}
					return err
				}
			}
			a.log.Warn("api: a cron's run was refused", "cron", c.ID, "at", at, "error", err)
			return nil
		}
		if code := handlers.StatusOf(err); code < 500 {
			a.log.Warn("api: a cron's run was refused", "cron", c.ID, "at", at, "error", err)
			return nil
		}
		return fmt.Errorf("cron %s at %s: %w", c.ID, at, err)
	}
	if p.stateless {
		a.stateless.put(run.id, thread)
		go a.finishStateless(thread, run, p)
	}
	return nil
}

// deleteWhenIdle deletes a stateless firing's thread once it has no
// active run, unless the API closes first.
func (a *API) deleteWhenIdle(thread string) {
	ctx, cancel := a.untilClosed()
	defer cancel()
	if _, err := a.cfg.Runs.Wait(ctx, thread); err != nil {
		if !errors.Is(err, runs.ErrUnknownThread) && ctx.Err() == nil {
			a.log.Error("api: wait for a cron's stateless run", "thread", thread, "error", err)
		}
		return
	}
	if err := a.cfg.Runs.DeleteThread(ctx, thread); err != nil && !errors.Is(err, runs.ErrUnknownThread) && ctx.Err() == nil {
		a.log.Error("api: delete a cron's stateless thread", "thread", thread, "error", err)
	}
}

// firedOn says whether the thread has a run of the firing (cron, at):
// in its run log or waiting in its queue.
func (a *API) firedOn(ctx context.Context, thread, cron, at string) (bool, error) {
	is := func(md map[string]any) bool { return md[cronIDKey] == cron && md[cronFireKey] == at }
	pend, err := a.pendingOf(ctx, thread)
	if err != nil {
		return false, err
	}
	for _, q := range pend {
		if q.req.Meta != nil && is(q.req.Meta.Metadata) {
			return true, nil
		}
	}
	if _, err := a.cfg.Runs.Thread(ctx, thread); err != nil {
		return false, err
	}
	recs, err := a.cfg.Runs.ThreadRuns(ctx, thread, 0)
	if err != nil {
		return false, err
	}
	for _, r := range recs {
		if r.Meta != nil && is(r.Meta.Metadata) {
			return true, nil
		}
	}
	return false, nil
}
