package handlers

import (
	"fmt"
	"net/http"
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
		var ts []runs.Thread
		if l, ok := rt.Runs.(runs.ThreadLister); ok {
			// A registry that cannot be read is an error page, not an
			// empty list that says no thread exists.
			var err error
			if ts, err = l.ListThreads(r.Context(), f); err != nil {
				fail(w, r, rt.Logger, err)
				return
			}
		} else {
			ts = rt.Runs.Threads(f)
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

// ThreadPage answers GET /threads/{thread}: the graph, the superstep
// timeline and channel versions rebuilt from the checkpoints, and the
// approval panel when the thread waits for an answer. The page's script
// then keeps it live over the websocket.
func ThreadPage(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, err := rt.Runs.Thread(chi.URLParam(r, "thread"))
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		g, err := rt.Runs.Graph(t.Graph)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		svg, err := GraphSVG(r.Context(), g.Topology(), g.Warnings())
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		evs, err := runs.Catchup(r.Context(), g, t.ID)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		v := web.ThreadView{ID: t.ID, Graph: t.Graph, Status: string(t.Status), Updated: when(t.Updated), Error: t.Error, SVG: string(svg), Before: t.Before, After: t.After}
		v.Tasks, v.Channels = fold(evs)
		v.Pending = pendingViews(t.Pending)
		render(w, r, rt.Logger, http.StatusOK, web.Thread(v))
	})
}

// fold turns a thread's events into the timeline (a row per task and
// step, in order) and the channel table (each channel's version, with the
// channels the last barrier bumped marked). studio.js applies live events
// the same way.
func fold(evs []runs.Event) ([]web.TaskRow, []web.ChannelRow) {
	var tasks []web.TaskRow
	at := map[string]int{}
	versions := map[string]int64{}
	var last []runs.Bump
	for _, ev := range evs {
		if ev.Kind == runs.KindBarrier {
			for _, b := range ev.Bumps {
				versions[b.Channel] = b.New
			}
			last = ev.Bumps
			continue
		}
		state := map[runs.Kind]string{runs.KindTaskPlanned: "planned", runs.KindTaskStarted: "running", runs.KindTaskRetried: "retried",
			runs.KindTaskFinished: "done", runs.KindTaskFailed: "failed", runs.KindTaskInterrupted: "interrupted"}[ev.Kind]
		if state == "" {
			continue
		}
		key := strconv.Itoa(ev.Step) + "-" + ev.TaskID
		i, ok := at[key]
		if !ok {
			i = len(tasks)
			at[key] = i
			tasks = append(tasks, web.TaskRow{Step: ev.Step, Node: ev.Node, TaskID: ev.TaskID})
		}
		row := &tasks[i]
		if ev.Kind == runs.KindTaskFinished && ev.Cached {
			state = "cached"
		}
		row.Status = state
		if len(ev.Triggers) > 0 {
			row.Triggers = ev.Triggers
		}
		if ev.Kind == runs.KindTaskFinished && !ev.Catchup {
			row.Duration = strconv.FormatFloat(ev.DurationMS, 'f', 1, 64)
		}
		if ev.Attempt > 0 {
			row.Attempts = ev.Attempt
		}
		if ev.Error != "" {
			row.Error = ev.Error
		}
	}
	bumped := map[string]int64{}
	for _, b := range last {
		bumped[b.Channel] = b.Old
	}
	channels := make([]web.ChannelRow, 0, len(versions))
	for name, v := range versions {
		old, ok := bumped[name]
		channels = append(channels, web.ChannelRow{Name: name, Version: v, Old: old, Bumped: ok})
	}
	sort.Slice(channels, func(i, j int) bool { return channels[i].Name < channels[j].Name })
	return tasks, channels
}

// ResumeRun answers POST /threads/{thread}/resume. The form's action is
// approve (answer true), reject (false), respond (the JSON in value),
// form (a typed form built from the interrupt's answer schema; the answer
// is the JSON object of its fields) or continue (a breakpoint: no answer);
// interrupt_id, when set, answers that interrupt only.
func ResumeRun(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "thread")
		t, err := rt.Runs.Thread(id)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		if err := parseForm(r); err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		var answer any
		switch action := r.PostForm.Get("action"); action {
		case "approve":
			answer = true
		case "reject":
			answer = false
		case "respond":
			v, err := DecodeJSON(r.PostForm.Get("value"))
			if err != nil {
				fail(w, r, rt.Logger, fmt.Errorf("response: %w", err))
				return
			}
			answer = v
		case "form":
			v, err := typedAnswer(t, r.PostForm.Get("interrupt_id"), r.PostForm)
			if err != nil {
				fail(w, r, rt.Logger, fmt.Errorf("typed answer: %w", err))
				return
			}
			answer = v
		case "continue":
		default:
			fail(w, r, rt.Logger, fmt.Errorf("%w: action %q: use approve, reject, respond or continue (or form, for a schema question)", runs.ErrInvalidInput, action))
			return
		}
		if iid := r.PostForm.Get("interrupt_id"); iid != "" {
			answer = runs.ByID{iid: answer}
		}
		if _, err := rt.Runs.Resume(r.Context(), id, answer); err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		http.Redirect(w, r, "/threads/"+id, http.StatusSeeOther)
	})
}

// CancelRun answers POST /threads/{thread}/cancel: 409 when nothing runs.
func CancelRun(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "thread")
		if err := rt.Runs.Cancel(id); err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		http.Redirect(w, r, "/threads/"+id, http.StatusSeeOther)
	})
}
