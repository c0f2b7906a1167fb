package checkpoints

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// FormatVersion is the Checkpoint.V written by this package.
const FormatVersion = 1

// Special write channels. Writes to them use fixed indexes (WriteIndex) and
// are upserted; writes to any other channel are first-write-wins per
// (task, index), so a re-run task never overwrites its earlier writes.
const (
	ErrorChannel     = "__error__"
	ScheduledChannel = "__scheduled__"
	InterruptChannel = "__interrupt__"
	ResumeChannel    = "__resume__"
	TasksChannel     = "__pregel_tasks"
)

// WriteIndex returns the stored index of the i-th write of a task to
// channel: upstream's WRITES_IDX_MAP for the special channels, i otherwise.
func WriteIndex(channel string, i int) int {
	switch channel {
	case ErrorChannel:
		return -1
	case ScheduledChannel:
		return -2
	case InterruptChannel:
		return -3
	case ResumeChannel:
		return -4
	}
	return i
}

// IsSpecial reports whether channel is one of the upserted special channels.
func IsSpecial(channel string) bool { return WriteIndex(channel, 0) < 0 }

// Config addresses a checkpoint: a thread, a namespace within it ("" for
// the root graph, "node:<task id>" for subgraphs, nested with "|"), and a
// checkpoint id ("" means the latest in that thread and namespace).
type Config struct {
	ThreadID     string `json:"thread_id"`
	Namespace    string `json:"checkpoint_ns"`
	CheckpointID string `json:"checkpoint_id,omitempty"`
}

// Checkpoint is the state of a thread's channels after one superstep.
type Checkpoint struct {
	// V is the format version (FormatVersion).
	V int `json:"v"`
	// ID is a time-ordered UUIDv7; it is also the checkpoint's identity in
	// its thread and namespace.
	ID string `json:"id"`
	// TS is when the checkpoint was created.
	TS time.Time `json:"ts"`
	// Next names the tasks the engine planned from this checkpoint, in
	// plan order: the nodes of the superstep that follows it (a node once
	// per Send), as the engine's CheckpointSaved event tells them. It is
	// what was planned, not what is left: a task whose writes are saved
	// against the checkpoint is still named. Empty (not nil): nothing was
	// to run. Nil: unknown (a checkpoint saved by an older version, or by
	// a caller that did not plan); readers then infer the next tasks from
	// the versions, or load the state. In JSON a nil Next is left out.
	// One case differs from planning again from the saved checkpoint: a
	// node triggered only by an UntrackedValue channel (never saved) is
	// named, as it ran next, where a resume from the checkpoint would not
	// run it.
	Next []string `json:"next,omitzero"`
	// ChannelValues holds the JSON encoding of each channel that has a
	// value. Channels with a version but no value (a cleared ephemeral
	// channel) are absent. Passed to Saver.Put it may hold only the
	// channels in newVersions (the engine encodes only what changed);
	// returned by Saver.Get it holds every channel of ChannelVersions that
	// has a value, and is never nil.
	ChannelValues map[string]json.RawMessage `json:"channel_values"`
	// ChannelVersions holds every channel's version; versions increase and
	// one superstep gives every channel it changes the same new version.
	ChannelVersions map[string]int64 `json:"channel_versions"`
	// VersionsSeen records, per node (and the "__input__" and
	// "__interrupt__" pseudo-nodes), the versions of the trigger channels
	// it last ran on.
	VersionsSeen map[string]map[string]int64 `json:"versions_seen"`
	// UpdatedChannels are the channels updated by the step that produced
	// this checkpoint, sorted; nil when unknown.
	UpdatedChannels []string `json:"updated_channels"`
}

// Source says what produced a checkpoint.
type Source string

// The checkpoint sources, as upstream.
const (
	SourceInput  Source = "input"  // input to invoke/stream
	SourceLoop   Source = "loop"   // a superstep of the loop
	SourceUpdate Source = "update" // a manual state update
	SourceFork   Source = "fork"   // a copy of another checkpoint (replay, __copy__)
)

// Metadata describes a checkpoint. It is stored as a flat JSON object:
// the known fields plus every key of Extra (user keys from the run's
// configuration). Filters match against that object.
type Metadata struct {
	Source Source `json:"source"`
	// Step is -1 for the first input checkpoint, 0 for the first loop step.
	Step int `json:"step"`
	// Parents maps each parent namespace to the checkpoint id the
	// subgraph ran under ({} at the root).
	Parents map[string]string `json:"parents"`
	// RunID identifies the run that wrote the checkpoint, if known.
	RunID string `json:"run_id,omitempty"`
	// Extra holds any other keys. Keys that collide with the fields above
	// are ignored when encoding.
	Extra map[string]any `json:"-"`
}

// Write is one value written by a task to a channel.
type Write struct {
	Channel string          `json:"channel"`
	Value   json.RawMessage `json:"value"`
}

// PendingWrite is a write saved against a checkpoint by the task that made
// it, before the next checkpoint exists.
type PendingWrite struct {
	TaskID  string          `json:"task_id"`
	Channel string          `json:"channel"`
	Value   json.RawMessage `json:"value"`
}

// Tuple is a saved checkpoint with everything needed to resume from it.
type Tuple struct {
	Config     Config
	Checkpoint *Checkpoint
	Metadata   Metadata
	// ParentConfig addresses the checkpoint this one followed, nil for the
	// first checkpoint of a namespace.
	ParentConfig *Config
	// PendingWrites are the writes saved against this checkpoint, ordered
	// by task id then write index.
	PendingWrites []PendingWrite
}

// ListOptions narrow List. The zero value lists everything, newest first.
type ListOptions struct {
	// Filter keeps checkpoints whose metadata contains every key/value
	// here, with the semantics of Postgres jsonb containment (@>): nested
	// objects match as subsets, every element of a filter array must be
	// contained in some element of the stored array, null matches only
	// null, and numbers compare by value (42 matches 42.0). Keys are
	// literal: "a.b" is the key "a.b", not a path; nest objects to reach
	// inside. Strings with NUL or lone surrogates are an error wrapping
	// ErrInvalidFilter (nothing stored can contain them).
	Filter map[string]any
	// Before keeps checkpoints older than this checkpoint id. When the
	// listing is limited to one thread and Before names a checkpoint of
	// that thread, "older" means earlier in the thread's sequence (the
	// order in which checkpoints were saved), so a page cursor is exact
	// even when ids from different processes are not in clock order;
	// otherwise ids are compared as strings, as upstream.
	Before string
	// Limit caps the number of tuples; 0 means no limit (the Go zero
	// value, where upstream's limit=0 returns nothing) and a negative
	// limit is an error wrapping ErrInvalidFilter.
	Limit int
	// MetadataOnly leaves Checkpoint.ChannelValues and PendingWrites nil,
	// so a history page loads no channel values.
	MetadataOnly bool
	// Headers implies MetadataOnly and may also leave the checkpoint's
	// version maps and updated channels empty (Checkpoint then carries
	// only V, ID, TS and Next) and an empty Metadata.Parents nil. Savers that do
	// not distinguish return MetadataOnly tuples. It is the cheapest
	// listing, for history pages.
	Headers bool
}

// PruneStrategy says what Prune keeps.
type PruneStrategy int

const (
	// KeepLatest keeps the newest checkpoint of each namespace of each
	// thread, with its pending writes.
	KeepLatest PruneStrategy = iota + 1
	// DeleteAll removes every checkpoint of the threads.
	DeleteAll
)

// Saver persists checkpoints. Implementations are safe for concurrent use
// and pass the conformance suite in package checkpointstest.
//
// Ordering: every checkpoint gets a per-thread sequence number when it is
// first saved. "Latest" is the highest sequence of a thread and namespace,
// and a listing of one thread is newest first by that sequence (checkpoint
// ids, time-ordered UUIDv7s from NewID, break ties). A listing across
// threads is newest first by checkpoint id.
//
// Strings: values, pending writes and metadata must be valid JSON in valid
// UTF-8 without NUL characters (raw or as \u0000) and without lone UTF-16
// surrogate escapes. Such input is rejected with an error wrapping
// ErrInvalidValue rather than silently altered (upstream strips NUL from
// metadata): Postgres jsonb cannot hold either, and a value that comes back
// different from what was saved is worse than a clear error. Nothing is
// written when Put or PutWrites fails.
type Saver interface {
	// Get returns the checkpoint cfg addresses (the latest of the thread
	// and namespace when cfg.CheckpointID is empty), or nil, nil when there
	// is none or cfg.ThreadID is empty.
	Get(ctx context.Context, cfg Config) (*Tuple, error)
	// List returns the checkpoints q covers, newest first, narrowed by
	// opts. The zero ListQuery covers only the root namespace of every
	// thread; see ListQuery.
	List(ctx context.Context, q ListQuery, opts ListOptions) ([]*Tuple, error)
	// Put saves cp as the successor of cfg.CheckpointID (its parent, when
	// not empty) and returns the new checkpoint's config: exactly the
	// thread, namespace and cp.ID. Only the values of channels in
	// newVersions are stored, and cp.ChannelValues may hold only those.
	// Every other channel of cp.ChannelVersions takes the value the parent
	// checkpoint had at the same version, else the value saved earlier in
	// the thread and namespace for that channel and version (as upstream),
	// else none. Looking at the parent first keeps forks correct when two
	// branches give different values the same version number. Saving an id
	// again replaces its checkpoint and metadata and keeps its writes and
	// position. An empty cfg.ThreadID or cp.ID is ErrInvalidConfig.
	Put(ctx context.Context, cfg Config, cp *Checkpoint, md Metadata, newVersions map[string]int64) (Config, error)
	// PutWrites saves writes of one task against the checkpoint cfg
	// addresses (cfg.ThreadID and cfg.CheckpointID are required, else
	// ErrInvalidConfig). The i-th write is stored at WriteIndex(channel, i):
	// a regular write that already exists for (taskID, index) is kept
	// (first write wins, so saving again is idempotent), a special one is
	// replaced. taskPath is accepted for upstream parity and not returned.
	PutWrites(ctx context.Context, cfg Config, writes []Write, taskID, taskPath string) error
	// DeleteThread removes every checkpoint and write of a thread, in all
	// namespaces. A missing thread is not an error.
	DeleteThread(ctx context.Context, threadID string) error
	// CopyThread copies every checkpoint and write of src to dst, keeping
	// ids and order. A missing source leaves dst empty. dst must have no
	// checkpoints (ErrThreadExists otherwise), and src and dst must be
	// different non-empty ids (ErrInvalidConfig).
	CopyThread(ctx context.Context, src, dst string) error
	// Prune applies strategy to each of the threads. Missing threads are
	// skipped; an unknown strategy is ErrInvalidConfig.
	Prune(ctx context.Context, threadIDs []string, strategy PruneStrategy) error
	// DeleteForRuns removes the checkpoints (and their writes) whose
	// metadata run_id is one of runIDs, in every thread and namespace. An
	// empty list is a no-op.
	DeleteForRuns(ctx context.Context, runIDs []string) error
}

// ListQuery says which threads and namespaces List covers.
type ListQuery struct {
	// ThreadID limits the listing to one thread; empty means all threads.
	ThreadID string
	// Namespace limits the listing to one namespace when AllNamespaces is
	// false. The root namespace is "".
	Namespace string
	// AllNamespaces lists every namespace.
	AllNamespaces bool
}

// Errors a Saver returns; test with errors.Is.
var (
	// ErrInvalidConfig means a required part of a Config (thread id,
	// checkpoint id) is missing.
	ErrInvalidConfig = errors.New("checkpoints: invalid config")
	// ErrInvalidFilter means a list option (a metadata filter key or
	// value, a negative limit) cannot be used.
	ErrInvalidFilter = errors.New("checkpoints: invalid metadata filter")
	// ErrThreadExists means CopyThread's destination already has
	// checkpoints.
	ErrThreadExists = errors.New("checkpoints: thread already exists")
	// ErrInvalidValue means a value or metadata string cannot be stored
	// (NUL byte, lone surrogate, invalid JSON).
	ErrInvalidValue = errors.New("checkpoints: invalid value")
)
