package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/textcut"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/web"
)

// Time-travel limits.
const (
	// ValuePreviewBytes caps a state key's JSON on a checkpoint page; the
	// rest is fetched on demand, so a 5 MB state costs the browser a few
	// KB per key until someone asks for more. The thread page's values
	// panel and its live diffs use the same cap.
	ValuePreviewBytes = runs.ValuePreviewBytes
	// maxNextLoads caps how many checkpoints of a tree page, among those
	// saved without their next tasks (by an older version), have their
	// state loaded to list them exactly (those whose versions cannot
	// tell: Sends, state edits); the rest say "+ sends".
	maxNextLoads = 20
	// TreePageSize is how many checkpoints a tree page lists by default;
	// MaxTreePageSize caps ?limit=.
	TreePageSize    = 100
	MaxTreePageSize = 1000
	// diffValueBytes caps one value shown in a diff line; diffLinesPerKey
	// caps the lines of one key's diff.
	diffValueBytes  = 160
	diffLinesPerKey = 60
)

// checkpointIDPattern is what a checkpoint id from a URL may look like
// (ids are UUIDs; anything else cannot name a checkpoint).
var checkpointIDPattern = regexp.MustCompile(`^[0-9A-Za-z-]{1,64}$`)

func (rt Routes) mountTimeTravel(r chi.Router) {
	r.Method(http.MethodGet, "/threads/{thread}/checkpoints", CheckpointTree(rt))
	r.Method(http.MethodGet, "/threads/{thread}/checkpoints/{checkpoint}", CheckpointTree(rt))
	r.Method(http.MethodGet, "/threads/{thread}/checkpoints/{checkpoint}/values/{key}", CheckpointValue(rt))
	r.Method(http.MethodPost, "/threads/{thread}/checkpoints/{checkpoint}/update", UpdateCheckpoint(rt))
	r.Method(http.MethodPost, "/threads/{thread}/checkpoints/{checkpoint}/rerun", RerunCheckpoint(rt))
	r.Method(http.MethodPost, "/threads/{thread}/continue", ContinueThread(rt))
	r.Method(http.MethodGet, "/threads/{thread}/diff", DiffCheckpoints(rt))
	r.Method(http.MethodGet, "/threads/{thread}/chat", ChatFragment(rt))
	r.Method(http.MethodGet, "/threads/{thread}/checkpoints/{checkpoint}/messages/{key}/{message}", MessageText(rt))
	r.Method(http.MethodGet, "/threads/{thread}/messages/{key}/{message}/origin", MessageOrigin(rt))
}

func checkpointParam(r *http.Request, name, value string) (string, error) {
	if !checkpointIDPattern.MatchString(value) {
		return "", fmt.Errorf("%w: %s %q is not a checkpoint id", runs.ErrInvalidInput, name, value)
	}
	return value, nil
}

// threadGraph returns the thread and its graph's Pregel.
func threadGraph(ctx context.Context, rt Routes, id string) (runs.Thread, *engine.Pregel, error) {
	t, err := rt.Runs.Thread(ctx, id)
	if err != nil {
		return runs.Thread{}, nil, err
	}
	g, err := rt.Runs.Graph(t.Graph)
	if err != nil {
		return runs.Thread{}, nil, err
	}
	return t, g.Pregel(), nil
}

// CheckpointTree answers GET /threads/{thread}/checkpoints and
// /threads/{thread}/checkpoints/{checkpoint}: a page of the thread's
// checkpoints (?before= cursor, ?limit=, metadata only: no values are
// loaded for the tree) drawn as a tree by parent links, and the selected
// checkpoint in full.
func CheckpointTree(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := treeView(r, rt)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		render(w, r, rt.Logger, http.StatusOK, web.Checkpoints(v))
	})
}

func treeView(r *http.Request, rt Routes) (web.CheckpointsView, error) {
	id := chi.URLParam(r, "thread")
	t, p, err := threadGraph(r.Context(), rt, id)
	if err != nil {
		return web.CheckpointsView{}, err
	}
	q := r.URL.Query()
	limit := TreePageSize
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxTreePageSize {
			return web.CheckpointsView{}, fmt.Errorf("%w: limit %q: use 1 to %d", runs.ErrInvalidInput, s, MaxTreePageSize)
		}
		limit = n
	}
	before := q.Get("before")
	if before != "" {
		if _, err := checkpointParam(r, "before", before); err != nil {
			return web.CheckpointsView{}, err
		}
	}
	var sel string
	if s := chi.URLParam(r, "checkpoint"); s != "" {
		if sel, err = checkpointParam(r, "checkpoint", s); err != nil {
			return web.CheckpointsView{}, err
		}
	}
	ctx := r.Context()
	cfg := checkpoints.Config{ThreadID: id}
	page, partial, err := treePage(ctx, rt, t, p, before, limit+1)
	if err != nil {
		return web.CheckpointsView{}, err
	}
	v := web.CheckpointsView{Thread: id, Graph: t.Graph, Status: string(t.Status), Limit: limit, Paged: before != "", Before: before}
	if len(page) > limit {
		page = page[:limit]
		v.Older = page[len(page)-1].Config.CheckpointID
	}
	if before == "" && len(page) > 0 {
		v.HeadID = page[0].Config.CheckpointID
	} else {
		head, err := p.GetStateHistory(ctx, cfg, engine.HistoryOptions{MetadataOnly: true, Limit: 1})
		if err != nil {
			return web.CheckpointsView{}, err
		}
		if len(head) > 0 {
			v.HeadID = head[0].Config.CheckpointID
		}
	}
	v.Rows = TreeRows(page, v.HeadID, sel)
	pending, err := pendingOf(ctx, p.Checkpointer(), id, v.HeadID, page)
	if err != nil {
		return web.CheckpointsView{}, err
	}
	happened := Happened(page, pending)
	for i := range v.Rows {
		r := &v.Rows[i]
		r.NextPartial = partial[r.ID]
		r.Happened = happened[r.ID]
		if r.Head && t.Status == runs.StatusInterrupted {
			r.Happened = append(r.Happened, breakpointsAt(t)...)
		}
	}
	if v.NoResume, err = noResume(ctx, p, id, v.HeadID, v.Rows); err != nil {
		return web.CheckpointsView{}, err
	}
	if sel != "" {
		d, err := detail(ctx, rt, p, id, sel)
		if err != nil {
			return web.CheckpointsView{}, err
		}
		d.Head, d.HeadID = sel == v.HeadID, v.HeadID
		d.Happened = happened[sel]
		// A chat's "edit": the form opens with that message alone.
		if key, msg := q.Get("edit"), q.Get("message"); key != "" && msg != "" && r.Method == http.MethodGet {
			if err := prefillMessageEdit(ctx, rt, p, id, &d, key, msg); err != nil {
				return web.CheckpointsView{}, err
			}
		}
		v.Selected = &d
	}
	return v, nil
}

// breakpointsAt names the static breakpoints an interrupted thread
// stopped at (its head has no interrupt write for them).
func breakpointsAt(t runs.Thread) []web.Happening {
	var hs []web.Happening
	for _, n := range t.Before {
		hs = append(hs, web.Happening{Kind: "interrupt", Text: "breakpoint (before " + n + ")"})
	}
	for _, n := range t.After {
		hs = append(hs, web.Happening{Kind: "interrupt", Text: "breakpoint (after " + n + ")"})
	}
	return hs
}

// nothingToRun is why Resume from head is refused and disabled.
const nothingToRun = "nothing to run: the head has no next tasks"

// noResume says why Resume from head would do nothing ("" when it would
// run something): the head plans no task. It reads the head's row when
// the page shows it, else the head itself. A row whose list may lack Send
// tasks counts as runnable: better a run that finds nothing than a button
// that wrongly refuses.
func noResume(ctx context.Context, p *engine.Pregel, thread, head string, rows []web.CheckpointRow) (string, error) {
	if head == "" {
		return "nothing to run: the thread has no checkpoint yet", nil
	}
	runnable := false
	found := false
	for _, r := range rows {
		if r.ID == head {
			found, runnable = true, len(r.Next) > 0 || r.NextPartial
			break
		}
	}
	if !found {
		s, err := p.GetState(ctx, checkpoints.Config{ThreadID: thread, CheckpointID: head})
		switch {
		case errors.Is(err, engine.ErrCheckpointMismatch):
			return "", nil // the run itself will say what is wrong
		case err != nil:
			return "", err
		}
		runnable = len(s.Next) > 0
	}
	if runnable {
		return "", nil
	}
	// A head whose step saved every write but not its checkpoint lists no
	// next task, yet continuing applies those writes and goes on.
	s, err := p.GetState(ctx, checkpoints.Config{ThreadID: thread})
	if err == nil && s.WritesPending && s.Config.CheckpointID == head {
		return "", nil
	}
	if err != nil && !errors.Is(err, engine.ErrCheckpointMismatch) {
		return "", err
	}
	return nothingToRun, nil
}

// treePage lists a page of the thread's checkpoints as header snapshots
// (no values) with their next tasks: as saved with the checkpoint
// (checkpoints.Checkpoint.Next, what the live events said), else, for a
// checkpoint saved without them (by an older version), from the live
// events this process saw when it has them, else inferred from the
// checkpoint's versions (runs.NextIndex), else (a checkpoint with Sends,
// or a state edit) from its state, for at most maxNextLoads checkpoints;
// partial marks the rows whose list may lack tasks.
//
// The page is read as headers, which carry Next and no version maps;
// only a page with a checkpoint saved without Next is read again with
// its versions.
func treePage(ctx context.Context, rt Routes, t runs.Thread, p *engine.Pregel, before string, limit int) ([]*engine.StateSnapshot, map[string]bool, error) {
	g, err := rt.Runs.Graph(t.Graph)
	if err != nil {
		return nil, nil, err
	}
	saver := p.Checkpointer()
	if saver == nil {
		return nil, nil, nil
	}
	q := checkpoints.ListQuery{ThreadID: t.ID}
	tups, err := saver.List(ctx, q, checkpoints.ListOptions{Headers: true, Before: before, Limit: limit})
	if err != nil {
		return nil, nil, err
	}
	// Only a page with older checkpoints needs the means of inferring
	// their next tasks.
	var known map[string][]string
	var idx *runs.NextIndex
	if slices.ContainsFunc(tups, func(tup *checkpoints.Tuple) bool { return tup.Checkpoint.Next == nil }) {
		if tups, err = saver.List(ctx, q, checkpoints.ListOptions{MetadataOnly: true, Before: before, Limit: limit}); err != nil {
			return nil, nil, err
		}
		if lr, ok := rt.Runs.(liveRunner); ok {
			known = lr.KnownNext(t.ID)
		}
		idx = runs.NewNextIndex(g)
	}
	snaps := make([]engine.StateSnapshot, len(tups))
	page := make([]*engine.StateSnapshot, len(tups))
	partial := map[string]bool{}
	loads := 0
	for i, tup := range tups {
		s := &snaps[i]
		*s = engine.StateSnapshot{Config: tup.Config, ParentConfig: tup.ParentConfig, Metadata: tup.Metadata, CreatedAt: tup.Checkpoint.TS}
		page[i] = s
		id := tup.Config.CheckpointID
		if next := tup.Checkpoint.Next; next != nil {
			s.Next = next
			continue
		}
		if next, ok := known[id]; ok {
			s.Next = next
			continue
		}
		next, exact := idx.Next(tup.Checkpoint)
		if !exact && loads < maxNextLoads {
			loads++
			full, err := p.GetState(ctx, checkpoints.Config{ThreadID: t.ID, CheckpointID: id})
			switch {
			case err == nil:
				next, exact = full.Next, true
			case errors.Is(err, engine.ErrCheckpointMismatch):
				// A checkpoint whose values no longer fit the graph's
				// state type still gets its row, with the next tasks its
				// versions tell; its own page says what is wrong.
			default:
				return nil, nil, err
			}
		}
		s.Next, partial[id] = next, !exact
	}
	return page, partial, nil
}

// TreeRows lays out one page of checkpoints (newest first, as history
// lists them) as a tree, oldest first in depth-first order: a
// checkpoint's first child (oldest) continues its lane, every later child
// starts a branch one lane to the right. Checkpoints whose parent is on an
// older page start their own lane at the left.
func TreeRows(page []*engine.StateSnapshot, head, selected string) []web.CheckpointRow {
	in := make(map[string]*engine.StateSnapshot, len(page))
	for _, s := range page {
		in[s.Config.CheckpointID] = s
	}
	children := map[string][]string{}
	var roots []string
	for i := len(page) - 1; i >= 0; i-- { // oldest first
		s := page[i]
		if s.ParentConfig != nil && in[s.ParentConfig.CheckpointID] != nil {
			children[s.ParentConfig.CheckpointID] = append(children[s.ParentConfig.CheckpointID], s.Config.CheckpointID)
			continue
		}
		roots = append(roots, s.Config.CheckpointID)
	}
	onHead := map[string]bool{}
	for s := in[head]; s != nil; {
		onHead[s.Config.CheckpointID] = true
		if s.ParentConfig == nil {
			break
		}
		s = in[s.ParentConfig.CheckpointID]
	}
	type item struct {
		id    string
		depth int
		fork  bool
	}
	rows := make([]web.CheckpointRow, 0, len(page))
	// Depth-first with an explicit stack: a long linear history would
	// otherwise recurse once per checkpoint.
	var stack []item
	for i := len(roots) - 1; i >= 0; i-- {
		stack = append(stack, item{id: roots[i], depth: 0})
	}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		s := in[it.id]
		row := web.CheckpointRow{
			ID: it.id, Short: shortID(it.id), Source: string(s.Metadata.Source), Step: s.Metadata.Step,
			Created: when(s.CreatedAt), Depth: it.depth, Head: it.id == head, OnHead: onHead[it.id],
			Selected: it.id == selected, Fork: it.fork, Next: s.Next,
		}
		if s.ParentConfig != nil {
			row.ParentID = s.ParentConfig.CheckpointID
			row.ParentOffPage = in[row.ParentID] == nil
		}
		rows = append(rows, row)
		kids := children[it.id]
		// Push later children first so the first child is visited next;
		// each later child is a branch one lane to the right.
		for k := len(kids) - 1; k >= 0; k-- {
			d, fork := it.depth, false
			if k > 0 {
				d, fork = it.depth+1, true
			}
			stack = append(stack, item{id: kids[k], depth: d, fork: fork})
		}
	}
	return rows
}

// shortID is the distinctive tail of a checkpoint id: UUIDv7s made close
// together share their leading (time) digits.
func shortID(id string) string {
	if len(id) <= 12 {
		return id
	}
	return "…" + id[len(id)-12:]
}

// detail reads one checkpoint: its values (cut to ValuePreviewBytes per
// key), next tasks with their outcomes, channel versions and metadata.
func detail(ctx context.Context, rt Routes, p *engine.Pregel, thread, id string) (web.CheckpointDetail, error) {
	tup, err := rt.Runs.Checkpoint(ctx, thread, id)
	if err != nil {
		return web.CheckpointDetail{}, err
	}
	snap, err := p.StateOf(tup, id == "")
	if err != nil {
		return web.CheckpointDetail{}, err
	}
	d := web.CheckpointDetail{
		ID: id, Source: string(snap.Metadata.Source), Step: snap.Metadata.Step, RunID: snap.Metadata.RunID,
		Created: when(snap.CreatedAt), Next: snap.Next,
	}
	if snap.ParentConfig != nil {
		d.ParentID = snap.ParentConfig.CheckpointID
	}
	keys := make([]string, 0, len(snap.Values))
	for k := range snap.Values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		full := encodeJSON(snap.Values[k], true)
		vv := web.ValueView{Index: i, Key: k, JSON: full, Size: len(full), URL: ckptPath(thread, id) + "/values/" + url.PathEscape(k)}
		if len(full) > ValuePreviewBytes {
			vv.JSON, vv.Truncated = textcut.Cut(full, ValuePreviewBytes), true
		}
		d.Values = append(d.Values, vv)
	}
	for _, ts := range snap.Tasks {
		tv := web.TaskView{ID: ts.ID, Name: ts.Name, Error: ts.Error}
		if ts.Result != nil {
			tv.Result, tv.Truncated = runs.Preview(ts.Result, ValuePreviewBytes)
		}
		for _, in := range ts.Interrupts {
			s, cut := runs.Preview(in.Value, ValuePreviewBytes)
			tv.Interrupts = append(tv.Interrupts, web.PendingView{ID: in.ID, Node: in.Node, Value: s, Truncated: cut})
		}
		d.Tasks = append(d.Tasks, tv)
	}
	for ch, ver := range tup.Checkpoint.ChannelVersions {
		d.Versions = append(d.Versions, web.VersionRow{Channel: ch, Version: ver})
	}
	sort.Slice(d.Versions, func(i, j int) bool { return d.Versions[i].Channel < d.Versions[j].Channel })
	md := map[string]any{"parents": snap.Metadata.Parents}
	for k, v := range snap.Metadata.Extra {
		md[k] = v
	}
	d.Metadata, _ = runs.Preview(md, ValuePreviewBytes)
	for _, n := range p.NodeNames() {
		if n != engine.Start && n != engine.End {
			d.Nodes = append(d.Nodes, n)
		}
	}
	for _, k := range p.StateKeys() {
		if _, ok := snap.Values[k]; !ok {
			d.AddKeys = append(d.AddKeys, k)
		}
	}
	return d, nil
}

func ckptPath(thread, id string) string { return "/threads/" + thread + "/checkpoints/" + id }

// encodeJSON renders v as JSON without HTML escaping (pages escape text
// themselves); indent for reading.
func encodeJSON(v any, indent bool) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return "(cannot be shown as JSON: " + err.Error() + ")"
	}
	return strings.TrimRight(buf.String(), "\n")
}

// CheckpointValue answers GET /threads/{thread}/checkpoints/{checkpoint}/values/{key}:
// one state key's full value as JSON (the page's expand link), 404 for a
// key the checkpoint does not hold.
func CheckpointValue(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		thread := chi.URLParam(r, "thread")
		id, err := checkpointParam(r, "checkpoint", chi.URLParam(r, "checkpoint"))
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		_, p, err := threadGraph(r.Context(), rt, thread)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		tup, err := rt.Runs.Checkpoint(r.Context(), thread, id)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		snap, err := p.StateOf(tup, id == "")
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		key := chi.URLParam(r, "key")
		if k, err := url.PathUnescape(key); err == nil {
			key = k
		}
		val, ok := snap.Values[key]
		if !ok {
			fail(w, r, rt.Logger, fmt.Errorf("%w: checkpoint %q holds no key %q", runs.ErrUnknownCheckpoint, id, key))
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte(encodeJSON(val, true)))
	})
}

// UpdateCheckpoint answers POST /threads/{thread}/checkpoints/{checkpoint}/update
// (form: key and value repeated in pairs, value as JSON; as_node): the
// values are applied to that checkpoint together, as if the node had
// returned them, making one new checkpoint on a branch, and the person is
// sent to it. A key may be any state key the graph declares, holding a
// value at the checkpoint or not yet; a pair whose value is empty, or
// equal to the key's value at the checkpoint, is left out (the page's form
// sends every key). An unknown key (named, with the valid ones), bad JSON,
// a value the state rejects, a node the graph lacks, or nothing to change
// is a 400 with the reason, re-showing the form with what was typed;
// nothing is written. A running thread is a 409.
func UpdateCheckpoint(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		thread := chi.URLParam(r, "thread")
		id, err := checkpointParam(r, "checkpoint", chi.URLParam(r, "checkpoint"))
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		_, p, err := threadGraph(r.Context(), rt, thread)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		if err := parseForm(r); err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		keys, raws, asNode := r.PostForm["key"], r.PostForm["value"], r.PostForm.Get("as_node")
		refuse := func(err error) {
			code := statusOf(err)
			if code >= 500 || code == http.StatusNotFound {
				fail(w, r, rt.Logger, err)
				return
			}
			v, verr := treeView(r, rt)
			if verr != nil || v.Selected == nil {
				fail(w, r, rt.Logger, err)
				return
			}
			echoEdits(v.Selected, keys, raws, asNode)
			v.Selected.Error = err.Error()
			render(w, r, rt.Logger, code, web.Checkpoints(v))
		}
		if len(keys) == 0 {
			refuse(fmt.Errorf("%w: no state key given", runs.ErrInvalidInput))
			return
		}
		if len(keys) != len(raws) {
			refuse(fmt.Errorf("%w: %d keys but %d values: give each key its value", runs.ErrInvalidInput, len(keys), len(raws)))
			return
		}
		if asNode != "" && (asNode == engine.Start || asNode == engine.End || !slices.Contains(p.NodeNames(), asNode)) {
			refuse(fmt.Errorf("%w: as-node %q is not a node of this graph", runs.ErrInvalidInput, asNode))
			return
		}
		tup, err := rt.Runs.Checkpoint(r.Context(), thread, id)
		if err != nil {
			refuse(err)
			return
		}
		snap, err := p.StateOf(tup, false)
		if err != nil {
			refuse(err)
			return
		}
		vals, err := editValues(p.StateKeys(), snap.Values, keys, raws)
		if err != nil {
			refuse(err)
			return
		}
		newID, err := rt.Runs.UpdateState(r.Context(), thread, id, vals, asNode)
		if err != nil {
			refuse(err)
			return
		}
		http.Redirect(w, r, ckptPath(thread, newID), http.StatusSeeOther)
	})
}

// editValues reads the edit form's key/value pairs into one update:
// every key must be one of the graph's state keys, given once; an empty
// value, or one equal (as JSON) to the key's current value, is no change.
func editValues(stateKeys []string, current map[string]any, keys, raws []string) (map[string]any, error) {
	vals := map[string]any{}
	seen := map[string]bool{}
	for i, k := range keys {
		raw := strings.TrimSpace(raws[i])
		if k == "" {
			if raw != "" {
				return nil, fmt.Errorf("%w: a value was given for a new key, but no key was picked", runs.ErrInvalidInput)
			}
			continue
		}
		if !slices.Contains(stateKeys, k) {
			return nil, fmt.Errorf("%w: unknown state key %q: this graph's state keys are %s", runs.ErrInvalidInput, k, strings.Join(stateKeys, ", "))
		}
		if seen[k] {
			return nil, fmt.Errorf("%w: state key %q is given twice; give it once", runs.ErrInvalidInput, k)
		}
		seen[k] = true
		if raw == "" {
			continue
		}
		v, err := DecodeJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("value of %q: %w", k, err)
		}
		if cur, ok := current[k]; ok && reflect.DeepEqual(jsonShape(cur), jsonShape(v)) {
			continue
		}
		vals[k] = v
	}
	if len(vals) == 0 {
		return nil, fmt.Errorf("%w: nothing to change: every value given equals the checkpoint's; change a value or add a key", runs.ErrInvalidInput)
	}
	return vals, nil
}

// echoEdits puts what was typed back into a refused edit's form.
func echoEdits(d *web.CheckpointDetail, keys, raws []string, asNode string) {
	d.AsNode, d.Edits = asNode, map[string]string{}
	shown := map[string]bool{}
	for _, v := range d.Values {
		shown[v.Key] = true
	}
	for i, k := range keys {
		if i >= len(raws) {
			break
		}
		switch {
		case shown[k]:
			d.Edits[k] = raws[i]
		case d.AddKey == "" && d.AddValue == "" && (k != "" || raws[i] != ""):
			d.AddKey, d.AddValue = k, raws[i]
		}
	}
}

// RerunCheckpoint answers POST /threads/{thread}/checkpoints/{checkpoint}/rerun:
// the thread runs again from that checkpoint (a fork of it), through the
// run manager so open tabs see it; 409 while a run is active.
func RerunCheckpoint(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		thread := chi.URLParam(r, "thread")
		id, err := checkpointParam(r, "checkpoint", chi.URLParam(r, "checkpoint"))
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		if _, err := rt.Runs.RunFrom(r.Context(), thread, id); err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		http.Redirect(w, r, "/threads/"+thread, http.StatusSeeOther)
	})
}

// ErrNothingToRun: the head checkpoint plans no task, so continuing the
// thread would run nothing (a 409 that says so).
var ErrNothingToRun = errors.New(nothingToRun)

// ContinueThread answers POST /threads/{thread}/continue: run the head
// checkpoint's next tasks (after an edit, or to retry a failed step);
// 409 while a run is active or when the head has nothing to run.
func ContinueThread(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		thread := chi.URLParam(r, "thread")
		_, p, err := threadGraph(r.Context(), rt, thread)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		head, err := p.GetState(r.Context(), checkpoints.Config{ThreadID: thread})
		if err != nil && !errors.Is(err, engine.ErrCheckpointMismatch) {
			fail(w, r, rt.Logger, err)
			return
		}
		if err == nil && head.Config.CheckpointID != "" && len(head.Next) == 0 && !head.WritesPending && len(head.Interrupts) == 0 {
			fail(w, r, rt.Logger, fmt.Errorf("%w (checkpoint %s): edit its state or re-run from an earlier checkpoint to go on", ErrNothingToRun, head.Config.CheckpointID))
			return
		}
		if _, err := rt.Runs.RunFrom(r.Context(), thread, ""); err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		http.Redirect(w, r, "/threads/"+thread, http.StatusSeeOther)
	})
}
