package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/superstep-dev/superstep/internal/textcut"
)

// RunLog keeps, per thread, what its checkpoints do not: for each run how
// it started (a first run, a resume, a re-run, from which checkpoint, and
// through which page or API), each task's outcome as the run saw it
// (cached, cancelled by a sibling's failure, its duration, attempts and
// error), and the interrupt answers a resume gave. The thread page folds
// it into the events it rebuilds from checkpoints, so a reloaded page
// shows what a tab that watched the runs shows.
//
// The Manager writes a run's record twice: when the run has got going
// (kind, origin, answers) and when it ends (its tasks). Records are
// bounded (MaxRunTasks, MaxRunAnswers, the text limits below), so a long
// run costs one row of bounded size, never a write per event.
//
// Implementations: MemoryRunLog in this package, pgthreads.RunLog for
// Postgres; both pass runstest.ExerciseRunLog. Every method checks its
// input with CheckRunRecord, so both accept and refuse the same things.
type RunLog interface {
	// SaveRun creates the run's record or replaces it; a record of a run
	// that has not ended never replaces one that has (a retried start
	// record landing after the end), so writes of one run need no order.
	SaveRun(ctx context.Context, rec RunRecord) error
	// ListRuns returns the thread's latest runs, at most limit of them
	// (0: all), oldest first by Started, ties by run id.
	ListRuns(ctx context.Context, thread string, limit int) ([]RunRecord, error)
	// DeleteRun removes a run's record (a run rolled back or deleted
	// through the API); a missing one is ErrUnknownRun.
	DeleteRun(ctx context.Context, thread, runID string) error
}

// ErrUnknownRun: the thread has no run with that id.
var ErrUnknownRun = errors.New("unknown run")

// RunMeta is what the Agent Server API keeps with a run beyond what the
// Studio records: the assistant it ran, the caller's metadata, the
// request's arguments as sent (the API's run kwargs) and the multitask
// strategy it was created with. Its JSON is at most MaxRunMetaBytes.
type RunMeta struct {
	Assistant string         `json:"assistant_id,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	Kwargs    map[string]any `json:"kwargs,omitempty"`
	Strategy  string         `json:"multitask_strategy,omitempty"`
	// NotStarted says why a pending run ended without starting (it was
	// cancelled while it waited: NotStartedCancelled).
	NotStarted string `json:"not_started,omitempty"`
}

// NotStartedCancelled is RunMeta.NotStarted of a pending run cancelled
// before it started.
const NotStartedCancelled = "cancelled before it started"

// MaxRunMetaBytes caps a RunMeta's JSON.
const MaxRunMetaBytes = 256 << 10

// RunKind says how a run started.
type RunKind string

// The run kinds.
const (
	// RunStart: a run with new input.
	RunStart RunKind = "start"
	// RunResume: an interrupted run answered (or a breakpoint continued).
	RunResume RunKind = "resume"
	// RunFromCheckpoint: a re-run from a checkpoint, or a continuation
	// from the head after an edit.
	RunFromCheckpoint RunKind = "rerun"
)

// The outcomes a TaskOutcome records.
const (
	OutcomeDone        = "done"
	OutcomeCached      = "cached"
	OutcomeFailed      = "failed"
	OutcomeInterrupted = "interrupted"
	// OutcomeCancelled: the task was at work when its run ended without
	// it (a sibling failed, or the run was cancelled); it wrote nothing.
	OutcomeCancelled = "cancelled"
)

// RunRecord is one run of a thread as a RunLog keeps it.
type RunRecord struct {
	Thread string
	RunID  string
	Kind   RunKind
	// From is the checkpoint the run started from: the thread's head
	// when it started, or the checkpoint a re-run forked ("" for a
	// thread's first run).
	From string
	// Origin is the page or API the run was started through, as people
	// read it ("Studio thread page"); "" when unknown.
	Origin  string
	Started time.Time
	// Ended is zero while the run goes on.
	Ended   time.Time
	Status  Status
	Error   string
	Tasks   []TaskOutcome
	Answers []Answer
	// Meta is what the API keeps of the run (nil for the Studio's runs).
	Meta *RunMeta
	// Takeovers are the times another process continued the run after
	// the one running it stopped (at most MaxTakeovers).
	Takeovers []Takeover
}

// Takeover is one continuation of a run by another process (or by its
// own, restarted): its attempt (2 for the first) and when.
type Takeover struct {
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
}

// TaskOutcome is how one task of the thread's graph ended in a run.
type TaskOutcome struct {
	Step       int     `json:"step"`
	TaskID     string  `json:"task"`
	Node       string  `json:"node"`
	Outcome    string  `json:"outcome"`
	DurationMS float64 `json:"ms,omitempty"`
	Attempts   int     `json:"attempts,omitempty"`
	Error      string  `json:"error,omitempty"`
}

// Answer is an interrupt a resume answered: its question and answer as
// JSON previews, where the answer came from and when. An Answer with no
// InterruptID continued a run paused at a breakpoint.
type Answer struct {
	InterruptID string    `json:"id,omitempty"`
	Node        string    `json:"node,omitempty"`
	Question    string    `json:"question,omitempty"`
	Answer      string    `json:"answer,omitempty"`
	Origin      string    `json:"origin,omitempty"`
	At          time.Time `json:"at"`
}

// Limits on a RunRecord; CheckRunRecord enforces them and the Manager
// cuts what it records to them.
const (
	// MaxRunTasks caps the task outcomes of one run; a longer run keeps
	// its latest ones.
	MaxRunTasks = 10_000
	// MaxRunAnswers caps the answers one resume records.
	MaxRunAnswers = 64
	// AnswerPreviewBytes caps an answer's question and answer text.
	AnswerPreviewBytes = 1 << 10
	// MaxOutcomeErrorBytes caps a task's error text in a record.
	MaxOutcomeErrorBytes = 1 << 10
	// MaxOriginBytes caps an origin.
	MaxOriginBytes = 128
)

// CheckRunRecord reports why rec cannot be stored, or nil. Errors wrap
// ErrInvalidInput and name the field.
func CheckRunRecord(rec RunRecord) error {
	if err := CheckThreadID(rec.Thread); err != nil {
		return err
	}
	if !validName.MatchString(rec.RunID) {
		return fmt.Errorf("%w: run id %q: use letters, digits, '.', '_' and '-' (1-128 characters)", ErrInvalidInput, clip(rec.RunID))
	}
	switch rec.Kind {
	case RunStart, RunResume, RunFromCheckpoint:
	default:
		return fmt.Errorf("%w: run %q: unknown kind %q", ErrInvalidInput, rec.RunID, clip(string(rec.Kind)))
	}
	if rec.Status != "" && !slices.Contains(Statuses, rec.Status) {
		return fmt.Errorf("%w: run %q: unknown status %q", ErrInvalidInput, rec.RunID, clip(string(rec.Status)))
	}
	if rec.Started.IsZero() {
		return fmt.Errorf("%w: run %q: no start time", ErrInvalidInput, rec.RunID)
	}
	if len(rec.Tasks) > MaxRunTasks {
		return fmt.Errorf("%w: run %q: %d tasks; the limit is %d", ErrInvalidInput, rec.RunID, len(rec.Tasks), MaxRunTasks)
	}
	if len(rec.Takeovers) > MaxTakeovers {
		return fmt.Errorf("%w: run %q: %d takeovers; the limit is %d", ErrInvalidInput, rec.RunID, len(rec.Takeovers), MaxTakeovers)
	}
	if len(rec.Answers) > MaxRunAnswers {
		return fmt.Errorf("%w: run %q: %d answers; the limit is %d", ErrInvalidInput, rec.RunID, len(rec.Answers), MaxRunAnswers)
	}
	if rec.Meta != nil {
		raw, err := json.Marshal(rec.Meta)
		if err != nil {
			return fmt.Errorf("%w: run %q: metadata or kwargs are not JSON: %v", ErrInvalidInput, rec.RunID, err)
		}
		if len(raw) > MaxRunMetaBytes {
			return fmt.Errorf("%w: run %q: metadata and kwargs are %d bytes of JSON; the limit is %d", ErrInvalidInput, rec.RunID, len(raw), MaxRunMetaBytes)
		}
		if err := checkText(string(raw)); err != nil {
			return fmt.Errorf("%w: run %q: metadata or kwargs %v", ErrInvalidInput, rec.RunID, err)
		}
	}
	texts := []textLimit{{"from", rec.From, 128}, {"origin", rec.Origin, MaxOriginBytes}, {"error", rec.Error, MaxErrorBytes}}
	for _, tk := range rec.Tasks {
		texts = append(texts, textLimit{"task id", tk.TaskID, 256}, textLimit{"node", tk.Node, MaxNodeNameBytes}, textLimit{"task error", tk.Error, MaxOutcomeErrorBytes})
		switch tk.Outcome {
		case OutcomeDone, OutcomeCached, OutcomeFailed, OutcomeInterrupted, OutcomeCancelled:
		default:
			return fmt.Errorf("%w: run %q: task %q: unknown outcome %q", ErrInvalidInput, rec.RunID, clip(tk.TaskID), clip(tk.Outcome))
		}
	}
	for _, a := range rec.Answers {
		texts = append(texts, textLimit{"interrupt id", a.InterruptID, AnswerPreviewBytes}, textLimit{"node", a.Node, MaxNodeNameBytes},
			textLimit{"question", a.Question, AnswerPreviewBytes}, textLimit{"answer", a.Answer, AnswerPreviewBytes}, textLimit{"origin", a.Origin, MaxOriginBytes})
	}
	for _, tx := range texts {
		if len(tx.s) > tx.max {
			return fmt.Errorf("%w: run %q: %s is %d bytes; the limit is %d", ErrInvalidInput, rec.RunID, tx.what, len(tx.s), tx.max)
		}
		if err := checkText(tx.s); err != nil {
			return fmt.Errorf("%w: run %q: %s %v", ErrInvalidInput, rec.RunID, tx.what, err)
		}
	}
	return nil
}

// textLimit is one text field of a record and its limit in bytes.
type textLimit struct {
	what, s string
	max     int
}

// Normalized is rec as every RunLog reads it back: copied, times stamped,
// empty lists nil.
func (rec RunRecord) Normalized() RunRecord {
	rec.Tasks, rec.Answers, rec.Takeovers = slices.Clone(rec.Tasks), slices.Clone(rec.Answers), slices.Clone(rec.Takeovers)
	if rec.Meta != nil {
		// A deep copy: a JSON round trip, as a database gives it back.
		var m RunMeta
		if raw, err := json.Marshal(rec.Meta); err == nil && json.Unmarshal(raw, &m) == nil {
			rec.Meta = &m
		}
	}
	rec.Started = Stamp(rec.Started)
	if !rec.Ended.IsZero() {
		rec.Ended = Stamp(rec.Ended)
	}
	for i := range rec.Answers {
		rec.Answers[i].At = Stamp(rec.Answers[i].At)
	}
	for i := range rec.Takeovers {
		rec.Takeovers[i].At = Stamp(rec.Takeovers[i].At)
	}
	if len(rec.Takeovers) == 0 {
		rec.Takeovers = nil
	}
	if len(rec.Tasks) == 0 {
		rec.Tasks = nil
	}
	if len(rec.Answers) == 0 {
		rec.Answers = nil
	}
	return rec
}

// SortRuns orders records as ListRuns returns them.
func SortRuns(recs []RunRecord) {
	sort.SliceStable(recs, func(i, j int) bool {
		if c := recs[i].Started.Compare(recs[j].Started); c != 0 {
			return c < 0
		}
		return recs[i].RunID < recs[j].RunID
	})
}

// MemoryRunLog is the in-memory RunLog, of a Studio without a database
// and of tests. It keeps at most MemoryRunsPerThread runs per thread.
type MemoryRunLog struct {
	mu   sync.Mutex
	runs map[string][]RunRecord
}

// MemoryRunsPerThread bounds MemoryRunLog: a thread's oldest runs go.
const MemoryRunsPerThread = 256

var _ RunLog = (*MemoryRunLog)(nil)

// NewMemoryRunLog returns an empty run log.
func NewMemoryRunLog() *MemoryRunLog { return &MemoryRunLog{runs: map[string][]RunRecord{}} }

// SaveRun implements RunLog.
func (l *MemoryRunLog) SaveRun(ctx context.Context, rec RunRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckRunRecord(rec); err != nil {
		return err
	}
	rec = rec.Normalized()
	l.mu.Lock()
	defer l.mu.Unlock()
	list := l.runs[rec.Thread]
	if i := slices.IndexFunc(list, func(r RunRecord) bool { return r.RunID == rec.RunID }); i >= 0 {
		if !list[i].Ended.IsZero() && rec.Ended.IsZero() {
			return nil // a late start record never replaces the run's end
		}
		list[i] = rec
	} else {
		list = append(list, rec)
	}
	SortRuns(list)
	if len(list) > MemoryRunsPerThread {
		list = slices.Delete(list, 0, len(list)-MemoryRunsPerThread)
	}
	l.runs[rec.Thread] = list
	return nil
}

// ListRuns implements RunLog.
func (l *MemoryRunLog) ListRuns(ctx context.Context, thread string, limit int) ([]RunRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckThreadID(thread); err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, fmt.Errorf("%w: limit %d: use 0 (no limit) or more", ErrInvalidInput, limit)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	list := l.runs[thread]
	if limit > 0 && len(list) > limit {
		list = list[len(list)-limit:]
	}
	out := make([]RunRecord, len(list))
	for i, r := range list {
		out[i] = r.Normalized()
	}
	return out, nil
}

// DeleteRun implements RunLog.
func (l *MemoryRunLog) DeleteRun(ctx context.Context, thread, runID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckThreadID(thread); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	list := l.runs[thread]
	i := slices.IndexFunc(list, func(r RunRecord) bool { return r.RunID == runID })
	if i < 0 {
		return fmt.Errorf("%w %q of thread %q", ErrUnknownRun, runID, thread)
	}
	l.runs[thread] = slices.Delete(list, i, i+1)
	return nil
}

// cutText makes text storable within max bytes, as cleanText does for
// run errors.
func cutText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	if len(s) <= max {
		return s
	}
	const more = "…"
	return textcut.Cut(s, max-len(more)) + more
}
