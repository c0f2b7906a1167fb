package engine

import (
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
)

// Event is something that happened during a run. The loop builds events
// only when a Listener is set; a listener is called from the loop and from
// task goroutines one event at a time (calls are serialised), and must not
// block for long.
type Event interface{ isEvent() }

// TaskInfo identifies a task in events.
type TaskInfo struct {
	ID       string
	Name     string
	Step     int
	Triggers []string
	// Path is "__pregel_pull" for nodes triggered by channels, or
	// "__pregel_push" with Index for Sends.
	Path  string
	Index int
	// Namespace is the checkpoint namespace of the graph running the task
	// ("" at the root).
	Namespace string
	Input     any
}

// TaskPath is the task's path as upstream writes it (and the Agent Server
// API returns it): ["__pregel_pull", node] for a task its triggers
// started, ["__pregel_push", index] for a Send's. A subgraph's tasks have
// their own paths; Namespace places them.
func (t TaskInfo) TaskPath() []any { return taskPath(t.Path == pushKind, t.Name, t.Index) }

func taskPath(push bool, name string, idx int) []any {
	if push {
		return []any{pushKind, idx}
	}
	return []any{pullKind, name}
}

// ChannelBump is one channel whose version the barrier changed.
type ChannelBump struct {
	Channel string
	Old     int64
	New     int64
}

// RunStarted opens a run.
type RunStarted struct {
	RunID    string
	ThreadID string
	Input    any
}

// StepPlanned lists the tasks of a superstep before any of them runs.
type StepPlanned struct {
	// Namespace is the checkpoint namespace of the graph whose step it
	// is ("" at the root).
	Namespace string
	Step      int
	Tasks     []TaskInfo
}

// TaskStarted reports that a task's node function is about to run.
type TaskStarted struct {
	Task    TaskInfo
	Attempt int
}

// TaskRetried reports a failed attempt that will be retried after Backoff.
type TaskRetried struct {
	Task    TaskInfo
	Attempt int
	Err     error
	Backoff time.Duration
}

// TaskFinished reports a task's writes. Cached is true when the writes
// came from the node cache or from a previous run's pending writes and the
// node did not run.
type TaskFinished struct {
	Task     TaskInfo
	Writes   []KV
	Duration time.Duration
	Cached   bool
	Attempts int
}

// TaskFailed reports a task that failed for good.
type TaskFailed struct {
	Task     TaskInfo
	Err      error
	Attempts int
}

// BarrierApplied reports the end of a superstep: every channel whose
// version changed, and the channels updated (those that may trigger nodes).
type BarrierApplied struct {
	// Namespace is the checkpoint namespace of the graph whose step
	// ended ("" at the root).
	Namespace string
	Step      int
	Bumps     []ChannelBump
	Updated   []string
	// Values is the state after the barrier when a stream channel changed
	// (upstream's "values" stream), nil otherwise.
	Values map[string]any
}

// CheckpointSaved reports a checkpoint (also when no checkpointer is set:
// then Config.CheckpointID names the in-memory checkpoint).
type CheckpointSaved struct {
	Config   checkpoints.Config
	Parent   *checkpoints.Config
	Metadata checkpoints.Metadata
	Values   map[string]any
	Next     []string
	// Tasks are the next tasks (Next's), with what the checkpoint's
	// pending writes say of each: a reported loaded checkpoint may hold
	// results of tasks that ran, errors and interrupts.
	Tasks []TaskState
}

// CheckpointLoaded reports the checkpoint a run continues from (a nil
// input, a Command, a run after a breakpoint, an interrupt, an error or a
// state edit) before anything runs, with its next tasks and the values
// the run starts with: upstream's first tick reports the loaded
// checkpoint again, and a client that builds the branch tree from the
// stream needs it. For every graph of a run with a checkpointer: a
// subgraph that resumes reports its own (under its namespace).
type CheckpointLoaded struct {
	CheckpointSaved
}

// Custom is a payload a node emitted with Emit.
type Custom struct {
	Task    TaskInfo
	Payload any
}

// MessageChunk is a piece of a chat model's reply, streamed from inside a
// node with EmitMessageChunk (upstream's "messages" stream mode). Metadata
// holds upstream's keys (langgraph_step, langgraph_node,
// langgraph_triggers, langgraph_path, langgraph_checkpoint_ns,
// checkpoint_ns, thread_id, run_id) and the model's own (ls_provider,
// ls_model_name, ...).
type MessageChunk struct {
	Task     TaskInfo
	Chunk    any
	Metadata map[string]any
}

// TaskInterrupted reports a task that called Interrupt and waits for an
// answer, with the state its step started from (upstream streams it with
// the interrupts as "values").
type TaskInterrupted struct {
	Task       TaskInfo
	Interrupts []Interruption
	Values     map[string]any
}

// ValuesEmitted reports the state a run resumes from, before its first
// step, as upstream's "values" stream does.
type ValuesEmitted struct {
	// Namespace is the checkpoint namespace of the graph ("" at the
	// root).
	Namespace string
	Step      int
	Values    map[string]any
}

// RunFinished closes a run; Err is nil on success.
type RunFinished struct {
	RunID  string
	Output any
	Err    error
}

func (RunStarted) isEvent()      {}
func (StepPlanned) isEvent()     {}
func (TaskStarted) isEvent()     {}
func (TaskRetried) isEvent()     {}
func (TaskFinished) isEvent()    {}
func (TaskFailed) isEvent()      {}
func (BarrierApplied) isEvent()  {}
func (CheckpointSaved) isEvent() {}
func (Custom) isEvent()          {}
func (RunFinished) isEvent()     {}
func (TaskInterrupted) isEvent() {}
func (ValuesEmitted) isEvent()   {}
func (MessageChunk) isEvent()    {}
