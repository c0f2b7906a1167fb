package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// MaxHistory caps one history page.
const MaxHistory = 1000

func (a *API) mountState(r chi.Router) {
	r.Get("/threads/{thread_id}/state", a.getState)
	r.Get("/threads/{thread_id}/state/{checkpoint_id}", a.getState)
	r.Post("/threads/{thread_id}/state/checkpoint", a.getStateAt)
	r.Post("/threads/{thread_id}/state", a.updateState)
	r.Patch("/threads/{thread_id}/state", a.patchState)
	r.Post("/threads/{thread_id}/history", a.historyPost)
	r.Get("/threads/{thread_id}/history", a.historyGet)
}

// threadGraph is the graph a thread runs, or "" before its first run.
func (a *API) threadGraph(ctx context.Context, thread string) (engine.Compiled, error) {
	if err := checkThreadID("thread_id", thread); err != nil {
		return nil, err
	}
	info, err := a.cfg.Runs.Thread(ctx, thread)
	if err != nil {
		return nil, err
	}
	if info.Graph == "" {
		return nil, nil
	}
	return a.cfg.Runs.Graph(info.Graph)
}

// flagParam reads an optional boolean query parameter (boolParam):
// absent is false.
func flagParam(r *http.Request, name string) (bool, error) {
	b, err := boolParam(r.URL.Query().Get(name), name)
	return b != nil && *b, err
}

// getState answers a thread's state: the latest, or at a checkpoint id
// in the path; ?subgraphs=true fills the state of pending subgraph tasks.
func (a *API) getState(w http.ResponseWriter, r *http.Request) {
	thread, cp := chi.URLParam(r, "thread_id"), chi.URLParam(r, "checkpoint_id")
	if cp != "" {
		if err := checkUUID("checkpoint_id", cp); err != nil {
			fail(w, r, a.log, err)
			return
		}
	}
	subgraphs, err := flagParam(r, "subgraphs")
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	a.answerState(w, r, thread, checkpoints.Config{ThreadID: thread, CheckpointID: cp}, subgraphs)
}

// getStateAt answers the state at a checkpoint given as an object (the
// SDK's getState(thread, {checkpoint_id, checkpoint_ns})).
func (a *API) getStateAt(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Checkpoint *checkpointRef `json:"checkpoint"`
		Subgraphs  bool           `json:"subgraphs"`
	}
	if err := decodeBody(r, &body, false); err != nil {
		fail(w, r, a.log, err)
		return
	}
	if body.Checkpoint == nil {
		fail(w, r, a.log, invalid("checkpoint", "required: {checkpoint_id, checkpoint_ns}"))
		return
	}
	thread := chi.URLParam(r, "thread_id")
	a.answerState(w, r, thread, checkpoints.Config{ThreadID: thread, Namespace: body.Checkpoint.CheckpointNS, CheckpointID: body.Checkpoint.CheckpointID}, body.Subgraphs)
}

func (a *API) answerState(w http.ResponseWriter, r *http.Request, thread string, cfg checkpoints.Config, subgraphs bool) {
	g, err := a.threadGraph(r.Context(), thread)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	if g == nil {
		if cfg.CheckpointID != "" {
			fail(w, r, a.log, notFound("thread %q has no checkpoint %q: it has not run yet", thread, cfg.CheckpointID))
			return
		}
		// A thread with no run yet has an empty state.
		writeJSON(w, http.StatusOK, emptyState())
		return
	}
	if cfg.CheckpointID != "" {
		tup, err := g.Pregel().Checkpointer().Get(r.Context(), cfg)
		if err != nil {
			fail(w, r, a.log, err)
			return
		}
		if tup == nil {
			fail(w, r, a.log, notFound("thread %q has no checkpoint %q in namespace %q", thread, cfg.CheckpointID, cfg.Namespace))
			return
		}
	}
	snap, err := g.Pregel().GetStateWith(r.Context(), cfg, engine.StateOptions{Subgraphs: subgraphs})
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	writeJSON(w, http.StatusOK, stateJSON(snap))
}

func emptyState() map[string]any {
	return map[string]any{"values": map[string]any{}, "next": []string{}, "tasks": []any{}, "checkpoint": nil,
		"parent_checkpoint": nil, "metadata": nil, "created_at": nil, "interrupts": []any{}}
}

// stateJSON is a snapshot as the API's ThreadState.
func stateJSON(s *engine.StateSnapshot) map[string]any {
	values := map[string]any{}
	for k, v := range s.Values {
		values[k] = v
	}
	next := s.Next
	if next == nil {
		next = []string{}
	}
	tasks := make([]map[string]any, 0, len(s.Tasks))
	for _, t := range s.Tasks {
		task := map[string]any{"id": t.ID, "name": t.Name, "path": t.Path, "error": nil,
			"interrupts": interruptsJSON(t.Interrupts), "checkpoint": nil, "state": nil, "result": nil}
		if t.Error != "" {
			task["error"] = t.Error
		}
		if t.Result != nil {
			task["result"] = t.Result
		}
		if t.State != nil {
			task["state"] = stateJSON(t.State)
		} else if t.Subgraph != nil {
			task["checkpoint"] = map[string]any{"thread_id": t.Subgraph.ThreadID, "checkpoint_ns": t.Subgraph.Namespace}
		}
		tasks = append(tasks, task)
	}
	var created any
	if !s.CreatedAt.IsZero() {
		created = s.CreatedAt.UTC().Format(time.RFC3339Nano)
	}
	var parent any
	if s.ParentConfig != nil {
		parent = checkpointJSON(*s.ParentConfig)
	}
	return map[string]any{
		"values": values, "next": next, "tasks": tasks,
		"checkpoint": checkpointJSON(s.Config), "parent_checkpoint": parent,
		"metadata": s.Metadata, "created_at": created, "interrupts": interruptsJSON(s.Interrupts),
	}
}

func checkpointJSON(c checkpoints.Config) map[string]any {
	return map[string]any{"thread_id": c.ThreadID, "checkpoint_ns": c.Namespace, "checkpoint_id": c.CheckpointID, "checkpoint_map": nil}
}

// updateState applies values to a checkpoint as a node (or as the
// special __copy__, __input__, __end__) and answers the new checkpoint.
func (a *API) updateState(w http.ResponseWriter, r *http.Request) {
	thread := chi.URLParam(r, "thread_id")
	var body struct {
		Values       any            `json:"values"`
		CheckpointID string         `json:"checkpoint_id"`
		Checkpoint   *checkpointRef `json:"checkpoint"`
		AsNode       string         `json:"as_node"`
	}
	if err := decodeBody(r, &body, false); err != nil {
		fail(w, r, a.log, err)
		return
	}
	var values map[string]any
	switch v := body.Values.(type) {
	case nil:
	case map[string]any:
		values = v
	default:
		fail(w, r, a.log, invalid("values", "want an object or null, got %s", kindOf(v)))
		return
	}
	cp := body.CheckpointID
	if body.Checkpoint != nil {
		if body.Checkpoint.CheckpointNS != "" {
			fail(w, r, a.log, invalid("checkpoint.checkpoint_ns", "state is updated on the thread's graph (namespace \"\"), not %q", body.Checkpoint.CheckpointNS))
			return
		}
		if body.Checkpoint.CheckpointID != "" {
			cp = body.Checkpoint.CheckpointID
		}
	}
	g, err := a.threadGraph(r.Context(), thread)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	if g == nil {
		fail(w, r, a.log, conflict("thread %q has no graph yet: run it once before updating its state", thread))
		return
	}
	id, err := a.cfg.Runs.UpdateState(r.Context(), thread, cp, numbersAsFloats(values), body.AsNode)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"checkpoint": checkpointJSON(checkpoints.Config{ThreadID: thread, CheckpointID: id})})
}

// numbersAsFloats turns the json.Numbers of a decoded body into float64,
// as every other JSON input of the run manager has them.
func numbersAsFloats(v map[string]any) map[string]any {
	if v == nil {
		return nil
	}
	out := make(map[string]any, len(v))
	for k, x := range v {
		out[k] = plainJSON(x)
	}
	return out
}

func plainJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return numbersAsFloats(t)
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = plainJSON(x)
		}
		return out
	case interface{ Float64() (float64, error) }:
		f, err := t.Float64()
		if err != nil {
			return t
		}
		return f
	}
	return v
}

// historyRequest is the body of POST history.
type historyRequest struct {
	Limit      *int           `json:"limit"`
	Before     any            `json:"before"`
	Metadata   map[string]any `json:"metadata"`
	Checkpoint *checkpointRef `json:"checkpoint"`
}

func (a *API) historyPost(w http.ResponseWriter, r *http.Request) {
	var body historyRequest
	if err := decodeBody(r, &body, true); err != nil {
		fail(w, r, a.log, err)
		return
	}
	limit := 10
	if body.Limit != nil {
		limit = *body.Limit
	}
	before, err := beforeID(body.Before)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	ns := ""
	if body.Checkpoint != nil {
		ns = body.Checkpoint.CheckpointNS
	}
	a.answerHistory(w, r, chi.URLParam(r, "thread_id"), ns, limit, before, numbersAsFloats(body.Metadata))
}

func (a *API) historyGet(w http.ResponseWriter, r *http.Request) {
	limit, err := intParam(r.URL.Query().Get("limit"), "limit", 10, 1, MaxHistory)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	a.answerHistory(w, r, chi.URLParam(r, "thread_id"), "", limit, r.URL.Query().Get("before"), nil)
}

// beforeID reads history's "before" in each shape clients send: a
// checkpoint id, {checkpoint_id, checkpoint_ns}, or {configurable:
// {checkpoint_id}}.
func beforeID(v any) (string, error) {
	switch t := v.(type) {
	case nil:
		return "", nil
	case string:
		return t, nil
	case map[string]any:
		if c, ok := t["configurable"].(map[string]any); ok {
			t = c
		}
		if id, ok := t["checkpoint_id"].(string); ok {
			return id, nil
		}
		return "", invalid("before", "name a checkpoint: {checkpoint_id}")
	}
	return "", invalid("before", "want a checkpoint id or {checkpoint_id}, got %s", kindOf(v))
}

// answerHistory lists a thread's checkpoints newest first, each as a
// ThreadState with its parent checkpoint.
func (a *API) answerHistory(w http.ResponseWriter, r *http.Request, thread, ns string, limit int, before string, filter map[string]any) {
	if limit < 1 || limit > MaxHistory {
		fail(w, r, a.log, invalid("limit", "%d: use 1 to %d", limit, MaxHistory))
		return
	}
	g, err := a.threadGraph(r.Context(), thread)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	if g == nil {
		writeJSON(w, http.StatusOK, []any{})
		return
	}
	snaps, err := g.Pregel().GetStateHistory(r.Context(), checkpoints.Config{ThreadID: thread, Namespace: ns},
		engine.HistoryOptions{Limit: limit, Before: before, Filter: filter})
	if err != nil {
		if errors.Is(err, checkpoints.ErrInvalidFilter) {
			err = invalid("metadata", "%v", err)
		}
		fail(w, r, a.log, err)
		return
	}
	out := make([]map[string]any, 0, len(snaps))
	for _, s := range snaps {
		out = append(out, stateJSON(s))
	}
	writeJSON(w, http.StatusOK, out)
}

// patchState merges metadata into the thread's latest checkpoint's.
func (a *API) patchState(w http.ResponseWriter, r *http.Request) {
	thread := chi.URLParam(r, "thread_id")
	if err := checkThreadID("thread_id", thread); err != nil {
		fail(w, r, a.log, err)
		return
	}
	var body struct {
		Metadata map[string]any `json:"metadata"`
	}
	if err := decodeBody(r, &body, false); err != nil {
		fail(w, r, a.log, err)
		return
	}
	if len(body.Metadata) == 0 {
		fail(w, r, a.log, invalid("metadata", "required: the keys to merge into the latest checkpoint's metadata"))
		return
	}
	if err := a.cfg.Runs.PatchCheckpointMetadata(r.Context(), thread, numbersAsFloats(body.Metadata)); err != nil {
		fail(w, r, a.log, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}
