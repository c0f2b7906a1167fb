package handlers

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/web"
)

// PendingPreviewBytes caps an interrupt value on the approval panel.
const PendingPreviewBytes = 64 << 10

// ThreadList answers GET /threads?status=&graph=: threads filtered by
// status and graph, newest first, including those of earlier runs of the
// Studio (the run manager keeps a thread registry). An unknown status or
// graph is a 400, so a mistyped link does not silently show nothing. The
// page shows the newest 500; the filters reach older ones.
func ThreadList(rt Routes) http.Handler {
	const pageLimit = 500
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		// One more than the page shows, to know whether it is cut.
		f := runs.ThreadFilter{Status: runs.Status(q.Get("status")), Graph: q.Get("graph"), Limit: pageLimit + 1}
		statuses := make([]string, 0, len(runs.Statuses))
		for _, s := range runs.Statuses {
			statuses = append(statuses, string(s))
		}
		if f.Status != "" && !slices.Contains(statuses, string(f.Status)) {
			fail(w, r, rt.Logger, fmt.Errorf("%w: unknown status %q; use one of %s", runs.ErrInvalidInput, f.Status, strings.Join(statuses, ", ")))
			return
		}
		graphs := rt.Runs.GraphNames()
		if f.Graph != "" && !slices.Contains(graphs, f.Graph) {
			fail(w, r, rt.Logger, fmt.Errorf("%w: unknown graph %q", runs.ErrInvalidInput, f.Graph))
			return
		}
		// A registry that cannot be read is an error page, not an empty
		// list that says no thread exists.
		ts, err := rt.Runs.ListThreads(r.Context(), f)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		v := web.ThreadsView{Threads: threadRows(ts, pageLimit), Status: string(f.Status), Graph: f.Graph, Statuses: statuses, Graphs: graphs}
		if len(ts) > pageLimit {
			v.Capped = pageLimit
		}
		render(w, r, rt.Logger, http.StatusOK, web.Threads(v))
	})
}

func threadRows(ts []runs.Thread, limit int) []web.ThreadRow {
	if limit > 0 && len(ts) > limit {
		ts = ts[:limit]
	}
	out := make([]web.ThreadRow, 0, len(ts))
	for _, t := range ts {
		out = append(out, web.ThreadRow{ID: t.ID, Graph: t.Graph, Status: string(t.Status), Updated: when(t.Updated), Error: t.Error})
	}
	return out
}

// liveRunner is what the thread pages use of a Runner that keeps its
// threads' live events (*runs.Manager does): the page renders the
// catch-up once with its cursor, and the websocket resumes after that
// cursor instead of sending a second catch-up. A Runner without it gets
// the checkpoints' catch-up on both.
type liveRunner interface {
	History(ctx context.Context, thread string) ([]runs.Event, string, error)
	SubscribeFrom(ctx context.Context, thread, cursor string) ([]runs.Event, *runs.Subscription, error)
	KnownNext(thread string) map[string][]string
}

var _ liveRunner = (*runs.Manager)(nil)

// ThreadPage answers GET /threads/{thread}: built from the head's lineage
// (its checkpoints plus the thread's run log, the same events a live tab
// applies), the graph overlaid (each node's latest state, the last run's
// fired edges), the superstep timeline grouped by run (earlier runs
// collapsed; answers, durations, attempts, cache hits and cancelled
// tasks), the channel versions and the state at the head, and the
// approval panel when the thread waits for an answer. The page's script
// then keeps it live over the websocket, resuming after the page's
// cursor. ?expand= opens subgraph nodes in the drawing as on the graph
// page (a value naming no subgraph node is a 400); the nodes inside an
// open subgraph light up from the subgraph's task events.
func ThreadPage(rt Routes) http.Handler { return threadPage(rt, nil) }

// threadPage is ThreadPage with amend, when set, changing the view before
// it is rendered and giving the status: a refused answer renders the
// same page with the refusal in its approval panel (refuseAnswer).
func threadPage(rt Routes, amend func(*web.ThreadView) int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, err := rt.Runs.Thread(r.Context(), chi.URLParam(r, "thread"))
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		if t.Graph == "" {
			// A thread made through the API that has not run: it exists,
			// so no 404, but there is no graph to draw nor state to show.
			renderError(w, r, rt.Logger, http.StatusOK, "No run yet",
				"Thread "+t.ID+" was created through the API and has not run yet: its first run binds its graph. Start one from a graph's page with this thread id, or through the API.")
			return
		}
		g, err := rt.Runs.Graph(t.Graph)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		expand, err := ParseExpand(g.Topology(), r.URL.Query()["expand"])
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		base := "/threads/" + url.PathEscape(t.ID)
		svg, edges, err := compiledDrawing(r.Context(), g, expand, base)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		var evs []runs.Event
		cursor := ""
		if lr, ok := rt.Runs.(liveRunner); ok {
			evs, cursor, err = lr.History(r.Context(), t.ID)
		} else {
			evs, err = runs.Catchup(r.Context(), g, t.ID)
		}
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		v := web.ThreadView{ID: t.ID, Graph: t.Graph, Status: string(t.Status), Updated: when(t.Updated), Error: t.Error, SVG: string(svg), Before: t.Before, After: t.After, Cursor: cursor,
			Subgraphs: subgraphList(g.Topology(), expand, base), Details: nodePath(base, ""), ResumeNeeded: t.NeedsResume()}
		if len(expand) > 0 {
			v.CollapseAll = base
			v.Expand = strings.TrimPrefix(expandHref(base, expand), base)
		}
		f := fold(evs)
		v.Tasks, v.Channels, v.Overlay = f.tasks, f.channels, f.overlay
		v.EarlierRuns, v.Run, v.Head = f.earlier, f.run, f.head
		v.Overlay.Edges = edges
		v.Values = f.valueRows(t.ID)
		v.Pending = pendingViews(t.Pending)
		if v.Chats, err = headChats(r.Context(), rt, t.ID, g.Pregel()); err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		v.Streams, v.StreamCap = ChatStreams(evs), runs.StreamTextBytes
		if v.PromptCache, err = threadCalls(r.Context(), rt, t.ID); err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		if t.Status == runs.StatusInterrupted {
			v.Edit = stateEditor(v.Values, len(t.Pending) > 0)
		}
		code := http.StatusOK
		if amend != nil {
			code = amend(&v)
		}
		render(w, r, rt.Logger, code, web.Thread(v))
	})
}

// folded is a thread page's state after applying its events in order, as
// studio.js applies live ones.
type folded struct {
	// tasks are the timeline rows of run, the lineage's latest run;
	// earlier are its earlier runs, oldest first.
	tasks    []web.TaskRow
	run      web.RunGroup
	earlier  []web.RunGroup
	head     string
	lineage  []string
	channels []web.ChannelRow
	overlay  web.GraphState
	// values are the values panel's rows by key; valueCkpt the
	// checkpoint each was read at (its expand link).
	values    map[string]runs.ValueChange
	valueCkpt map[string]string
}

// taskStates maps task event kinds to the timeline's and graph's states.
var taskStates = map[runs.Kind]string{runs.KindTaskPlanned: "planned", runs.KindTaskStarted: "running", runs.KindTaskRetried: "retried",
	runs.KindTaskFinished: "done", runs.KindTaskFailed: "failed", runs.KindTaskInterrupted: "interrupted", runs.KindTaskCancelled: "cancelled"}

// fold turns a thread's events (the head's lineage, see runs.Catchup and
// the run log) into the timeline (per run a row per answer, then per task
// and step, in order; earlier runs apart), the channel table (each
// channel's version, with the channels the last barrier bumped marked),
// the values panel (keys the last checkpoint changed marked) and the
// graph overlay: each node's latest state in the lineage, the edges that
// fired in the last run. studio.js applies live events the same way.
func fold(evs []runs.Event) folded {
	f := folded{values: map[string]runs.ValueChange{}, valueCkpt: map[string]string{}}
	at := map[string]int{}
	versions := map[string]int64{}
	var last []runs.Bump
	nodes, retried := map[string]string{}, map[string]bool{}
	var fired, now [][2]string
	const noStep = -1
	nowStep := noStep
	for _, ev := range evs {
		switch ev.Kind {
		case runs.KindBarrier:
			for _, b := range ev.Bumps {
				versions[b.Channel] = b.New
			}
			last = ev.Bumps
			continue
		case runs.KindRunStarted:
			// A node keeps its colour from an earlier run of the lineage
			// until a later one runs it again; edges are the run's own.
			f.startRun(ev)
			clear(at)
			clear(retried)
			fired, now, nowStep = nil, nil, noStep
			continue
		case runs.KindCheckpoint:
			f.applyValues(ev)
			f.head = ev.Checkpoint
			f.lineage = append(f.lineage, ev.Checkpoint)
			continue
		case runs.KindRunTakeover:
			if ev.RunID != f.run.ID {
				f.startRun(ev)
			}
			f.run.TakenOver, f.run.Attempt = when(ev.Time.UTC()), ev.Attempt
			continue
		case runs.KindInterruptAnswered:
			f.answered(ev)
			if nodes[ev.Node] == "interrupted" {
				nodes[ev.Node] = "answered"
			}
			continue
		}
		state := taskStates[ev.Kind]
		if state == "" {
			continue
		}
		// A subgraph's task is its node in the expanded drawing
		// (n-research:plan); its step is the subgraph's own, so it
		// leaves the thread graph's edges alone.
		node := ev.Node
		if ev.Path != "" {
			node = qualify(ev.Path, ev.Node)
		}
		if ev.Kind == runs.KindTaskPlanned && ev.Path == "" {
			// Edges of a later step replace the "now" edges.
			if ev.Step > nowStep {
				now, nowStep = nil, ev.Step
			}
			for _, e := range ev.Edges {
				pair := [2]string(e)
				if !slices.Contains(fired, pair) {
					fired = append(fired, pair)
				}
				if !slices.Contains(now, pair) {
					now = append(now, pair)
				}
			}
		}
		key := strconv.Itoa(ev.Step) + "-" + ev.TaskID
		i, ok := at[key]
		if !ok {
			i = len(f.tasks)
			at[key] = i
			f.tasks = append(f.tasks, web.TaskRow{Step: ev.Step, Node: node, TaskID: ev.TaskID, Run: f.run.ID})
		}
		row := &f.tasks[i]
		if ev.Kind == runs.KindTaskFinished && ev.Cached {
			state = "cached"
		}
		row.Status = state
		if state == "retried" {
			retried[node] = true
		} else {
			nodes[node] = state
		}
		if len(ev.Triggers) > 0 {
			row.Triggers = ev.Triggers
		}
		// Checkpoints keep no durations: a catch-up event has one from
		// the run log, or when this process saw the task finish live. A
		// cache hit has none.
		if ev.Kind == runs.KindTaskFinished && !ev.Cached && (!ev.Catchup || ev.DurationMS > 0) {
			row.Duration = msText(ev.DurationMS)
		}
		if ev.Attempt > 0 {
			row.Attempts = ev.Attempt
		}
		if ev.Error != "" {
			row.Error = ev.Error
		}
	}
	f.run.Tasks = f.tasks
	bumped := map[string]int64{}
	for _, b := range last {
		bumped[b.Channel] = b.Old
	}
	f.channels = make([]web.ChannelRow, 0, len(versions))
	for name, v := range versions {
		old, ok := bumped[name]
		f.channels = append(f.channels, web.ChannelRow{Name: name, Version: v, Old: old, Bumped: ok})
	}
	sort.Slice(f.channels, func(i, j int) bool { return f.channels[i].Name < f.channels[j].Name })
	f.overlay = web.GraphState{Nodes: nodes, Fired: fired, Now: now, Step: nowStep, Lineage: f.lineage}
	if f.overlay.Lineage == nil {
		f.overlay.Lineage = []string{}
	}
	// The page's script reads the overlay as JSON: lists, never null.
	if f.overlay.Fired == nil {
		f.overlay.Fired = [][2]string{}
	}
	if f.overlay.Now == nil {
		f.overlay.Now = [][2]string{}
	}
	for n := range retried {
		f.overlay.Retried = append(f.overlay.Retried, n)
	}
	sort.Strings(f.overlay.Retried)
	return f
}

// startRun closes the current run's group (when it has one) and opens
// ev's.
func (f *folded) startRun(ev runs.Event) {
	// A task the run only planned (a breakpoint, a state edit) is the
	// next run's to run: its row goes with the run that runs it.
	f.tasks = slices.DeleteFunc(f.tasks, func(r web.TaskRow) bool { return r.Status == "planned" })
	if f.run.Started != "" || len(f.tasks) > 0 || len(f.run.Answers) > 0 {
		f.run.Tasks = f.tasks
		f.earlier = append(f.earlier, f.run)
	}
	f.tasks = nil
	f.run = web.RunGroup{ID: ev.RunID, Kind: string(ev.RunKind), Origin: ev.Origin, Started: when(ev.Time.UTC())}
}

// answered adds an answer to the current run and marks the interrupted
// rows of its node, in this run and earlier ones, as answered.
func (f *folded) answered(ev runs.Event) {
	a := web.AnswerRow{Node: ev.Node, Answer: ev.Answer, Origin: ev.Origin, At: when(ev.Time.UTC())}
	if len(ev.Interrupts) > 0 {
		a.ID, a.Question = ev.Interrupts[0].ID, ev.Interrupts[0].Preview
	}
	f.run.Answers = append(f.run.Answers, a)
	mark := func(rows []web.TaskRow) {
		for i := range rows {
			if rows[i].Status == "interrupted" && (ev.Node == "" || rows[i].Node == ev.Node) {
				rows[i].Status = "answered"
			}
		}
	}
	mark(f.tasks)
	for i := range f.earlier {
		mark(f.earlier[i].Tasks)
	}
}

// msText writes a duration in milliseconds to a tenth, rounding half up
// on the whole microseconds events carry: studio.js writes live
// durations by the same rule, so a reload reads as the live tab did.
func msText(ms float64) string {
	us := int64(math.Round(ms * 1000))
	t := (us + 50) / 100
	return strconv.FormatInt(t/10, 10) + "." + strconv.FormatInt(t%10, 10)
}

// applyValues applies a checkpoint event's values update: the marks of
// the previous step go, a reset replaces the panel, a diff patches the
// keys it names.
func (f *folded) applyValues(ev runs.Event) {
	for k, c := range f.values {
		c.Op = ""
		f.values[k] = c
	}
	if ev.Reset {
		clear(f.values)
		clear(f.valueCkpt)
	}
	for _, c := range ev.Values {
		if c.Op == runs.OpRemoved {
			delete(f.values, c.Key)
			delete(f.valueCkpt, c.Key)
			continue
		}
		f.values[c.Key] = c
		f.valueCkpt[c.Key] = ev.Checkpoint
	}
}

// valueRows are the values panel's rows, sorted by key.
func (f *folded) valueRows(thread string) []web.ValueRow {
	out := make([]web.ValueRow, 0, len(f.values))
	for k, c := range f.values {
		out = append(out, web.ValueRow{Key: k, JSON: c.JSON, Truncated: c.Truncated, Size: c.Size, Op: c.Op, Changed: c.Op != "",
			URL: ckptPath(thread, f.valueCkpt[k]) + "/values/" + url.PathEscape(k)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// ResumeRun answers POST /threads/{thread}/resume. The form's action is
// approve (answer true), reject (false), respond (the JSON in value),
// form (a typed form built from the interrupt's answer schema; the answer
// is the JSON object of its fields), continue (a breakpoint: no answer)
// or edit (change state keys at the pause, then go on: editAndContinue);
// interrupt_id, when set, answers that interrupt only. An answer the
// Studio refuses (bad JSON, a field over its limit, a thread that no
// longer waits) comes back as the thread page with the reason in the
// approval panel and what was typed still in its fields, with the 4xx
// status, never as a dead end.
func ResumeRun(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "thread")
		t, back, err := formThread(rt, r, id)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		if err := parseForm(r); err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		refuse := func(err error) { refuseAnswer(w, r, rt, err) }
		var answer any
		switch action := r.PostForm.Get("action"); action {
		case "approve":
			answer = true
		case "reject":
			answer = false
		case "respond":
			v, err := DecodeJSON(r.PostForm.Get("value"))
			if err != nil {
				refuse(fmt.Errorf("response: %w", err))
				return
			}
			answer = v
		case "form":
			v, err := typedAnswer(t, r.PostForm.Get("interrupt_id"), r.PostForm)
			if err != nil {
				refuse(fmt.Errorf("typed answer: %w", err))
				return
			}
			answer = v
		case "continue":
		case "edit":
			if err := editAndContinue(r, rt, t); err != nil {
				refuse(err)
				return
			}
			http.Redirect(w, r, back, http.StatusSeeOther)
			return
		default:
			fail(w, r, rt.Logger, fmt.Errorf("%w: action %q: use approve, reject, respond or continue (or form, for a schema question, or edit)", runs.ErrInvalidInput, action))
			return
		}
		if iid := r.PostForm.Get("interrupt_id"); iid != "" {
			answer = runs.ByID{iid: answer}
		}
		if _, err := rt.Runs.ResumeWith(r.Context(), id, answer, &runs.ResumeOptions{Origin: runs.OriginThreadPage}); err != nil {
			refuse(err)
			return
		}
		http.Redirect(w, r, back, http.StatusSeeOther)
	})
}

// CancelRun answers POST /threads/{thread}/cancel: 409 when nothing runs.
func CancelRun(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "thread")
		_, back, err := formThread(rt, r, id)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		if err := rt.Runs.Cancel(r.Context(), id); err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		http.Redirect(w, r, back, http.StatusSeeOther)
	})
}

// formThread is the thread a form on its page posts to, and the page the
// form leads back to, with the subgraphs its ?expand= names still open. A
// bad ?expand= is an error here, before the form does anything, not a 400
// after it.
func formThread(rt Routes, r *http.Request, id string) (runs.Thread, string, error) {
	t, err := rt.Runs.Thread(r.Context(), id)
	if err != nil {
		return runs.Thread{}, "", err
	}
	base := "/threads/" + url.PathEscape(t.ID)
	values := r.URL.Query()["expand"]
	if len(values) == 0 {
		return t, base, nil
	}
	g, err := rt.Runs.Graph(t.Graph)
	if err != nil {
		return runs.Thread{}, "", err
	}
	expand, err := ParseExpand(g.Topology(), values)
	if err != nil {
		return runs.Thread{}, "", err
	}
	return t, expandHref(base, expand), nil
}
