package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine/channels"
	"github.com/superstep-dev/superstep/internal/slab"
)

// DefaultRecursionLimit is upstream's default number of supersteps a run
// may take.
const DefaultRecursionLimit = 10007

// Durability says when checkpoints are written.
type Durability int

const (
	// DurabilityAsync saves each checkpoint in the background while the
	// next superstep runs, in order (upstream's default).
	DurabilityAsync Durability = iota
	// DurabilitySync saves each checkpoint before the next superstep
	// starts.
	DurabilitySync
	// DurabilityExit saves only when the run ends (success, error or
	// interrupt): fastest, but a crash loses the whole run.
	DurabilityExit
)

// RunOptions configure one run.
type RunOptions struct {
	// ThreadID selects the thread whose checkpoints the run continues; it
	// is required when the graph has a checkpointer.
	ThreadID string
	// CheckpointID runs from that checkpoint instead of the latest.
	CheckpointID string
	// RecursionLimit caps supersteps (0 means DefaultRecursionLimit).
	RecursionLimit int
	Durability     Durability
	// Metadata is copied into every checkpoint's metadata.
	Metadata map[string]any
	// RunID identifies the run in checkpoint metadata.
	RunID string
	// Listener receives the run's events; nil builds none.
	Listener func(Event)
	// InterruptBefore and InterruptAfter, when set, replace the graph's
	// compiled breakpoints for this run ("*" = every visible node). Like
	// upstream, they are not persisted.
	InterruptBefore []string
	InterruptAfter  []string
	// Subgraphs makes Stream yield the parts of subgraphs too, each with
	// the subgraph's Namespace (upstream's subgraphs=True). Without it a
	// stream carries the root graph's parts only.
	Subgraphs bool
}

type loop struct {
	g     *Pregel
	opts  RunOptions
	saver checkpoints.Saver
	ns    string

	chans    []channels.Channel // by channel index
	versions []int64            // by channel index; 0 = no version yet
	// maxVersion is the largest of versions: the next step's versions
	// are one above it.
	maxVersion int64
	// seen[node][k] is the version of the node's k-th trigger it last ran
	// on; nil when the node never ran. seenInterrupt acknowledges
	// breakpoints (upstream's versions_seen["__interrupt__"]).
	// seenInterrupt is replaced, never written in place: frames share it.
	seen          [][]int64
	seenInterrupt []int64
	// extraSeen holds the loaded entries for other names (the input
	// pseudo-task, nodes of another version of the graph), by name, in a
	// frame's form: every frame carries them as they are.
	extraSeen []checkpoints.SeenVersions
	// seenFrozen holds each node's versions seen as last put in a given
	// frame; it is copied again only when its node ran (seenDirty), and
	// never modified once handed to a saver.
	seenFrozen   [][]int64
	seenDirty    []bool
	updated      []int // updated channel indexes of the last step
	updatedKnown bool  // false: every node is a candidate
	step         int
	stop         int

	ckptID    string
	ckptBytes [16]byte
	ckptCfg   checkpoints.Config
	pending   []checkpoints.PendingWrite
	saved     []int64 // versions at the last put (the loop's own copy)
	hasSaved  bool

	hasher taskIDHasher
	hmu    sync.Mutex
	// The run's checkpoint ids and given frames (the one exit
	// durability holds) are carved from idText and frameMem (see
	// internal/slab): a saver keeps an id as long as the checkpoint,
	// and a given frame lives until its save returns (its versions
	// seen, until a later given frame stops sharing them); each would
	// be an object or several a superstep apart. The run's first given
	// frame makes frameMem. Frames lent to a save that returns before
	// the loop goes on are built in lent, those saved in the background
	// in an asyncSave's (see frame).
	idText   slab.Slab[byte]
	frameMem *frameSlabs
	lent     lentFrame
	emit     *emitter
	persist  *persister

	exitMu     sync.Mutex
	exitWrites []exitWrite

	// stepSaver, in sync and async durability, saves the writes of a
	// superstep's last task to succeed with the checkpoint that follows
	// them, in one call (async: in the background, in order); stepWrites
	// buffers them until then (guarded by exitMu).
	stepSaver  checkpoints.StepSaver
	stepWrites []checkpoints.TaskWrites
	// toFinish counts the step's running tasks that have not succeeded
	// yet: only the last to succeed leaves its writes to the step's
	// checkpoint (see commitSuccess).
	toFinish atomic.Int32
	// frameSaver is the saver when it stores frames.
	frameSaver checkpoints.FrameSaver
	// updNames are the names of the updated channels updIdx, as last put
	// in a frame: a loop updates the same channels step after step, and
	// frames share the names.
	updNames []string
	updIdx   []int

	rd reader
	rs *resumeState
	// parents maps each enclosing graph's namespace to its checkpoint id
	// (subgraph runs); nil at the root.
	parents    map[string]string
	resumeMap  map[string]any
	nullWrites []KV
	// loaded is the checkpoint a resumed run reports before its first
	// step (CheckpointLoaded); loadedParent and loadedMeta are the
	// restored checkpoint's.
	loaded       *CheckpointLoaded
	loadedParent *checkpoints.Config
	loadedMeta   checkpoints.Metadata
	replaying    bool
	// quietValues: the writes being applied do not make a step's values
	// (a Command's writes, a subgraph's interrupted step).
	quietValues bool
	lastSaved   *CheckpointSaved
	evParent    *checkpoints.Config
	interrupt   *Interrupted
	tasks       []*task
	free        []*task
	// planned are the tasks planned when the last checkpoint was saved
	// (planNext), valid while plannedAt == prepares (no planning since);
	// hasPlanned says there are such tasks (planned may be empty).
	planned             []*task
	hasPlanned          bool
	plannedAt, prepares int
	// planning is set while planNext plans: cache keys wait (prepareCache).
	planning bool
	// exitFrame and exitMD are, under exit durability, the checkpoint a
	// stopped step ran from as it was before the in-memory view applied
	// the writes of the step's finished tasks (interrupted): the run's
	// final save puts it, not the state those writes made.
	exitFrame  *checkpoints.Frame
	exitMD     checkpoints.Metadata
	needIDs    bool
	ckptLazy   bool
	candidates []int
	runBuf     []*task
	ctxs       taskContexts
	// runCtx holds the run's context for the executions of one-task steps.
	runCtx *ctxHolder
	// volFull lists the volatile channels that may hold a value (see
	// apply), sorted; volIn marks them; volNext is spare storage.
	volFull, volNext []int
	volIn            []bool
	// mem holds an earlier run's buffers until restore takes them;
	// seenStore is the storage of its seen slices.
	mem       *loopMem
	seenStore [][]int64
	// stateVal is the StateGraph state as of the current step, built on
	// first use and shared by the step's tasks; apply and restore drop it.
	// Without a listener nothing outside the step holds it, so the next
	// step refreshes the same struct (stateBuf), setting only the fields
	// whose channels changed (stateDirty) unless stateAll asks for all.
	stateVal   any
	stateBuf   any
	statePtr   unsafe.Pointer // what stateBuf points to
	stateDirty []int
	stateAll   bool
	grouped    [][]any
	touched    []int
	touchedSet []bool
	bumps      []ChannelBump
}

type exitWrite struct {
	taskID string
	writes []checkpoints.Write
}

// Invoke runs the graph to completion and returns its output. A nil input
// continues the thread from its latest (or the given) checkpoint.
func (g *Pregel) Invoke(ctx context.Context, input any, opts *RunOptions) (out any, err error) {
	l, err := g.newLoop(opts)
	if err != nil {
		return nil, err
	}
	if l.emit != nil {
		l.emit.send(RunStarted{RunID: l.opts.RunID, ThreadID: l.opts.ThreadID, Input: input})
		defer func() { l.emit.send(RunFinished{RunID: l.opts.RunID, Output: out, Err: err}) }()
	}
	err = l.run(ctx, input)
	if perr := l.finishPersist(ctx, err); perr != nil && (err == nil || errors.Is(err, ErrInterrupted)) {
		err = perr
	}
	if err != nil && !errors.Is(err, ErrInterrupted) {
		return nil, err
	}
	out, oerr := l.output()
	l.release()
	if oerr != nil {
		return nil, oerr
	}
	return out, err
}

func (g *Pregel) newLoop(opts *RunOptions) (*loop, error) {
	l := &loop{g: g, saver: g.cfg.Checkpointer, rs: &resumeState{}}
	if opts != nil {
		l.opts = *opts
	}
	if l.opts.Listener == nil {
		if m, ok := g.mem.Get().(*loopMem); ok {
			l.adopt(m)
		}
	}
	if l.opts.RecursionLimit == 0 {
		l.opts.RecursionLimit = DefaultRecursionLimit
	}
	if l.opts.RecursionLimit < 1 {
		return nil, fmt.Errorf("recursion limit must be at least 1, got %d", l.opts.RecursionLimit)
	}
	if l.saver != nil && l.opts.ThreadID == "" {
		return nil, fmt.Errorf("%w: the graph has a checkpointer, so RunOptions.ThreadID is required", checkpoints.ErrInvalidConfig)
	}
	if l.opts.Listener != nil {
		l.emit = &emitter{fn: l.opts.Listener}
	}
	if l.saver != nil && l.opts.Durability == DurabilityAsync {
		var saves []*asyncSave
		if l.mem != nil {
			saves = l.mem.saves
		}
		l.persist = newPersister(l, saves)
	}
	l.saverForms()
	l.needIDs = l.saver != nil || l.emit != nil
	return l, nil
}

// saverForms finds the optional forms the saver takes: frames, and a
// step's writes together with its checkpoint (not in exit durability,
// which saves only the step that stops the run).
func (l *loop) saverForms() {
	l.frameSaver, _ = l.saver.(checkpoints.FrameSaver)
	if ss, ok := l.saver.(checkpoints.StepSaver); ok && l.opts.Durability != DurabilityExit {
		l.stepSaver = ss
	}
}

func (l *loop) run(ctx context.Context, input any) error {
	if err := l.load(ctx); err != nil {
		return err
	}
	if err := l.first(ctx, input); err != nil {
		return err
	}
	for {
		if l.step > l.stop {
			return &RecursionError{Limit: l.opts.RecursionLimit}
		}
		tasks, err := l.nextTasks()
		if err != nil {
			return err
		}
		l.emitCheckpoint(tasks)
		if len(tasks) == 0 {
			return nil
		}
		if err := l.tick(ctx, tasks); err != nil {
			return err
		}
		if l.interrupt != nil {
			return l.interrupt
		}
	}
}

// emitCheckpoint reports the checkpoint the coming tasks run against, now
// that its next tasks are known.
func (l *loop) emitCheckpoint(tasks []*task) {
	if l.emit != nil && l.loaded != nil {
		ev := *l.loaded
		l.loaded = nil
		ev.Values = l.values()
		l.describeNext(&ev.CheckpointSaved, tasks, l.pending)
		l.emit.send(ev)
	}
	if l.emit == nil || l.lastSaved == nil {
		return
	}
	ev := *l.lastSaved
	l.lastSaved = nil
	l.describeNext(&ev, tasks, nil)
	l.emit.send(ev)
}

// describeNext fills a checkpoint event's next tasks.
func (l *loop) describeNext(ev *CheckpointSaved, tasks []*task, pending []checkpoints.PendingWrite) {
	ev.Next = make([]string, len(tasks))
	for i, t := range tasks {
		ev.Next[i] = t.name
	}
	// Undecodable writes only cost the event its results.
	ev.Tasks, _, _ = l.taskStates(tasks, pending)
}

func (l *loop) breakpoints(after bool) []string {
	if after {
		if l.opts.InterruptAfter != nil {
			return l.opts.InterruptAfter
		}
		return l.g.cfg.InterruptAfter
	}
	if l.opts.InterruptBefore != nil {
		return l.opts.InterruptBefore
	}
	return l.g.cfg.InterruptBefore
}

// shouldInterrupt is upstream's should_interrupt: a breakpoint fires when
// some channel changed since breakpoints were last acknowledged and one of
// the tasks is a breakpoint node.
func (l *loop) shouldInterrupt(names []string, tasks []*task) []string {
	if len(names) == 0 {
		return nil
	}
	anyNew := false
	for c, v := range l.versions {
		if l.seenInterrupt == nil || v > l.seenInterrupt[c] {
			anyNew = v > 0 || anyNew
			if anyNew {
				break
			}
		}
	}
	if !anyNew {
		return nil
	}
	var hit []string
	all := slices.Contains(names, "*")
	for _, t := range tasks {
		if (all && !t.node.hidden) || slices.Contains(names, t.name) {
			hit = append(hit, t.name)
		}
	}
	return hit
}

func (l *loop) values() map[string]any {
	out := make(map[string]any, len(l.g.streamIdx))
	for _, c := range l.g.streamIdx {
		if v, ok := l.chans[c].Get(); ok {
			out[l.g.chanNames[c]] = v
		}
	}
	return out
}

func (l *loop) output() (any, error) {
	if l.g.mapOutput != nil {
		return l.g.mapOutput(l.reader())
	}
	outs := l.g.outIdx
	if len(outs) == 1 {
		v, _ := l.chans[outs[0]].Get()
		return v, nil
	}
	m := make(map[string]any, len(outs))
	for _, c := range outs {
		if v, ok := l.chans[c].Get(); ok {
			m[l.g.chanNames[c]] = v
		}
	}
	return m, nil
}

// emitter serialises listener calls.
type emitter struct {
	mu sync.Mutex
	fn func(Event)
}

func (e *emitter) send(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fn(ev)
}
