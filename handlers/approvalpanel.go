package handlers

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/web"
)

// stateFieldPrefix starts the name of every state editor input (one per
// state key), so a key can never collide with the form's own fields.
const stateFieldPrefix = "state."

// refuseAnswer answers a refused resume with the thread page itself: the
// reason in the approval panel, next to the question (and field) it
// concerns, and everything the person typed kept in its fields, with the
// refusal's 4xx status. Only what the page cannot be shown for (an
// unknown thread, a body too large to have been read, a server failure)
// is an error page.
func refuseAnswer(w http.ResponseWriter, r *http.Request, rt Routes, err error) {
	code := statusOf(err)
	if code >= 500 || code == http.StatusNotFound || code == http.StatusRequestEntityTooLarge {
		fail(w, r, rt.Logger, err)
		return
	}
	msg := err.Error()
	if code == http.StatusConflict {
		msg = "The thread no longer waits for this answer (it was answered, edited or run from another page): " + msg
	}
	threadPage(rt, func(v *web.ThreadView) int {
		keepAnswer(v, r.PostForm, msg, err)
		return code
	}).ServeHTTP(w, r)
}

// keepAnswer puts a refused answer back on the page: on the interrupt it
// was for when that still waits, else as a refusal above the panel.
func keepAnswer(v *web.ThreadView, posted url.Values, msg string, err error) {
	waiting := v.Status == string(runs.StatusInterrupted)
	if posted.Get("action") == "edit" && waiting && v.Edit != nil {
		v.Edit.Error = msg
		for i := range v.Edit.Keys {
			k := &v.Edit.Keys[i]
			if s, ok := posted[k.Input]; ok && len(s) > 0 {
				k.Changed = s[0] != k.JSON
				k.JSON = s[0]
			}
		}
		return
	}
	i := -1
	if waiting {
		iid := posted.Get("interrupt_id")
		i = slices.IndexFunc(v.Pending, func(p web.PendingView) bool { return p.ID == iid })
		if iid == "" && len(v.Pending) == 1 {
			i = 0
		}
	}
	if i < 0 {
		v.Refused = &web.RefusedAnswer{Message: msg, Kept: keptText(posted)}
		return
	}
	p := &v.Pending[i]
	p.Refused, p.Response = msg, posted.Get("value")
	if p.Form == nil {
		return
	}
	var fe *FieldError
	errors.As(err, &fe)
	for k := range p.Form.Fields {
		f := &p.Form.Fields[k]
		f.Value = posted.Get(f.Input)
		if fe != nil && fe.Field == f.Name {
			f.Error = fe.Reason
		}
	}
}

// keptText is what a person typed into a refused answer, as text to copy
// when the question it was for is gone.
func keptText(posted url.Values) string {
	switch posted.Get("action") {
	case "respond":
		return posted.Get("value")
	case "form", "edit":
		var lines []string
		for _, name := range slices.Sorted(maps.Keys(posted)) {
			key, ok := strings.CutPrefix(name, formFieldPrefix)
			if !ok {
				key, ok = strings.CutPrefix(name, stateFieldPrefix)
			}
			if ok && strings.TrimSpace(posted.Get(name)) != "" {
				lines = append(lines, key+": "+posted.Get(name))
			}
		}
		return strings.Join(lines, "\n")
	}
	return ""
}

// stateEditor is the approval panel's state editor over the values the
// page shows: a value cut for the page is left empty (an empty field
// keeps the value), so an edit never writes back a truncated preview.
func stateEditor(values []web.ValueRow, interrupted bool) *web.StateEdit {
	e := &web.StateEdit{Interrupted: interrupted}
	for _, val := range values {
		k := web.StateKey{Key: val.Key, Input: stateFieldPrefix + val.Key, JSON: val.JSON, TooBig: val.Truncated}
		if val.Truncated {
			k.JSON = ""
		}
		e.Keys = append(e.Keys, k)
	}
	return e
}

// editAndContinue applies the state editor's changed keys to a paused
// thread and lets it go on. Like LangGraph Studio's "Edit node state",
// the edit is applied at the head as the node that ran last (the engine
// infers it: the paused node's predecessor, or the node itself after an
// interrupt-after breakpoint), so the head's next tasks are the paused
// ones again; then the run continues from the edit: a breakpoint's node
// runs, an interrupted node runs again on the edited state and asks
// again. Keys left as they were, or left empty, are not written.
func editAndContinue(r *http.Request, rt Routes, t runs.Thread) error {
	if t.Status != runs.StatusInterrupted {
		return fmt.Errorf("%w: thread %q is %s, not paused; edit its state from the checkpoints page", runs.ErrNotInterrupted, t.ID, t.Status)
	}
	ctx := r.Context()
	_, p, err := threadGraph(ctx, rt, t.ID)
	if err != nil {
		return err
	}
	snap, err := p.GetState(ctx, checkpoints.Config{ThreadID: t.ID})
	if err != nil {
		return err
	}
	// The edit is for the pause the person saw: if another tab answered
	// and the run paused again since, it would land on a pause they never
	// saw.
	if seen := r.PostForm.Get("head"); seen != "" && seen != snap.Config.CheckpointID {
		return fmt.Errorf("%w: thread %q moved on since this page showed it (it paused again at checkpoint %s); reload the page to edit the current pause", runs.ErrNotInterrupted, t.ID, snap.Config.CheckpointID)
	}
	changes := map[string]any{}
	for name, vals := range r.PostForm {
		key, ok := strings.CutPrefix(name, stateFieldPrefix)
		if !ok || len(vals) == 0 || strings.TrimSpace(vals[0]) == "" {
			continue
		}
		v, err := DecodeJSON(vals[0])
		if err != nil {
			return fmt.Errorf("state key %q: %w", key, err)
		}
		if cur, ok := snap.Values[key]; ok && encodeJSON(jsonShape(cur), false) == encodeJSON(v, false) {
			continue
		}
		changes[key] = v
	}
	if len(changes) == 0 {
		return fmt.Errorf("%w: no state key was changed; change a value, or go on without editing", runs.ErrInvalidInput)
	}
	if _, err := rt.Runs.UpdateState(ctx, t.ID, "", changes, ""); err != nil {
		return err
	}
	if _, err := rt.Runs.RunFrom(ctx, t.ID, ""); err != nil {
		return fmt.Errorf("the edit was saved, but the run could not go on: %w", err)
	}
	return nil
}
