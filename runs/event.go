package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/textcut"
)

// Kind names what an Event reports.
type Kind string

// The event kinds. They mirror the engine's events, flattened so that one
// JSON object describes one thing that happened to one task or step.
const (
	KindRunStarted      Kind = "run_started"
	KindTaskPlanned     Kind = "task_planned"
	KindTaskStarted     Kind = "task_started"
	KindTaskRetried     Kind = "task_retried"
	KindTaskFinished    Kind = "task_finished"
	KindTaskFailed      Kind = "task_failed"
	KindTaskInterrupted Kind = "task_interrupted"
	// KindTaskCancelled: a task at work when its run ended without it (a
	// sibling failed, or the run was cancelled). The engine says nothing
	// of such a task; the Manager reports it before run_finished.
	KindTaskCancelled Kind = "task_cancelled"
	// KindInterruptAnswered: a resume answered a pending interrupt (one
	// event per interrupt; without Interrupts, a breakpoint continued).
	// It follows the resume's run_started; open tabs retire their
	// approval panels on it.
	KindInterruptAnswered Kind = "interrupt_answered"
	KindBarrier           Kind = "barrier"
	KindCheckpoint        Kind = "checkpoint"
	KindRunFinished       Kind = "run_finished"
	// KindCaughtUp ends the catch-up a subscriber gets on Subscribe: what
	// follows is live.
	KindCaughtUp Kind = "caught_up"
)

// Bump is one channel whose version a barrier changed.
type Bump struct {
	Channel string `json:"channel"`
	Old     int64  `json:"old"`
	New     int64  `json:"new"`
}

// Interrupt is a pending interrupt as events and pages show it: its id,
// the node that raised it, and its value as indented JSON cut to
// PreviewBytes (the full value stays on the server).
type Interrupt struct {
	ID        string `json:"id"`
	Node      string `json:"node,omitempty"`
	Preview   string `json:"preview"`
	Truncated bool   `json:"truncated,omitempty"`
}

// PreviewBytes caps the JSON of an interrupt value carried by an event, so
// a huge payload never travels to every tab with every event.
const PreviewBytes = 4 << 10

// Event is one thing that happened on a thread, small enough to send to a
// browser as it is: it never carries the whole state.
type Event struct {
	// Seq orders live events of a thread (from 1); catch-up events have 0.
	Seq  uint64 `json:"seq,omitempty"`
	Kind Kind   `json:"kind"`
	// Catchup is true for events rebuilt from checkpoints on Subscribe.
	Catchup bool `json:"catchup,omitempty"`
	// Thread is the thread the event happened on. It is not in the
	// JSON: a subscription, and the websocket that carries it, are of
	// one thread, and repeating its id would make every event of a
	// burst, for every tab, bigger by a third.
	Thread string `json:"-"`
	// RunID is set on the events that open, close or report a run
	// (run_started, run_finished, caught_up). A thread has one active
	// run at a time and its events arrive in order, so every other
	// event belongs to the run of the run_started before it; repeating
	// the id on each would cost what Thread would.
	RunID string `json:"run,omitempty"`
	Step  int    `json:"step"`
	Node  string `json:"node,omitempty"`
	// Path is, on a task event of a subgraph, the qualified name of the
	// subgraph node it runs in ("research", or "research:inner" for a
	// subgraph inside it): Path + ":" + Node names the task's node in an
	// expanded drawing (element id n-research:plan). Step is then the
	// subgraph's own step. Empty for the thread's graph.
	Path   string `json:"path,omitempty"`
	TaskID string `json:"task,omitempty"`
	// Triggers are the channels whose update planned the task.
	Triggers []string `json:"triggers,omitempty"`
	Attempt  int      `json:"attempt,omitempty"`
	// DurationMS is how long a finished task took, in milliseconds.
	DurationMS float64 `json:"ms,omitempty"`
	// BackoffMS is the wait before a retried task's next attempt.
	BackoffMS  float64     `json:"backoff_ms,omitempty"`
	Cached     bool        `json:"cached,omitempty"`
	Error      string      `json:"error,omitempty"`
	Writes     []string    `json:"writes,omitempty"`
	Bumps      []Bump      `json:"bumps,omitempty"`
	Interrupts []Interrupt `json:"interrupts,omitempty"`
	Checkpoint string      `json:"checkpoint,omitempty"`
	// Parent is, on a checkpoint event, the checkpoint's parent: a page
	// whose last checkpoint is not it has been left on another branch.
	Parent string   `json:"parent,omitempty"`
	Source string   `json:"source,omitempty"`
	Next   []string `json:"next,omitempty"`
	// Edges are, on a task_planned event, the graph edges that caused the
	// task: from each task that wrote the channel that triggered it (or
	// sent it), to its node. See firedEdges.
	Edges []Edge `json:"edges,omitempty"`
	// Values are, on a checkpoint event, the top-level state keys that
	// changed since the previous checkpoint event of the thread, each
	// previewed (never the whole value). With Reset set they are instead
	// the whole state: keys not listed are gone.
	Values []ValueChange `json:"values,omitempty"`
	Reset  bool          `json:"reset,omitempty"`
	// Cursor is, on a caught_up event, where the subscriber stands in the
	// thread's live log: pass it to SubscribeFrom to resume after it.
	Cursor string `json:"cursor,omitempty"`
	// RunKind is, on a run_started event, how the run started (start,
	// resume, rerun); Origin, there and on interrupt_answered, the page
	// or API it came through. Answer is an interrupt_answered event's
	// answer, previewed.
	RunKind RunKind `json:"run_kind,omitempty"`
	Origin  string  `json:"origin,omitempty"`
	Answer  string  `json:"answer,omitempty"`
	// Message is a message_chunk event's reply id, Text its text (see
	// KindMessageChunk); Truncated says a catch-up's text was cut at
	// StreamTextBytes.
	Message   string `json:"message,omitempty"`
	Text      string `json:"text,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	// TextDropped says a catch-up message_chunk's reply is still
	// streaming but its text was dropped: more than StreamReplies replies
	// streamed at once, and it was the oldest.
	TextDropped bool `json:"text_dropped,omitempty"`
	// Call is a prompt_cache event's model call (see KindPromptCache).
	Call *ModelCall `json:"call,omitempty"`
	// Status is the thread's status after a run_finished event.
	Status Status    `json:"status,omitempty"`
	Time   time.Time `json:"time"`

	// encoded is the event's JSON, made once when it was published to
	// subscribers (every open tab sends the same bytes).
	encoded []byte
	// root is, on a subgraph's task event, the id of the thread graph's
	// task the subgraph runs in (where a catch-up places the event).
	root string
	// rootStep is, on a message_chunk event, the thread graph's step it
	// streams in (its Step, or for a subgraph's the step of the task it
	// runs in).
	rootStep int
	// src is the engine event this one was converted from: the hub's
	// tracker reads writes, sends and values from it, then drops it (it
	// may hold the whole state, which events never carry).
	src engine.Event
}

// kindTrack marks an event that only feeds the hub's tracker (the hidden
// __start__ task's writes, for example); it is never published.
const kindTrack Kind = ""

// Edge is a graph edge that fired, as [from, to] (a pair, not an
// object: it is in every task_planned event every tab decodes); its
// element id in the graph's SVG is e-<from>-<to>.
type Edge [2]string

// ValueChange is one top-level state key in a values update: Op is
// added, changed or removed ("" in a Reset for a key the step did not
// change); JSON is the new value as indented JSON cut to
// ValuePreviewBytes and, when that cut it, Size the full value's bytes.
type ValueChange struct {
	Key       string `json:"key"`
	Op        string `json:"op,omitempty"`
	JSON      string `json:"json,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	Size      int    `json:"size,omitempty"`
}

// The value change ops.
const (
	OpAdded   = "added"
	OpChanged = "changed"
	OpRemoved = "removed"
)

// ValuePreviewBytes caps one state key's JSON on a page or in an event;
// the rest is fetched on demand (a checkpoint's value route), so a 5 MB
// state costs a browser a few KB per key.
const ValuePreviewBytes = 2 << 10

// Encoded returns the event's JSON as published, or nil for events that
// were not published (catch-up events); encode those yourself.
func (e Event) Encoded() []byte { return e.encoded }

// runEvents converts one run's engine events. The engine reports a
// subgraph's events through the run's listener too: its task events carry
// the subgraph's namespace and become task events with a Path; its plans,
// barriers and checkpoints are the subgraph's own business (its channels,
// its state) and are not published, nor fed to the hub's tracker, whose
// edges and values are the thread graph's.
type runEvents struct {
	thread, runID string
	// step is the thread graph's latest planned step: a subgraph's
	// chunks stream in it.
	step int
}

func newRunEvents(thread, runID string) *runEvents {
	return &runEvents{thread: thread, runID: runID}
}

// convert is fromEngine for the thread graph's events and keeps only the
// task events, with their Path, of a subgraph's; a custom event carrying
// a promptcache.Record, of either, is a prompt_cache event.
func (r *runEvents) convert(ev engine.Event, now time.Time) []Event {
	if x, ok := r.promptCall(ev, now); ok {
		return []Event{x}
	}
	ns := r.namespace(ev)
	if sp, ok := ev.(engine.StepPlanned); ok && ns == "" {
		r.step = sp.Step
	}
	if ns == "" {
		return fromEngine(r.thread, r.runID, ev, now)
	}
	path, root := subgraphPath(ns)
	var out []Event
	for _, e := range fromEngine(r.thread, "", ev, now) {
		if !isTaskKind(e.Kind) {
			continue
		}
		e.src, e.Path, e.root = nil, path, root
		out = append(out, e)
	}
	return out
}

// namespace says which graph ev comes from: "" for the thread's graph,
// else the subgraph's checkpoint namespace.
func (r *runEvents) namespace(ev engine.Event) string {
	switch e := ev.(type) {
	case engine.StepPlanned:
		return e.Namespace
	case engine.BarrierApplied:
		return e.Namespace
	case engine.ValuesEmitted:
		return e.Namespace
	case engine.CheckpointSaved:
		return e.Config.Namespace
	case engine.TaskStarted:
		return e.Task.Namespace
	case engine.TaskRetried:
		return e.Task.Namespace
	case engine.Custom:
		return e.Task.Namespace
	case engine.TaskFinished:
		return e.Task.Namespace
	case engine.TaskFailed:
		return e.Task.Namespace
	case engine.TaskInterrupted:
		return e.Task.Namespace
	}
	return ""
}

// subgraphPath turns a subgraph's checkpoint namespace
// ("research:<task id>|inner:<task id>") into the qualified name of its
// subgraph node ("research:inner") and the id of the thread graph's task
// it runs in.
func subgraphPath(ns string) (path, root string) {
	parts := strings.Split(ns, "|")
	names := make([]string, len(parts))
	for i, p := range parts {
		name, id, _ := strings.Cut(p, ":")
		names[i] = name
		if i == 0 {
			root = id
		}
	}
	return strings.Join(names, ":"), root
}

func isTaskKind(k Kind) bool {
	switch k {
	case KindTaskPlanned, KindTaskStarted, KindTaskRetried, KindTaskFinished, KindTaskFailed, KindTaskInterrupted, KindTaskCancelled:
		return true
	}
	return false
}

// fromEngine converts an engine event. It returns no event for those the
// Studio does not forward (RunFinished is replaced by the manager's own,
// sent after the thread's status is updated; Custom payloads are
// unbounded), except a kindTrack event when the hub's tracker needs to see
// the engine event anyway.
func fromEngine(thread, runID string, ev engine.Event, now time.Time) (out []Event) {
	defer func() {
		// The hub's tracker needs the engine event even when the Studio
		// shows nothing of it (the __start__ task's writes, a plan of
		// only __start__).
		switch ev.(type) {
		case engine.StepPlanned, engine.TaskFinished, engine.BarrierApplied, engine.CheckpointSaved:
			if len(out) == 0 {
				out = []Event{{Kind: kindTrack, Thread: thread}}
			}
			out[0].src = ev
		}
	}()
	base := Event{Thread: thread, Time: now}
	task := func(k Kind, t engine.TaskInfo) Event {
		e := base
		e.Kind, e.Step, e.Node, e.TaskID = k, t.Step, t.Name, t.ID
		return e
	}
	switch e := ev.(type) {
	case engine.RunStarted:
		x := base
		x.Kind, x.RunID = KindRunStarted, runID
		return []Event{x}
	case engine.StepPlanned:
		for _, t := range e.Tasks {
			if t.Name == engine.Start {
				continue
			}
			x := task(KindTaskPlanned, t)
			x.Step = e.Step
			x.Triggers = t.Triggers
			out = append(out, x)
		}
		return out
	case engine.TaskStarted:
		if e.Task.Name == engine.Start {
			return nil
		}
		x := task(KindTaskStarted, e.Task)
		x.Attempt = e.Attempt
		return []Event{x}
	case engine.TaskRetried:
		x := task(KindTaskRetried, e.Task)
		x.Attempt, x.Error, x.BackoffMS = e.Attempt, errText(e.Err), ms(e.Backoff)
		return []Event{x}
	case engine.TaskFinished:
		if e.Task.Name == engine.Start {
			return nil
		}
		x := task(KindTaskFinished, e.Task)
		x.DurationMS, x.Cached, x.Attempt = ms(e.Duration), e.Cached, e.Attempts
		for _, w := range e.Writes {
			x.Writes = append(x.Writes, w.Key)
		}
		return []Event{x}
	case engine.TaskFailed:
		x := task(KindTaskFailed, e.Task)
		x.Error, x.Attempt = errText(e.Err), e.Attempts
		return []Event{x}
	case engine.TaskInterrupted:
		x := task(KindTaskInterrupted, e.Task)
		x.Interrupts = previews(e.Interrupts)
		return []Event{x}
	case engine.BarrierApplied:
		x := base
		x.Kind, x.Step = KindBarrier, e.Step
		for _, b := range e.Bumps {
			x.Bumps = append(x.Bumps, Bump{Channel: b.Channel, Old: b.Old, New: b.New})
		}
		return []Event{x}
	case engine.CheckpointSaved:
		x := base
		x.Kind, x.Step = KindCheckpoint, e.Metadata.Step
		x.Checkpoint, x.Source, x.Next = e.Config.CheckpointID, string(e.Metadata.Source), e.Next
		if e.Parent != nil {
			x.Parent = e.Parent.CheckpointID
		}
		return []Event{x}
	}
	return nil
}

// previews renders interrupt values for events and pages.
func previews(is []engine.Interruption) []Interrupt {
	out := make([]Interrupt, 0, len(is))
	for _, i := range is {
		p, cut := Preview(i.Value, PreviewBytes)
		out = append(out, Interrupt{ID: i.ID, Node: i.Node, Preview: p, Truncated: cut})
	}
	return out
}

// Preview renders v as indented JSON of at most max bytes (cut on a rune
// boundary); truncated says whether anything was cut.
func Preview(v any, max int) (s string, truncated bool) {
	s, truncated, _ = PreviewSize(v, max)
	return s, truncated
}

// PreviewSize is Preview that also reports the full JSON's size in bytes
// (for "2.1 MB, first 2 KB shown").
func PreviewSize(v any, max int) (s string, truncated bool, size int) {
	// Pages escape the text; JSON's own HTML escaping (\u003c) would
	// only make it harder to read.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		s = "(value cannot be shown as JSON: " + err.Error() + ")"
		return s, false, len(s)
	}
	b := bytes.TrimRight(buf.Bytes(), "\n")
	if len(b) <= max {
		return string(b), false, len(b)
	}
	return string(textcut.Cut(b, max)), true, len(b)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	var intr *engine.Interrupted
	if errors.As(err, &intr) {
		return ""
	}
	return err.Error()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
