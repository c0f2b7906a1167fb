package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
)

// StateSnapshot is a thread's state at one checkpoint: what the channels
// held, which tasks run next, and what each of those tasks produced when it
// already ran (its result, its error).
type StateSnapshot struct {
	// Values are the state keys with a value (nil in metadata-only
	// history).
	Values       map[string]any
	Next         []string
	Config       checkpoints.Config
	ParentConfig *checkpoints.Config
	Metadata     checkpoints.Metadata
	CreatedAt    time.Time
	Tasks        []TaskState
	// Interrupts are the interrupts waiting for an answer at this
	// checkpoint, across tasks.
	Interrupts []Interruption
	// WritesPending says that every task of the head checkpoint's step
	// finished and saved its writes, but the step's own checkpoint was
	// never written (the process stopped in between). Next is then empty,
	// as upstream reports it, yet the thread is not finished: a run with
	// a nil input applies the saved writes (no task runs again) and goes
	// on. NextAfterWrites are the tasks that run would start with: the
	// next step planned from the values with those writes applied (empty
	// when the writes end the run, which still needs that run to save its
	// last checkpoint). Only set on the head snapshot (GetState without a
	// checkpoint id).
	WritesPending   bool
	NextAfterWrites []string
}

// TaskState is a task planned at a checkpoint, with its outcome if it ran.
type TaskState struct {
	ID   string
	Name string
	// Path is the task's path as upstream writes it: ["__pregel_pull",
	// node], or ["__pregel_push", index] for a Send's task.
	Path []any
	// Error is the error the task failed with, "" otherwise.
	Error string
	// Arg is the argument of a task a Send planned (its whole input);
	// nil for a task its triggers planned, which reads the state.
	Arg any
	// Result holds the task's writes to state keys (a key written several
	// times maps to {"$writes": [...]}); nil when the task has not run.
	Result map[string]any
	// Interrupts the task raised and is waiting on.
	Interrupts []Interruption
	// Subgraph addresses the subgraph state of a task that runs a
	// subgraph (its namespace in the thread); State is that state when
	// asked for with StateOptions.Subgraphs.
	Subgraph *checkpoints.Config
	State    *StateSnapshot
}

// StateOptions tune GetStateWith.
type StateOptions struct {
	// Subgraphs fills TaskState.State for tasks that run subgraphs.
	Subgraphs bool
}

// GetState returns the thread's state at cfg.CheckpointID, or at its latest
// checkpoint. At the latest checkpoint the writes of tasks that already
// succeeded are applied and those tasks leave Next, as upstream; at an
// explicit checkpoint the values are those the step started with.
func (g *Pregel) GetState(ctx context.Context, cfg checkpoints.Config) (*StateSnapshot, error) {
	return g.GetStateWith(ctx, cfg, StateOptions{})
}

// GetStateWith is GetState with options. A cfg.Namespace naming a
// subgraph ("node:<task id>", nested with "|") reads that subgraph's state.
func (g *Pregel) GetStateWith(ctx context.Context, cfg checkpoints.Config, opts StateOptions) (*StateSnapshot, error) {
	if cfg.Namespace != "" {
		sub, err := g.resolve(cfg.Namespace)
		if err != nil {
			return nil, err
		}
		if sub != g {
			saver := sub.cfg.Checkpointer
			if saver == nil {
				saver = g.cfg.Checkpointer
			}
			return sub.getState(ctx, saver, cfg, opts)
		}
	}
	return g.getState(ctx, g.cfg.Checkpointer, cfg, opts)
}

func (g *Pregel) getState(ctx context.Context, saver checkpoints.Saver, cfg checkpoints.Config, opts StateOptions) (*StateSnapshot, error) {
	if saver == nil {
		return nil, fmt.Errorf("%w: GetState needs a graph compiled with a checkpointer", checkpoints.ErrInvalidConfig)
	}
	tup, err := saver.Get(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if tup == nil {
		if cfg.CheckpointID != "" {
			return nil, fmt.Errorf("%w: thread %q has no checkpoint %q", checkpoints.ErrInvalidConfig, cfg.ThreadID, cfg.CheckpointID)
		}
		return &StateSnapshot{Values: map[string]any{}, Config: cfg}, nil
	}
	snap, err := g.snapshot(tup, cfg.CheckpointID == "")
	if err != nil || !opts.Subgraphs {
		return snap, err
	}
	for i := range snap.Tasks {
		st := &snap.Tasks[i]
		if st.Subgraph == nil {
			continue
		}
		// The task's namespace is the full path from the root; its last
		// segment names the subgraph node of g.
		ns := st.Subgraph.Namespace
		if i := strings.LastIndex(ns, "|"); i >= 0 {
			ns = ns[i+1:]
		}
		sub, err := g.subgraphFor(ns)
		if err != nil {
			return nil, err
		}
		inner, err := sub.getState(ctx, saver, *st.Subgraph, opts)
		if err != nil {
			return nil, err
		}
		if inner.Config.CheckpointID != "" {
			st.State = inner
		}
	}
	return snap, nil
}

// HistoryOptions narrow GetStateHistory.
type HistoryOptions = checkpoints.ListOptions

// GetStateHistory lists the thread's checkpoints newest first. With
// MetadataOnly no channel values are loaded and Values and Tasks are left
// empty: a cheap listing for a history page. Next is then the next tasks
// saved with the checkpoint (checkpoints.Checkpoint.Next), which a full
// listing plans again to the same names; it is empty for a checkpoint
// saved before checkpoints carried them.
func (g *Pregel) GetStateHistory(ctx context.Context, cfg checkpoints.Config, opts HistoryOptions) ([]*StateSnapshot, error) {
	if g.cfg.Checkpointer == nil {
		return nil, fmt.Errorf("%w: GetStateHistory needs a graph compiled with a checkpointer", checkpoints.ErrInvalidConfig)
	}
	if cfg.ThreadID == "" {
		return nil, fmt.Errorf("%w: GetStateHistory needs a thread id", checkpoints.ErrInvalidConfig)
	}
	if cfg.CheckpointID != "" && opts.Before == "" {
		opts.Before = cfg.CheckpointID
	}
	if opts.MetadataOnly {
		opts.Headers = true // a snapshot header needs no version maps
	}
	tups, err := g.cfg.Checkpointer.List(ctx, checkpoints.ListQuery{ThreadID: cfg.ThreadID, Namespace: cfg.Namespace}, opts)
	if err != nil {
		return nil, err
	}
	out := make([]*StateSnapshot, 0, len(tups))
	if opts.MetadataOnly {
		snaps := make([]StateSnapshot, len(tups)) // one allocation for the page
		for i, tup := range tups {
			snaps[i] = StateSnapshot{Config: tup.Config, ParentConfig: tup.ParentConfig, Metadata: tup.Metadata, CreatedAt: tup.Checkpoint.TS, Next: tup.Checkpoint.Next}
			out = append(out, &snaps[i])
		}
		return out, nil
	}
	for _, tup := range tups {
		s, err := g.snapshot(tup, false)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// StateOf is the snapshot of a checkpoint already read from the graph's
// checkpointer, for callers that need the tuple too (GetState would read
// it again). head says the tuple is the thread's latest checkpoint, read
// without a checkpoint id: then, as GetState does, the writes of tasks
// that already finished in an interrupted step are applied to the values
// and those tasks leave Next.
func (g *Pregel) StateOf(tup *checkpoints.Tuple, head bool) (*StateSnapshot, error) {
	if tup == nil {
		return nil, fmt.Errorf("%w: StateOf needs a checkpoint", checkpoints.ErrInvalidConfig)
	}
	return g.snapshot(tup, head)
}

func (g *Pregel) snapshot(tup *checkpoints.Tuple, applyPending bool) (*StateSnapshot, error) {
	l := &loop{g: g, needIDs: true, rs: &resumeState{}, opts: RunOptions{ThreadID: tup.Config.ThreadID}}
	l.ns = tup.Config.Namespace
	if err := l.restore(tup); err != nil {
		return nil, err
	}
	tasks, err := l.prepare()
	if err != nil {
		return nil, err
	}
	tasks = slices.Clone(tasks)
	states, writes, err := l.taskStates(tasks, tup.PendingWrites)
	if err != nil {
		return nil, err
	}
	var applied []*task
	ran := map[string]bool{}
	for i, t := range tasks {
		if ws, ok := writes[i]; ok {
			ran[t.ID()] = true
			t.setWrites(ws)
			applied = append(applied, t)
		}
	}
	// A Command's update is saved as a write of the null task; as
	// upstream, every snapshot shows it applied (after the next tasks
	// were worked out from the checkpoint itself).
	if err := l.applyNullWrites(); err != nil {
		return nil, err
	}
	next := make([]string, 0, len(tasks))
	var writesPending bool
	var nextAfter []string
	// A task with a saved answer to one of its interrupts has a write
	// too: as upstream, it is not next, though it may wait on a later
	// interrupt (its Interrupts say so).
	answered := map[string]bool{}
	for _, pw := range tup.PendingWrites {
		// An interrupted task's commit saves its answers so far, an empty
		// list when it has none (upstream saves no write then).
		if pw.Channel == resumeKey && pw.TaskID != nullTaskID && strings.TrimSpace(string(pw.Value)) != "[]" {
			answered[pw.TaskID] = true
		}
	}
	if applyPending && (len(applied) > 0 || len(answered) > 0) {
		if len(applied) > 0 {
			if _, err := l.apply(applied); err != nil {
				return nil, err
			}
		}
		for _, t := range tasks {
			if !ran[t.ID()] && !answered[t.ID()] {
				next = append(next, t.name)
			}
		}
		if len(next) == 0 && len(applied) == len(tasks) {
			// Every task of the step ran and only the step's checkpoint is
			// missing: plan the step the writes lead to, as the resuming
			// run will.
			writesPending = true
			after, err := l.prepare()
			if err != nil {
				return nil, err
			}
			nextAfter = make([]string, 0, len(after))
			for _, t := range after {
				nextAfter = append(nextAfter, t.name)
			}
		}
	} else {
		for _, t := range tasks {
			next = append(next, t.name)
		}
	}
	var interrupts []Interruption
	for _, st := range states {
		interrupts = append(interrupts, st.Interrupts...)
	}
	return &StateSnapshot{
		Values: l.values(), Next: next, Config: tup.Config, ParentConfig: tup.ParentConfig,
		Metadata: tup.Metadata, CreatedAt: tup.Checkpoint.TS, Tasks: states, Interrupts: interrupts,
		WritesPending: writesPending, NextAfterWrites: nextAfter,
	}, nil
}

// taskStates describes tasks planned from a checkpoint, with what its
// pending writes say of each: error, interrupts, and, for a task that
// ran, its result; writes[i] holds the writes of tasks[i] when it ran.
func (l *loop) taskStates(tasks []*task, pending []checkpoints.PendingWrite) ([]TaskState, map[int][]KV, error) {
	states := make([]TaskState, len(tasks))
	byTask := make(map[string][]checkpoints.PendingWrite, len(tasks))
	for _, pw := range pending {
		byTask[pw.TaskID] = append(byTask[pw.TaskID], pw)
	}
	writes := map[int][]KV{}
	for i, t := range tasks {
		st := &states[i]
		*st = TaskState{ID: t.ID(), Name: t.name, Path: taskPath(t.push, t.name, t.idx)}
		if t.push {
			st.Arg = t.input
		}
		if t.node.subgraph != nil {
			st.Subgraph = &checkpoints.Config{ThreadID: l.opts.ThreadID, Namespace: t.checkpointNS()}
		}
		var ws []KV
		ran := false
		for _, pw := range byTask[t.ID()] {
			switch pw.Channel {
			case errorKey:
				var msg string
				if json.Unmarshal(pw.Value, &msg) != nil {
					msg = string(pw.Value)
				}
				st.Error = msg
				continue
			case interruptKey:
				var is []Interruption
				if json.Unmarshal(pw.Value, &is) == nil {
					st.Interrupts = append(st.Interrupts, is...)
				}
				continue
			case resumeKey:
				continue
			}
			ran = true
			if pw.Channel == noWritesKey {
				continue
			}
			v, err := l.decodeWrite(pw.Channel, pw.Value)
			if err != nil {
				return nil, nil, err
			}
			ws = append(ws, KV{Key: pw.Channel, Value: v})
		}
		if ran {
			st.Result = resultPayload(ws)
			writes[i] = ws
		}
	}
	return states, writes, nil
}

// GetState returns the thread's state; see Pregel.GetState.
func (g *Graph[S]) GetState(ctx context.Context, cfg checkpoints.Config) (*StateSnapshot, error) {
	return g.pregel.GetState(ctx, cfg)
}

// GetStateWith returns the thread's state with options; see
// Pregel.GetStateWith.
func (g *Graph[S]) GetStateWith(ctx context.Context, cfg checkpoints.Config, opts StateOptions) (*StateSnapshot, error) {
	return g.pregel.GetStateWith(ctx, cfg, opts)
}

// GetStateHistory lists the thread's checkpoints; see Pregel.GetStateHistory.
func (g *Graph[S]) GetStateHistory(ctx context.Context, cfg checkpoints.Config, opts HistoryOptions) ([]*StateSnapshot, error) {
	return g.pregel.GetStateHistory(ctx, cfg, opts)
}
