package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
)

// MaxThreadPage caps a thread search's limit.
const MaxThreadPage = 1000

func (a *API) mountThreads(r chi.Router) {
	r.Post("/threads", a.createThread)
	r.Post("/threads/search", a.searchThreads)
	r.Post("/threads/count", a.countThreads)
	r.Get("/threads/{thread_id}", a.getThread)
	r.Patch("/threads/{thread_id}", a.patchThread)
	r.Delete("/threads/{thread_id}", a.deleteThread)
	r.Post("/threads/{thread_id}/copy", a.copyThread)
	a.mountState(r)
}

// threadJSON is a thread as the API's Thread object: its record, and
// its head's values and pending interrupts (by task id). A thread with
// an active run, or runs queued (waited says which threads have some;
// see waitedFor), is "busy".
func (a *API) threadJSON(ctx context.Context, t runs.Thread, waited map[string]bool) (map[string]any, error) {
	status := string(t.Status)
	if t.Status == runs.StatusRunning || waited[t.ID] {
		status = "busy"
	}
	values := map[string]any{}
	interrupts := map[string]any{}
	if t.Graph != "" {
		g, err := a.cfg.Runs.Graph(t.Graph)
		if err != nil {
			return nil, err
		}
		snap, err := g.Pregel().GetState(ctx, checkpoints.Config{ThreadID: t.ID})
		if err != nil {
			return nil, err
		}
		for k, v := range snap.Values {
			values[k] = v
		}
		for _, task := range snap.Tasks {
			if len(task.Interrupts) > 0 {
				interrupts[task.ID] = interruptsJSON(task.Interrupts)
			}
		}
	}
	metadata := map[string]any{}
	for k, v := range t.Metadata {
		metadata[k] = v
	}
	var errText any
	if t.Error != "" {
		errText = t.Error
	}
	var stateUpdated any
	if !t.StateUpdated.IsZero() {
		stateUpdated = stamp(t.StateUpdated)
	}
	return map[string]any{
		"thread_id": t.ID, "created_at": stamp(t.Created), "updated_at": stamp(t.Updated),
		"state_updated_at": stateUpdated, "metadata": metadata, "status": status,
		"values": values, "interrupts": interrupts, "config": map[string]any{}, "error": errText,
	}, nil
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

type threadCreate struct {
	ThreadID   string            `json:"thread_id"`
	Metadata   map[string]any    `json:"metadata"`
	IfExists   string            `json:"if_exists"`
	Supersteps []threadSuperstep `json:"supersteps"`
	TTL        any               `json:"ttl"`
}

type threadSuperstep struct {
	Updates []struct {
		Values  any            `json:"values"`
		Command map[string]any `json:"command"`
		AsNode  string         `json:"as_node"`
	} `json:"updates"`
}

// createThread makes a thread, optionally prefilled by supersteps of
// state updates (which need metadata.graph_id to know the graph).
func (a *API) createThread(w http.ResponseWriter, r *http.Request) {
	var body threadCreate
	if err := decodeBody(r, &body, true); err != nil {
		fail(w, r, a.log, err)
		return
	}
	if body.ThreadID != "" {
		if err := checkThreadID("thread_id", body.ThreadID); err != nil {
			fail(w, r, a.log, err)
			return
		}
	}
	switch body.IfExists {
	case "", "raise", "do_nothing":
	default:
		fail(w, r, a.log, invalid("if_exists", "%q: use raise or do_nothing", body.IfExists))
		return
	}
	if body.TTL != nil {
		fail(w, r, a.log, invalid("ttl", "thread TTLs are not supported by this server; delete threads with DELETE /threads/{thread_id}"))
		return
	}
	metadata := numbersAsFloats(body.Metadata)
	graph, _ := metadata["graph_id"].(string)
	if graph != "" {
		if _, err := a.cfg.Runs.Graph(graph); err != nil {
			if len(body.Supersteps) > 0 {
				fail(w, r, a.log, invalid("metadata.graph_id", "%q is not a registered graph; supersteps need one", graph))
				return
			}
			graph = "" // a label only
		}
	}
	supersteps, err := parseSupersteps(body.Supersteps)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	if len(supersteps) > 0 && graph == "" {
		fail(w, r, a.log, invalid("supersteps", "need metadata.graph_id naming the graph whose state they update"))
		return
	}
	t, err := a.cfg.Runs.CreateThread(r.Context(), body.ThreadID, graph, metadata)
	if errors.Is(err, runs.ErrThreadExists) {
		if body.IfExists == "do_nothing" {
			a.answerThread(w, r, body.ThreadID)
			return
		}
		fail(w, r, a.log, conflict("thread %q exists; pass if_exists: \"do_nothing\" to get it instead", body.ThreadID))
		return
	}
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	if len(supersteps) > 0 {
		g, _ := a.cfg.Runs.Graph(graph)
		if _, err := g.Pregel().BulkUpdateState(r.Context(), checkpoints.Config{ThreadID: t.ID}, supersteps); err != nil {
			// Nothing of a refused prefill stays: the thread goes too.
			_ = a.cfg.Runs.DeleteThread(context.WithoutCancel(r.Context()), t.ID)
			if errors.Is(err, engine.ErrInvalidUpdate) || errors.Is(err, engine.ErrInvalidGraph) {
				err = invalid("supersteps", "%v", err)
			}
			fail(w, r, a.log, err)
			return
		}
	}
	a.answerThread(w, r, t.ID)
}

func parseSupersteps(in []threadSuperstep) ([][]engine.StateUpdate, error) {
	var out [][]engine.StateUpdate
	for i, s := range in {
		var step []engine.StateUpdate
		for j, u := range s.Updates {
			field := "supersteps[" + strconv.Itoa(i) + "].updates[" + strconv.Itoa(j) + "]"
			var values any
			switch v := plainJSON(u.Values).(type) {
			case nil:
			case map[string]any:
				values = engine.Update(v)
			default:
				return nil, invalid(field+".values", "want an object or null, got %s", kindOf(v))
			}
			if u.Command != nil {
				c, err := parseCommand(plainJSON(u.Command))
				if err != nil {
					return nil, err
				}
				if values != nil {
					return nil, invalid(field, "give values or command, not both")
				}
				values = c
			}
			step = append(step, engine.StateUpdate{Values: values, AsNode: u.AsNode})
		}
		out = append(out, step)
	}
	return out, nil
}

func (a *API) answerThread(w http.ResponseWriter, r *http.Request, id string) {
	t, err := a.cfg.Runs.Thread(r.Context(), id)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	waited, err := a.waitedFor(r.Context(), []runs.Thread{t})
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	out, err := a.threadJSON(r.Context(), t, waited)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *API) getThread(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "thread_id")
	if err := checkThreadID("thread_id", id); err != nil {
		fail(w, r, a.log, err)
		return
	}
	a.answerThread(w, r, id)
}

func (a *API) patchThread(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "thread_id")
	if err := checkThreadID("thread_id", id); err != nil {
		fail(w, r, a.log, err)
		return
	}
	var body struct {
		Metadata map[string]any `json:"metadata"`
		TTL      any            `json:"ttl"`
	}
	if err := decodeBody(r, &body, false); err != nil {
		fail(w, r, a.log, err)
		return
	}
	if body.TTL != nil {
		fail(w, r, a.log, invalid("ttl", "thread TTLs are not supported by this server"))
		return
	}
	if _, err := a.cfg.Runs.PatchThread(r.Context(), id, numbersAsFloats(body.Metadata)); err != nil {
		fail(w, r, a.log, err)
		return
	}
	a.answerThread(w, r, id)
}

func (a *API) deleteThread(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "thread_id")
	if err := checkThreadID("thread_id", id); err != nil {
		fail(w, r, a.log, err)
		return
	}
	// Its queued runs go first: one starting later would bring it back
	// (a durable run manager's DeleteThread drops them itself).
	if !a.durable() {
		if err := a.cancelAllPending(r.Context(), id); err != nil {
			fail(w, r, a.log, err)
			return
		}
	}
	if err := a.cfg.Runs.DeleteThread(r.Context(), id); err != nil {
		fail(w, r, a.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) copyThread(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "thread_id")
	if err := checkThreadID("thread_id", id); err != nil {
		fail(w, r, a.log, err)
		return
	}
	t, err := a.cfg.Runs.CopyThread(r.Context(), id)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	a.answerThread(w, r, t.ID)
}

type threadSearch struct {
	Metadata  map[string]any `json:"metadata"`
	IDs       []string       `json:"ids"`
	Values    map[string]any `json:"values"`
	Status    string         `json:"status"`
	Limit     *int           `json:"limit"`
	Offset    int            `json:"offset"`
	SortBy    string         `json:"sort_by"`
	SortOrder string         `json:"sort_order"`
	Select    []string       `json:"select"`
}

// filter validates a search (or count) body into a registry filter.
func (s threadSearch) filter() (runs.ThreadFilter, error) {
	f := runs.ThreadFilter{Metadata: numbersAsFloats(s.Metadata), IDs: s.IDs, Offset: s.Offset, SortBy: s.SortBy, SortOrder: s.SortOrder}
	if f.SortBy == "" {
		f.SortBy = "created_at"
	}
	for i, id := range s.IDs {
		if err := checkThreadID("ids["+strconv.Itoa(i)+"]", id); err != nil {
			return f, err
		}
	}
	switch s.Status {
	case "":
	case "busy":
		f.Status = runs.StatusRunning
	case "idle", "interrupted", "error":
		f.Status = runs.Status(s.Status)
	default:
		return f, invalid("status", "%q: use idle, busy, interrupted or error", s.Status)
	}
	if !slices.Contains(runs.ThreadSorts, f.SortBy) {
		return f, invalid("sort_by", "%q: use thread_id, status, created_at, updated_at or state_updated_at", s.SortBy)
	}
	switch s.SortOrder {
	case "", "asc", "desc":
	default:
		return f, invalid("sort_order", "%q: use asc or desc", s.SortOrder)
	}
	if s.Offset < 0 {
		return f, invalid("offset", "%d: use 0 or more", s.Offset)
	}
	return f, nil
}

// searchThreads lists threads by metadata, ids, status and values, newest
// created first unless sorted otherwise, with pagination headers.
func (a *API) searchThreads(w http.ResponseWriter, r *http.Request) {
	var body threadSearch
	if err := decodeBody(r, &body, true); err != nil {
		fail(w, r, a.log, err)
		return
	}
	limit := 10
	if body.Limit != nil {
		limit = *body.Limit
	}
	if limit < 1 || limit > MaxThreadPage {
		fail(w, r, a.log, invalid("limit", "%d: use 1 to %d", limit, MaxThreadPage))
		return
	}
	f, err := body.filter()
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	ctx := r.Context()
	want := numbersAsFloats(body.Values)
	var out []map[string]any
	total := 0
	if len(want) == 0 {
		f.Limit = limit
		ts, err := a.cfg.Runs.ListThreads(ctx, f)
		if err != nil {
			fail(w, r, a.log, err)
			return
		}
		if total, err = a.cfg.Runs.CountThreads(ctx, f); err != nil {
			fail(w, r, a.log, err)
			return
		}
		waited, err := a.waitedFor(ctx, ts)
		if err != nil {
			fail(w, r, a.log, err)
			return
		}
		for _, t := range ts {
			j, err := a.threadJSON(ctx, t, waited)
			if err != nil {
				fail(w, r, a.log, err)
				return
			}
			out = append(out, j)
		}
	} else {
		// Values live in checkpoints, not in the registry: the matching
		// threads are read and their head values compared.
		offset := f.Offset
		f.Offset, f.Limit = 0, 0
		ts, err := a.cfg.Runs.ListThreads(ctx, f)
		if err != nil {
			fail(w, r, a.log, err)
			return
		}
		waited, err := a.waitedFor(ctx, ts)
		if err != nil {
			fail(w, r, a.log, err)
			return
		}
		for _, t := range ts {
			j, err := a.threadJSON(ctx, t, waited)
			if err != nil {
				fail(w, r, a.log, err)
				return
			}
			if !checkpoints.ContainsJSON(plainValue(j["values"]), want) {
				continue
			}
			if total >= offset && len(out) < limit {
				out = append(out, j)
			}
			total++
		}
	}
	if out == nil {
		out = []map[string]any{}
	}
	if len(body.Select) > 0 {
		for i, j := range out {
			kept := map[string]any{}
			for _, k := range body.Select {
				if v, ok := j[k]; ok {
					kept[k] = v
				}
			}
			out[i] = kept
		}
	}
	paginate(w.Header(), body.Offset, len(out), limit, total)
	writeJSON(w, http.StatusOK, out)
}

// plainValue turns a Go state value into the JSON shape a filter has
// (maps, lists, float64), through a JSON round trip when it is typed.
func plainValue(v any) any {
	switch v.(type) {
	case nil, string, bool, float64:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

func (a *API) countThreads(w http.ResponseWriter, r *http.Request) {
	var body threadSearch
	if err := decodeBody(r, &body, true); err != nil {
		fail(w, r, a.log, err)
		return
	}
	f, err := body.filter()
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	if len(body.Values) > 0 {
		fail(w, r, a.log, invalid("values", "count by values is not supported; search with values and read X-Pagination-Total"))
		return
	}
	n, err := a.cfg.Runs.CountThreads(r.Context(), f)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	writeJSON(w, http.StatusOK, n)
}
