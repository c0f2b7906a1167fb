package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// RunLogLimit is how many of a thread's latest runs a page folds in.
const RunLogLimit = 200

// The origins the Studio's pages give a resume; an API caller names its
// own (ResumeOptions.Origin), and one that names none shows as OriginAPI.
const (
	OriginThreadPage      = "Studio thread page"
	OriginCheckpointsPage = "Studio checkpoints page"
	OriginAPI             = "API"
)

// AnswerShownBytes is how much of an interrupt's question and answer the
// run log keeps and the timeline shows (one line of JSON).
const AnswerShownBytes = 300

// ResumeOptions are Resume's optional settings.
type ResumeOptions struct {
	// Origin says through which page or API the answer came ("Studio
	// thread page"); pages and other tabs show it next to the answer. It
	// must never carry a secret: it is shown to everyone who can see the
	// thread. Cut to MaxOriginBytes.
	Origin string
}

// recorder builds one run's RunRecord from the events the run publishes
// (the same events a live tab applies), so a page rebuilt from the run
// log shows what the tab showed. It records tasks of the thread's graph
// only; subgraph tasks are the retained live events' business.
type recorder struct {
	mu  sync.Mutex
	rec RunRecord
	// at indexes rec.Tasks by step and task id; open holds the tasks
	// planned or started and not yet ended, by the same key, and order
	// their keys in plan order (ended ones are skipped when read).
	at    map[string]int
	open  map[string]*TaskOutcome
	order []string
}

func newRecorder(rec RunRecord) *recorder {
	return &recorder{rec: rec, at: map[string]int{}, open: map[string]*TaskOutcome{}}
}

func taskKey(step int, task string) string { return strconv.Itoa(step) + "-" + task }

// observe takes one published event.
func (r *recorder) observe(ev Event) {
	if ev.Kind == KindRunTakeover {
		r.mu.Lock()
		if len(r.rec.Takeovers) < MaxTakeovers {
			r.rec.Takeovers = append(r.rec.Takeovers, Takeover{Attempt: ev.Attempt, At: ev.Time})
		}
		r.mu.Unlock()
		return
	}
	if ev.Path != "" || ev.TaskID == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := taskKey(ev.Step, ev.TaskID)
	switch ev.Kind {
	case KindTaskPlanned, KindTaskStarted, KindTaskRetried:
		o := r.open[key]
		if o == nil {
			if ev.Kind == KindTaskRetried {
				return
			}
			o = &TaskOutcome{Step: ev.Step, TaskID: ev.TaskID, Node: cutText(ev.Node, MaxNodeNameBytes)}
			r.open[key] = o
			r.order = append(r.order, key)
		}
		// The attempt a cancelled task was at.
		o.Attempts = max(o.Attempts, ev.Attempt)
		return
	}
	out := TaskOutcome{Step: ev.Step, TaskID: ev.TaskID, Node: cutText(ev.Node, MaxNodeNameBytes), Attempts: ev.Attempt}
	switch ev.Kind {
	case KindTaskFinished:
		out.Outcome, out.DurationMS = OutcomeDone, ev.DurationMS
		if ev.Cached {
			out.Outcome = OutcomeCached
		}
	case KindTaskFailed:
		out.Outcome, out.Error = OutcomeFailed, cutText(ev.Error, MaxOutcomeErrorBytes)
	case KindTaskInterrupted:
		out.Outcome = OutcomeInterrupted
	case KindTaskCancelled:
		out.Outcome = OutcomeCancelled
	default:
		return
	}
	delete(r.open, key)
	if len(r.order) > 2*len(r.open)+64 {
		// Keep order as long as what is open, not as the run.
		r.order = slices.DeleteFunc(r.order, func(k string) bool { _, ok := r.open[k]; return !ok })
	}
	if i, ok := r.at[key]; ok {
		r.rec.Tasks[i] = out
		return
	}
	if len(r.rec.Tasks) >= MaxRunTasks {
		// Keep the latest: drop the oldest tenth, and index again.
		r.rec.Tasks = slices.Delete(r.rec.Tasks, 0, MaxRunTasks/10)
		clear(r.at)
		for i, t := range r.rec.Tasks {
			r.at[taskKey(t.Step, t.TaskID)] = i
		}
	}
	r.at[key] = len(r.rec.Tasks)
	r.rec.Tasks = append(r.rec.Tasks, out)
}

// unfinished returns the tasks that were at work and have no outcome:
// when the run ended in an error or was cancelled, they were cancelled.
func (r *recorder) unfinished() []TaskOutcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []TaskOutcome
	for _, k := range r.order {
		if o, ok := r.open[k]; ok {
			out = append(out, *o)
		}
	}
	return out
}

// snapshot is the record as it stands.
func (r *recorder) snapshot() RunRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rec.Normalized()
}

func (r *recorder) end(status Status, errText string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Status, r.rec.Error, r.rec.Ended = status, errText, at
}

// saveRunFenced writes a run's record. A failure goes to the error handler and
// the record to the registry writer, which stores it (or a later record
// of the same run) once the run log takes writes again, so a reload does
// not lose what the live tab showed. Writes of different runs go on at
// once; the run log keeps a run's end whatever order its records land
// in (RunLog.SaveRun).
//
// A run holding a lease writes with its fencing token (0 for none): a
// record refused by the fence (another process took the run over) is
// dropped, never written again.
func (m *Manager) saveRunFenced(rec RunRecord, thread string, fence int64) {
	ctx, cancel := storeContext()
	defer cancel()
	err := m.runLog.SaveRun(fenced(ctx, thread, fence), rec)
	if errors.Is(err, checkpoints.ErrFenced) {
		m.report(fmt.Errorf("runs: save run %q of thread %q: %w", rec.RunID, rec.Thread, err))
		return
	}
	key := [2]string{rec.Thread, rec.RunID}
	m.mu.Lock()
	if err != nil {
		// The latest record of the run waits; a start record never
		// replaces a waiting end.
		if cur, ok := m.unsavedRuns[key]; !ok || cur.Ended.IsZero() || !rec.Ended.IsZero() {
			m.unsavedRuns[key] = unsavedRun{rec, fence}
		}
	} else if cur, ok := m.unsavedRuns[key]; ok && (cur.Ended.IsZero() || !rec.Ended.IsZero()) {
		delete(m.unsavedRuns, key) // what waited is older than what landed
	}
	m.mu.Unlock()
	if err != nil {
		m.report(fmt.Errorf("runs: save run %q of thread %q, will retry: %w", rec.RunID, rec.Thread, err))
		m.wakeWriter()
	}
}

// headCheckpoint is the id of the thread's latest checkpoint, "" when it
// has none: the checkpoint a run without one given starts from.
func headCheckpoint(ctx context.Context, g engine.Compiled, threadID string) (string, error) {
	tups, err := g.Pregel().Checkpointer().List(ctx, checkpoints.ListQuery{ThreadID: threadID}, checkpoints.ListOptions{Limit: 1, Headers: true})
	if err != nil {
		return "", fmt.Errorf("runs: read the head of thread %q: %w", threadID, err)
	}
	if len(tups) == 0 {
		return "", nil
	}
	return tups[0].Config.CheckpointID, nil
}

// answersOf describes the answers a resume gives the pending interrupts
// (one Answer without an interrupt for a breakpoint's continue).
func answersOf(pending []engine.Interruption, answer any, origin string, at time.Time) []Answer {
	// One line of JSON, cut short: a timeline row shows it whole.
	preview := func(v any) string {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // pages escape; \u003c only hurts reading
		if err := enc.Encode(v); err != nil {
			return "(not JSON: " + err.Error() + ")"
		}
		return cutText(strings.TrimSpace(buf.String()), AnswerShownBytes)
	}
	mk := func(i engine.Interruption, v any) Answer {
		return Answer{InterruptID: cutText(i.ID, AnswerPreviewBytes), Node: cutText(i.Node, MaxNodeNameBytes), Question: preview(i.Value), Answer: preview(v), Origin: origin, At: at}
	}
	var out []Answer
	switch a := answer.(type) {
	case ByID:
		for _, i := range pending {
			if v, ok := a[i.ID]; ok && len(out) < MaxRunAnswers {
				out = append(out, mk(i, v))
			}
		}
	default:
		if len(pending) == 0 {
			return []Answer{{Origin: origin, At: at}}
		}
		out = append(out, mk(pending[0], answer))
	}
	return out
}

// answerEvents are the interrupt_answered events of a run's answers.
func answerEvents(threadID, runID string, as []Answer) []Event {
	out := make([]Event, 0, len(as))
	for _, a := range as {
		ev := Event{Kind: KindInterruptAnswered, Thread: threadID, RunID: runID, Node: a.Node, Answer: a.Answer, Origin: originText(a.Origin), Time: a.At}
		if a.InterruptID != "" {
			ev.Interrupts = []Interrupt{{ID: a.InterruptID, Node: a.Node, Preview: a.Question}}
		}
		out = append(out, ev)
	}
	return out
}

func originText(o string) string {
	if o == "" {
		return OriginAPI
	}
	return o
}
