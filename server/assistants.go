package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
)

// systemNamespace is the UUID namespace of the assistant every graph gets
// (uuid5(graph_id, this)), as the LangGraph servers derive it, so an id a
// client remembers from one of them names the same graph here.
var systemNamespace = uuid.MustParse("6ba7b821-9dad-11d1-80b4-00c04fd430c8")

// systemAssistantID is the id of graph's own assistant.
func systemAssistantID(graph string) string {
	return uuid.NewSHA1(systemNamespace, []byte(graph)).String()
}

// Defaults of the assistants' pages.
const (
	defaultAssistantPage = 10
	// untitled names an assistant created without a name, as upstream.
	untitled = "Untitled"
)

func (a *API) mountAssistants(r chi.Router) {
	r.Post("/assistants", a.createAssistant)
	r.Post("/assistants/search", a.searchAssistants)
	r.Post("/assistants/count", a.countAssistants)
	r.Get("/assistants/{id}", a.getAssistant)
	r.Patch("/assistants/{id}", a.patchAssistant)
	r.Delete("/assistants/{id}", a.deleteAssistant)
	r.Get("/assistants/{id}/graph", a.assistantGraph)
	r.Get("/assistants/{id}/schemas", a.assistantSchemas)
	r.Get("/assistants/{id}/subgraphs", a.assistantSubgraphs)
	r.Get("/assistants/{id}/subgraphs/{namespace}", a.assistantSubgraphs)
	r.Post("/assistants/{id}/versions", a.assistantVersions)
	r.Post("/assistants/{id}/latest", a.setLatestAssistant)
}

// ensureSystemAssistants stores one assistant per registered graph, unless
// it is there already: searches and pages then list them like any other,
// and a client's changes to them persist with the store.
func (a *API) ensureSystemAssistants(ctx context.Context) error {
	now := time.Now()
	for _, g := range a.cfg.Runs.GraphNames() {
		_, err := a.cfg.Assistants.CreateAssistant(ctx, runs.Assistant{
			ID: systemAssistantID(g), Graph: g, Name: g,
			Config: map[string]any{}, Context: map[string]any{},
			Metadata: map[string]any{"created_by": "system"},
			Created:  now, Updated: now,
		}, runs.IfExistsDoNothing)
		if err != nil {
			return fmt.Errorf("server: the assistant of graph %q: %w", g, err)
		}
	}
	return nil
}

// resolveAssistant finds the assistant an id names: an assistant id (a
// UUID in any of its spellings) or a registered graph's id, which names
// that graph's own assistant. Unknown ones are a 404 error.
func (a *API) resolveAssistant(ctx context.Context, idOrGraph string) (runs.Assistant, error) {
	id := idOrGraph
	if u, err := uuid.Parse(idOrGraph); err == nil {
		id = u.String()
	} else if slices.Contains(a.cfg.Runs.GraphNames(), idOrGraph) {
		id = systemAssistantID(idOrGraph)
	} else {
		return runs.Assistant{}, notFound("assistant %q not found: it is neither an assistant id (a UUID) nor a registered graph (%s)", clipped(idOrGraph), strings.Join(a.cfg.Runs.GraphNames(), ", "))
	}
	as, err := a.cfg.Assistants.GetAssistant(ctx, id)
	if errors.Is(err, runs.ErrUnknownAssistant) {
		return runs.Assistant{}, notFound("assistant %q not found", clipped(idOrGraph))
	}
	if err != nil {
		return runs.Assistant{}, assistantErr(err)
	}
	return as, nil
}

// graphOf is the compiled graph an assistant runs.
func (a *API) graphOf(as runs.Assistant) (engine.Compiled, error) {
	g, err := a.cfg.Runs.Graph(as.Graph)
	if err != nil {
		return nil, notFound("assistant %s runs graph %q, which is not registered here", as.ID, as.Graph)
	}
	return g, nil
}

// assistantErr maps a store's errors to the API's statuses.
func assistantErr(err error) error {
	switch {
	case errors.Is(err, runs.ErrUnknownAssistant):
		return notFound("%v", err)
	case errors.Is(err, runs.ErrAssistantExists):
		return conflict("%v", err)
	case errors.Is(err, runs.ErrInvalidInput):
		return invalid("", "%s", strings.TrimPrefix(err.Error(), runs.ErrInvalidInput.Error()+": "))
	}
	return err
}

// clipped shortens a value echoed in an error.
func clipped(s string) string {
	if len(s) <= 64 {
		return s
	}
	return strings.ToValidUTF8(s[:64], "") + "…"
}

// assistantWire is an Assistant as the API sends it.
type assistantWire struct {
	AssistantID string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	Version     int            `json:"version"`
	Name        string         `json:"name"`
	Description *string        `json:"description"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
}

func toWire(as runs.Assistant) assistantWire {
	return assistantWire{AssistantID: as.ID, GraphID: as.Graph, Config: as.Config, Context: as.Context, Metadata: as.Metadata,
		Version: as.Version, Name: as.Name, Description: as.Description, CreatedAt: as.Created, UpdatedAt: as.Updated}
}

// selected keeps the fields a search's select names.
func (w assistantWire) selected(fields []string) map[string]any {
	all := map[string]any{"assistant_id": w.AssistantID, "graph_id": w.GraphID, "config": w.Config, "context": w.Context,
		"metadata": w.Metadata, "version": w.Version, "name": w.Name, "description": w.Description,
		"created_at": w.CreatedAt, "updated_at": w.UpdatedAt}
	out := make(map[string]any, len(fields))
	for _, f := range fields {
		out[f] = all[f]
	}
	return out
}

// assistantFields are what a search may select.
var assistantFields = []string{"assistant_id", "graph_id", "config", "context", "metadata", "version", "name", "description", "created_at", "updated_at"}

// versionWire is one version of an assistant, as the API sends it.
type versionWire struct {
	AssistantID string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	Version     int            `json:"version"`
	Name        string         `json:"name"`
	Description *string        `json:"description"`
	CreatedAt   time.Time      `json:"created_at"`
}

// canonicalID reads an assistant id given in a body: a UUID in any
// spelling.
func canonicalID(field, id string) (string, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return "", invalid(field, "%q is not a UUID", clipped(id))
	}
	return u.String(), nil
}

// checkGraph refuses a graph that is not registered.
func (a *API) checkGraph(g string) error {
	if !slices.Contains(a.cfg.Runs.GraphNames(), g) {
		return notFound("graph %q not found; registered graphs: %s", clipped(g), strings.Join(a.cfg.Runs.GraphNames(), ", "))
	}
	return nil
}

func (a *API) createAssistant(w http.ResponseWriter, r *http.Request) {
	var body struct {
		AssistantID string         `json:"assistant_id"`
		GraphID     *string        `json:"graph_id"`
		Config      map[string]any `json:"config"`
		Context     map[string]any `json:"context"`
		Metadata    map[string]any `json:"metadata"`
		IfExists    string         `json:"if_exists"`
		Name        *string        `json:"name"`
		Description *string        `json:"description"`
	}
	if err := decodeBody(r, &body, false); err != nil {
		fail(w, r, a.log, err)
		return
	}
	if body.GraphID == nil || *body.GraphID == "" {
		fail(w, r, a.log, invalid("graph_id", "required: one of %s", strings.Join(a.cfg.Runs.GraphNames(), ", ")))
		return
	}
	if err := runs.CheckIfExists(runs.IfExists(body.IfExists)); err != nil {
		fail(w, r, a.log, invalid("if_exists", "%q: use raise or do_nothing", clipped(body.IfExists)))
		return
	}
	id := uuid.NewString()
	if body.AssistantID != "" {
		var err error
		if id, err = canonicalID("assistant_id", body.AssistantID); err != nil {
			fail(w, r, a.log, err)
			return
		}
	}
	if err := a.checkGraph(*body.GraphID); err != nil {
		fail(w, r, a.log, err)
		return
	}
	name := untitled
	if body.Name != nil && *body.Name != "" {
		name = *body.Name
	}
	now := time.Now()
	as, err := a.cfg.Assistants.CreateAssistant(r.Context(), runs.Assistant{
		ID: id, Graph: *body.GraphID, Name: name, Description: body.Description,
		Config: body.Config, Context: body.Context, Metadata: body.Metadata, Created: now, Updated: now,
	}, runs.IfExists(body.IfExists))
	if err != nil {
		fail(w, r, a.log, assistantErr(err))
		return
	}
	writeJSON(w, http.StatusOK, toWire(as))
}

// assistantFilter is the body of search and count.
type assistantFilter struct {
	GraphID  *string        `json:"graph_id"`
	Name     *string        `json:"name"`
	Metadata map[string]any `json:"metadata"`
}

func (f assistantFilter) query() runs.AssistantQuery {
	var q runs.AssistantQuery
	if f.GraphID != nil {
		q.Graph = *f.GraphID
	}
	if f.Name != nil {
		q.Name = *f.Name
	}
	q.Metadata = f.Metadata
	return q
}

// pageOf checks a body's limit and offset, limit defaulting to 10.
func pageOf(limit, offset *int) (int, int, error) {
	l, o := defaultAssistantPage, 0
	if limit != nil {
		l = *limit
	}
	if offset != nil {
		o = *offset
	}
	if l < 1 || l > runs.MaxAssistantPage {
		return 0, 0, invalid("limit", "%d: use 1 to %d", l, runs.MaxAssistantPage)
	}
	if o < 0 {
		return 0, 0, invalid("offset", "%d: use 0 or more", o)
	}
	return l, o, nil
}

func (a *API) searchAssistants(w http.ResponseWriter, r *http.Request) {
	var body struct {
		assistantFilter
		searchPage
	}
	if err := decodeBody(r, &body, true); err != nil {
		fail(w, r, a.log, err)
		return
	}
	q := body.query()
	// Newest first unless asked otherwise, as the LangGraph servers list.
	q.Desc = true
	if err := readPage(body.searchPage, runs.AssistantSorts, assistantFields, &q.Limit, &q.Offset, &q.SortBy, &q.Desc); err != nil {
		fail(w, r, a.log, err)
		return
	}
	found, total, err := a.cfg.Assistants.SearchAssistants(r.Context(), q)
	if err != nil {
		fail(w, r, a.log, assistantErr(err))
		return
	}
	paginate(w.Header(), q.Offset, len(found), q.Limit, total)
	writeJSON(w, http.StatusOK, selectedPage(found, body.Select, toWire))
}

// searchPage is a search body's page, order and fields.
type searchPage struct {
	Limit     *int     `json:"limit"`
	Offset    *int     `json:"offset"`
	SortBy    *string  `json:"sort_by"`
	SortOrder *string  `json:"sort_order"`
	Select    []string `json:"select"`
}

// readPage checks p and reads it into a search query: its limit and
// offset (pageOf), its sort column (one of sorts) and order when given,
// and the fields it selects (each one of fields).
func readPage[S ~string](p searchPage, sorts []S, fields []string, limit, offset *int, sort *S, desc *bool) error {
	var err error
	if *limit, *offset, err = pageOf(p.Limit, p.Offset); err != nil {
		return err
	}
	if p.SortBy != nil {
		if !slices.Contains(sorts, S(*p.SortBy)) {
			names := make([]string, len(sorts))
			for i, s := range sorts {
				names[i] = string(s)
			}
			return invalid("sort_by", "%q: use one of %s", clipped(*p.SortBy), strings.Join(names, ", "))
		}
		*sort = S(*p.SortBy)
	}
	if p.SortOrder != nil {
		switch *p.SortOrder {
		case "asc":
			*desc = false
		case "desc":
			*desc = true
		default:
			return invalid("sort_order", "%q: use asc or desc", clipped(*p.SortOrder))
		}
	}
	for _, f := range p.Select {
		if !slices.Contains(fields, f) {
			return invalid("select", "unknown field %q: use %s", clipped(f), strings.Join(fields, ", "))
		}
	}
	return nil
}

// selectedPage is a search's page: each item as the API sends it, or
// only the fields sel names.
func selectedPage[T any, W interface{ selected([]string) map[string]any }](found []T, sel []string, wire func(T) W) []any {
	out := make([]any, 0, len(found))
	for _, x := range found {
		if len(sel) > 0 {
			out = append(out, wire(x).selected(sel))
		} else {
			out = append(out, wire(x))
		}
	}
	return out
}

// paginate sets a search's pagination headers: the total, and the next
// page's offset only when this page (n items from offset) is full and
// more remain.
func paginate(h http.Header, offset, n, limit, total int) {
	h.Set("X-Pagination-Total", strconv.Itoa(total))
	if next := offset + n; n == limit && next < total {
		h.Set("X-Pagination-Next", strconv.Itoa(next))
	}
}

func (a *API) countAssistants(w http.ResponseWriter, r *http.Request) {
	var body assistantFilter
	if err := decodeBody(r, &body, true); err != nil {
		fail(w, r, a.log, err)
		return
	}
	n, err := a.cfg.Assistants.CountAssistants(r.Context(), body.query())
	if err != nil {
		fail(w, r, a.log, assistantErr(err))
		return
	}
	writeJSON(w, http.StatusOK, n)
}

func (a *API) getAssistant(w http.ResponseWriter, r *http.Request) {
	as, err := a.resolveAssistant(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	writeJSON(w, http.StatusOK, toWire(as))
}

func (a *API) patchAssistant(w http.ResponseWriter, r *http.Request) {
	var body struct {
		GraphID     *string        `json:"graph_id"`
		Config      map[string]any `json:"config"`
		Context     map[string]any `json:"context"`
		Metadata    map[string]any `json:"metadata"`
		Name        *string        `json:"name"`
		Description *string        `json:"description"`
	}
	if err := decodeBody(r, &body, true); err != nil {
		fail(w, r, a.log, err)
		return
	}
	as, err := a.resolveAssistant(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	if body.GraphID != nil {
		if err := a.checkGraph(*body.GraphID); err != nil {
			fail(w, r, a.log, err)
			return
		}
	}
	if body.Name != nil && *body.Name == "" {
		fail(w, r, a.log, invalid("name", "empty; give a name or leave it out"))
		return
	}
	as, err = a.cfg.Assistants.PatchAssistant(r.Context(), as.ID, runs.AssistantPatch{
		Graph: body.GraphID, Name: body.Name, Description: body.Description,
		Config: body.Config, Context: body.Context, Metadata: body.Metadata,
	}, time.Now())
	if err != nil {
		fail(w, r, a.log, assistantErr(err))
		return
	}
	writeJSON(w, http.StatusOK, toWire(as))
}

func (a *API) deleteAssistant(w http.ResponseWriter, r *http.Request) {
	switch v := r.URL.Query().Get("delete_threads"); v {
	case "", "false", "0":
	case "true", "1":
		fail(w, r, a.log, invalid("delete_threads", "true is not supported: an assistant's threads are kept; delete them with DELETE /threads/{thread_id}"))
		return
	default:
		fail(w, r, a.log, invalid("delete_threads", "%q: use true or false", clipped(v)))
		return
	}
	as, err := a.resolveAssistant(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	if err := a.cfg.Assistants.DeleteAssistant(r.Context(), as.ID); err != nil {
		fail(w, r, a.log, assistantErr(err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) assistantVersions(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Metadata map[string]any `json:"metadata"`
		Limit    *int           `json:"limit"`
		Offset   *int           `json:"offset"`
	}
	if err := decodeBody(r, &body, true); err != nil {
		fail(w, r, a.log, err)
		return
	}
	limit, offset, err := pageOf(body.Limit, body.Offset)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	as, err := a.resolveAssistant(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	vs, err := a.cfg.Assistants.AssistantVersions(r.Context(), as.ID, runs.VersionQuery{Metadata: body.Metadata, Limit: limit, Offset: offset})
	if err != nil {
		fail(w, r, a.log, assistantErr(err))
		return
	}
	out := make([]versionWire, 0, len(vs))
	for _, v := range vs {
		out = append(out, versionWire{AssistantID: v.ID, GraphID: v.Graph, Config: v.Config, Context: v.Context, Metadata: v.Metadata,
			Version: v.Version, Name: v.Name, Description: v.Description, CreatedAt: v.Updated})
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *API) setLatestAssistant(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Version *int `json:"version"`
	}
	if err := decodeBody(r, &body, false); err != nil {
		fail(w, r, a.log, err)
		return
	}
	if body.Version == nil {
		fail(w, r, a.log, invalid("version", "required: the version to make current"))
		return
	}
	as, err := a.resolveAssistant(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	as, err = a.cfg.Assistants.SetLatestVersion(r.Context(), as.ID, *body.Version, time.Now())
	if errors.Is(err, runs.ErrUnknownAssistant) {
		fail(w, r, a.log, notFound("assistant %s has no version %d", as.ID, *body.Version))
		return
	}
	if err != nil {
		fail(w, r, a.log, assistantErr(err))
		return
	}
	writeJSON(w, http.StatusOK, toWire(as))
}

// assistantGraphOf resolves the path's assistant and its compiled graph.
func (a *API) assistantGraphOf(r *http.Request) (runs.Assistant, engine.Compiled, error) {
	as, err := a.resolveAssistant(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return as, nil, err
	}
	g, err := a.graphOf(as)
	return as, g, err
}

func (a *API) assistantGraph(w http.ResponseWriter, r *http.Request) {
	depth, err := parseXray(r.URL.Query().Get("xray"))
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	_, g, err := a.assistantGraphOf(r)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	writeJSON(w, http.StatusOK, drawGraph(g, depth))
}

// parseXray reads ?xray: a boolean (true: every level) or a depth.
func parseXray(v string) (int, error) {
	switch v {
	case "", "false":
		return 0, nil
	case "true":
		return -1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, invalid("xray", "%q: use true, false or a depth (0 or more)", clipped(v))
	}
	return n, nil
}

func (a *API) assistantSchemas(w http.ResponseWriter, r *http.Request) {
	as, g, err := a.assistantGraphOf(r)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	s := graphSchemas(g)
	s["graph_id"] = as.Graph
	writeJSON(w, http.StatusOK, s)
}

func (a *API) assistantSubgraphs(w http.ResponseWriter, r *http.Request) {
	recurse := false
	switch v := r.URL.Query().Get("recurse"); v {
	case "", "false", "0":
	case "true", "1":
		recurse = true
	default:
		fail(w, r, a.log, invalid("recurse", "%q: use true or false", clipped(v)))
		return
	}
	ns := chi.URLParam(r, "namespace")
	if ns != "" {
		// The router leaves an escaped segment escaped ("a%7Cb").
		u, err := url.PathUnescape(ns)
		if err != nil {
			fail(w, r, a.log, invalid("namespace", "%q is not a valid path segment", clipped(ns)))
			return
		}
		ns = u
	}
	_, g, err := a.assistantGraphOf(r)
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	writeJSON(w, http.StatusOK, subgraphSchemas(g.Topology(), ns, recurse))
}
