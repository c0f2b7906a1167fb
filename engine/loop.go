package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine/channels"
	"github.com/superstep-dev/superstep/internal/jsonfast"
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
	// seenFrozen holds each node's versions seen as last put in a frame;
	// it is copied again only when its node ran (seenDirty), and never
	// modified once handed to a saver.
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
	saved     []int64 // versions at the last put
	hasSaved  bool

	hasher  taskIDHasher
	hmu     sync.Mutex
	emit    *emitter
	persist *persister

	exitMu     sync.Mutex
	exitWrites []exitWrite

	// stepSaver, in sync durability, saves a superstep's task writes with
	// the checkpoint that follows them in one call; stepWrites buffers
	// them until then (guarded by exitMu).
	stepSaver  checkpoints.StepSaver
	stepWrites []checkpoints.TaskWrites
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
	needIDs     bool
	ckptLazy    bool
	candidates  []int
	runBuf      []*task
	ctxs        taskContexts
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
		l.persist = newPersister()
	}
	l.saverForms()
	l.needIDs = l.saver != nil || l.emit != nil
	return l, nil
}

// saverForms finds the optional forms the saver takes: frames, and in
// sync durability a step's writes together with its checkpoint.
func (l *loop) saverForms() {
	l.frameSaver, _ = l.saver.(checkpoints.FrameSaver)
	if ss, ok := l.saver.(checkpoints.StepSaver); ok && l.opts.Durability == DurabilitySync {
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
		tasks, err := l.prepare()
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

// load restores the thread's checkpoint, or starts empty.
func (l *loop) load(ctx context.Context) error {
	var tup *checkpoints.Tuple
	if l.saver != nil {
		var err error
		tup, err = l.saver.Get(ctx, checkpoints.Config{ThreadID: l.opts.ThreadID, Namespace: l.ns, CheckpointID: l.opts.CheckpointID})
		if err != nil {
			return fmt.Errorf("load checkpoint: %w", err)
		}
		if tup == nil && l.opts.CheckpointID != "" {
			return fmt.Errorf("%w: thread %q has no checkpoint %q", checkpoints.ErrInvalidConfig, l.opts.ThreadID, l.opts.CheckpointID)
		}
	}
	return l.restore(tup)
}

// restore sets the loop's state from a saved checkpoint (nil: empty).
func (l *loop) restore(tup *checkpoints.Tuple) error {
	n := len(l.g.specs)
	l.rd, l.stateVal, l.stateAll = nil, nil, true
	nodes := len(l.g.nodeList)
	if m := l.mem; m != nil && len(m.seen) == nodes && len(m.grouped) == n {
		// The buffers of an earlier run: seen keeps its storage aside.
		l.seenStore, l.seen = m.seen, make([][]int64, nodes)
		// m.chans holds the earlier run's channels, emptied (see release).
		l.chans, l.versions, l.seenDirty = m.chans[:n], reuse(m.versions, n), reuse(m.seenDirty, nodes)
		l.grouped, l.touchedSet = m.grouped, m.touchedSet
		l.mem = nil
	} else {
		l.chans = make([]channels.Channel, n)
		l.versions = make([]int64, n)
		l.seen = make([][]int64, nodes)
		l.seenDirty = make([]bool, nodes)
		l.grouped = make([][]any, n)
		l.touchedSet = make([]bool, n)
	}
	l.maxVersion = 0
	l.seenFrozen = make([][]int64, nodes)
	// Any volatile channel may hold a value after a restore.
	l.volFull = append(l.volFull[:0], l.g.volatile...)
	l.volIn = reuse(l.volIn, n)
	for _, c := range l.g.volatile {
		l.volIn[c] = true
	}
	l.step = -1
	if tup == nil {
		for i, spec := range l.g.specs {
			if err := l.restoreChannel(i, spec, nil); err != nil {
				return err
			}
		}
		l.newCheckpointID()
		return nil
	}
	cp := tup.Checkpoint
	for i, spec := range l.g.specs {
		if err := l.restoreChannel(i, spec, cp.ChannelValues[l.g.chanNames[i]]); err != nil {
			return fmt.Errorf("%w: restore channel %q from checkpoint %s: %w", ErrCheckpointMismatch, l.g.chanNames[i], cp.ID, err)
		}
	}
	for c, v := range cp.ChannelVersions {
		if i, ok := l.g.chanIdx[c]; ok {
			l.versions[i] = v
			l.maxVersion = max(l.maxVersion, v)
		}
	}
	for name, vs := range cp.VersionsSeen {
		if name == interruptKey {
			l.seenInterrupt = l.versionsFromMap(vs)
			continue
		}
		node, ok := l.g.nodes[name]
		if !ok {
			sv := checkpoints.SeenVersions{Node: name, Channels: slices.Sorted(maps.Keys(vs))}
			sv.Versions = make([]int64, len(sv.Channels))
			for i, c := range sv.Channels {
				sv.Versions[i] = vs[c]
			}
			l.extraSeen = append(l.extraSeen, sv)
			continue
		}
		s := make([]int64, len(node.trig))
		for k, t := range node.Triggers {
			s[k] = vs[t]
		}
		l.seen[node.idx] = s
	}
	slices.SortFunc(l.extraSeen, func(a, b checkpoints.SeenVersions) int { return strings.Compare(a.Node, b.Node) })
	if cp.UpdatedChannels != nil {
		l.updatedKnown = true
		for _, c := range cp.UpdatedChannels {
			if i, ok := l.g.chanIdx[c]; ok {
				l.updated = append(l.updated, i)
			}
		}
	}
	l.step = tup.Metadata.Step + 1
	l.setCheckpointID(cp.ID)
	l.ckptCfg = tup.Config
	l.saved = slices.Clone(l.versions)
	l.hasSaved = true
	l.pending = tup.PendingWrites
	l.loadedParent, l.loadedMeta = tup.ParentConfig, tup.Metadata
	return nil
}

// restoreChannel sets channel i from its saved data. A channel without
// data keeps the emptied channel an earlier run left in its place, when
// there is one.
func (l *loop) restoreChannel(i int, spec channels.Channel, data json.RawMessage) error {
	if data == nil && l.chans[i] != nil {
		return nil
	}
	ch, err := spec.FromCheckpoint(data)
	if err != nil {
		return err
	}
	l.chans[i] = ch
	return nil
}

func (l *loop) versionsFromMap(m map[string]int64) []int64 {
	out := make([]int64, len(l.g.specs))
	for c, v := range m {
		if i, ok := l.g.chanIdx[c]; ok {
			out[i] = v
		}
	}
	return out
}

func (l *loop) hasVersions() bool {
	for _, v := range l.versions {
		if v > 0 {
			return true
		}
	}
	return false
}

// newCheckpointID starts a new checkpoint. Its id is materialised only
// when something observes it (a saver, a listener, a cache, a task id).
func (l *loop) newCheckpointID() {
	if l.needIDs {
		b := newCheckpointBytes()
		l.ckptID, l.ckptBytes = formatUUID(b), b
		return
	}
	l.ckptID, l.ckptLazy = "", true
}

func (l *loop) checkpointBytes() [16]byte {
	if l.ckptLazy {
		b := newCheckpointBytes()
		l.ckptID, l.ckptBytes = formatUUID(b), b
		l.ckptLazy = false
	}
	return l.ckptBytes
}

func (l *loop) setCheckpointID(id string) {
	l.ckptID = id
	l.ckptBytes = idBytes(id)
}

// first applies the run's input before the first superstep.
func (l *loop) first(ctx context.Context, input any) error {
	l.stop = l.step + l.opts.RecursionLimit + 1
	l.loaded = nil
	var cmd *Command
	switch c := input.(type) {
	case Command:
		cmd = &c
	case *Command:
		cmd = c
	}
	if input == nil || cmd != nil {
		if !l.hasVersions() {
			return fmt.Errorf("%w: nothing to resume on thread %q; pass an input", ErrEmptyInput, l.opts.ThreadID)
		}
		// Time travel, as upstream: a run from an explicit checkpoint that
		// answers no interrupt (a nil input, or a Command without Resume).
		// A Command that resumes at the head's own id is a resume.
		travel := l.opts.CheckpointID != "" && (cmd == nil || cmd.Resume == nil)
		var forkFrom map[taskKey]string
		if travel {
			// Answers given on the old branch are not reused (interrupts
			// fire again), nor are the writes of tasks that ran from it.
			l.pending = slices.DeleteFunc(slices.Clone(l.pending), func(pw checkpoints.PendingWrite) bool { return pw.Channel == resumeKey })
			l.replaying = true
			if l.forksOnTravel() {
				var err error
				if forkFrom, err = l.subgraphNamespaces(); err != nil {
					return err
				}
			}
		}
		if cmd != nil {
			if err := l.applyCommand(ctx, cmd); err != nil {
				return err
			}
		}
		if err := l.applyNullWrites(); err != nil {
			return err
		}
		// Resuming: acknowledge breakpoints so they do not fire again
		// until something changes.
		l.seenInterrupt = slices.Clone(l.versions)
		if forkFrom != nil {
			// The branch is visible before anything runs: a fork
			// checkpoint one step after the one travelled to, which the
			// first tick reports (the one travelled to is not reported
			// again).
			l.pending = nil
			if err := l.putCheckpoint(ctx, checkpoints.SourceFork); err != nil {
				return err
			}
			if err := l.carrySubgraphs(ctx, forkFrom); err != nil {
				return err
			}
		} else if l.emit != nil && l.saver != nil {
			l.loaded = &CheckpointLoaded{CheckpointSaved{Config: l.ckptCfg, Parent: l.loadedParent, Metadata: l.loadedMeta}}
		}
		if l.emit != nil {
			l.emit.send(ValuesEmitted{Namespace: l.ns, Step: l.step, Values: l.values()})
		}
		return nil
	}
	writes, err := l.mapInput(input)
	if err != nil {
		return err
	}
	if len(writes) == 0 {
		return fmt.Errorf("%w: the input wrote no channel", ErrEmptyInput)
	}
	// New input on a thread: tasks that were pending are discarded, and
	// their triggers marked seen together with the input writes.
	discard, err := l.prepare()
	if err != nil {
		return err
	}
	in := &task{l: l, name: inputTask, writes: writes}
	all := append(slices.Clone(discard), in)
	// As upstream, the input makes no values part of its own (the first
	// step's values show it).
	l.quietValues = true
	_, err = l.apply(all)
	l.quietValues = false
	if err != nil {
		return err
	}
	l.pending = nil
	return l.putCheckpoint(ctx, checkpoints.SourceInput)
}

// applyNullWrites applies the writes a Command left for the thread (and
// picks up its resume answer) before the step they precede.
func (l *loop) applyNullWrites() error {
	writes := slices.Clone(l.nullWrites)
	for _, pw := range l.pending {
		if pw.TaskID != nullTaskID {
			continue
		}
		if pw.Channel == resumeKey {
			var v any
			if err := json.Unmarshal(pw.Value, &v); err == nil {
				l.rs.nullResume, l.rs.hasNull = v, true
			}
			continue
		}
		v, err := l.decodeWrite(pw.Channel, pw.Value)
		if err != nil {
			return err
		}
		writes = append(writes, KV{Key: pw.Channel, Value: v})
	}
	if len(writes) == 0 {
		return nil
	}
	// The step that follows must still consider the checkpoint's own
	// updated channels (its pending tasks), plus whatever these writes
	// touched (a Goto's branch channel).
	before, known := slices.Clone(l.updated), l.updatedKnown
	// The state these writes make is streamed once, as the state the run
	// resumes from, not as a step's values.
	l.quietValues = true
	_, err := l.apply([]*task{{l: l, name: inputTask, writes: writes}})
	l.quietValues = false
	if err != nil {
		return err
	}
	if !known {
		l.updatedKnown = false
		return nil
	}
	for _, c := range before {
		if !slices.Contains(l.updated, c) {
			l.updated = append(l.updated, c)
		}
	}
	slices.Sort(l.updated)
	return nil
}

// forksOnTravel says whether time travel to the loaded checkpoint writes
// a fork checkpoint first: as upstream, unless the checkpoint is itself an
// edit or a fork (UpdateState, a copy, an earlier fork), which is run from
// directly.
func (l *loop) forksOnTravel() bool {
	if l.saver == nil {
		return false
	}
	src := l.loadedMeta.Source
	return src != checkpoints.SourceUpdate && src != checkpoints.SourceFork
}

func pendingFor(taskID string, w checkpoints.Write) checkpoints.PendingWrite {
	return checkpoints.PendingWrite{TaskID: taskID, Channel: w.Channel, Value: w.Value}
}

func (l *loop) mapInput(input any) ([]KV, error) {
	if l.g.mapInput != nil {
		return l.g.mapInput(input)
	}
	in := l.g.cfg.InputChannels
	if len(in) == 1 {
		// A map holding exactly the input channel's name is that channel's
		// value: how a JSON form (the Studio's) gives a raw input.
		if m, ok := input.(map[string]any); ok && len(m) == 1 {
			if v, ok := m[in[0]]; ok {
				return []KV{{Key: in[0], Value: v}}, nil
			}
		}
		return []KV{{Key: in[0], Value: input}}, nil
	}
	m, ok := input.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("input must be a map keyed by the input channels %v, got %T", in, input)
	}
	var out []KV
	for _, c := range in {
		if v, ok := m[c]; ok {
			out = append(out, KV{Key: c, Value: v})
		}
	}
	return out, nil
}

// prepare plans the next superstep's tasks: Sends first, then nodes whose
// triggers have newer versions than they last saw.
func (l *loop) prepare() ([]*task, error) {
	tasks := l.tasks[:0]
	if tch := l.chans[l.g.tasksIdx]; tch.IsAvailable() {
		v, _ := tch.Get()
		sends, err := asSends(v)
		if err != nil {
			return nil, err
		}
		for idx, s := range sends {
			n, ok := l.g.nodes[s.Node]
			if !ok {
				return nil, fmt.Errorf("%w: Send to unknown node %q", ErrInvalidUpdate, s.Node)
			}
			arg, err := decodeArg(n, s.Arg)
			if err != nil {
				return nil, err
			}
			if n.needsState {
				if _, err := l.state(); err != nil {
					return nil, err
				}
			}
			t := l.newTask(n)
			t.push, t.idx, t.triggers, t.input = true, idx, pushTriggers, arg
			if l.needIDs {
				t.ID()
			}
			if err := l.prepareCache(t); err != nil {
				return nil, err
			}
			tasks = append(tasks, t)
		}
	}
	for _, ni := range l.pullCandidates() {
		n := l.g.nodeList[ni]
		if !l.triggered(n) {
			continue
		}
		if n.needsState {
			if _, err := l.state(); err != nil {
				return nil, err
			}
		}
		in, ok, err := l.readInput(n)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		t := l.newTask(n)
		t.triggers, t.input, t.idx = n.sortedTriggers(), in, -1
		t.builtInput = n.input != nil
		if l.needIDs {
			t.ID()
		}
		if err := l.prepareCache(t); err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	}
	l.tasks = tasks[:0]
	return tasks, nil
}

var pushTriggers = []string{pushKind}

// newTask takes a task from the loop's pool: tasks of a finished step are
// reused, so a long run allocates none per step.
// state returns the StateGraph state (a *S) as of the current step. The
// loop builds it while planning for every node that needs it, so tasks
// running in parallel only read it.
func (l *loop) state() (any, error) {
	if l.stateVal != nil {
		return l.stateVal, nil
	}
	p := l.g.statePlan
	if l.emit != nil || l.stateBuf == nil || l.stateAll {
		v, err := p.build(l.reader())
		if err != nil {
			return nil, err
		}
		if l.emit == nil {
			l.stateBuf, l.stateAll, l.stateDirty = v, false, l.stateDirty[:0]
			l.statePtr = reflect.ValueOf(v).UnsafePointer()
		}
		l.stateVal = v
		return v, nil
	}
	if err := p.refresh(l.statePtr, l.reader(), l.stateDirty); err != nil {
		l.stateAll = true
		return nil, err
	}
	l.stateDirty = l.stateDirty[:0]
	l.stateVal = l.stateBuf
	return l.stateVal, nil
}

func (l *loop) newTask(n *Node) *task {
	var t *task
	if len(l.free) > 0 {
		t = l.free[len(l.free)-1]
		l.free = l.free[:len(l.free)-1]
		writes, wch, ovn, ovv, scratch := t.writes[:0], t.wch[:0], t.ov.names[:0], t.ov.vals[:0], t.scratch
		encoded, encBuf := t.encoded[:0], t.encBuf[:0]
		// Cleared in place, then the kept buffers put back: a composite
		// literal would be built on the stack and copied over.
		*t = task{}
		t.writes, t.wch, t.scratch = writes, wch, scratch
		t.ov.names, t.ov.vals = ovn, ovv
		t.encoded, t.encBuf = encoded, encBuf
	} else {
		t = &task{}
		t.writes, t.wch = t.wbuf[:0], t.wcbuf[:0]
	}
	t.l, t.name, t.node = l, n.Name, n
	return t
}

// recycle returns a finished step's tasks to the pool, unless events or
// a saver may still hold them.
func (l *loop) recycle(tasks []*task) {
	if l.emit != nil {
		return
	}
	l.free = append(l.free, tasks...)
}

func (l *loop) taskNS(name string) string {
	if l.ns == "" {
		return name
	}
	return l.ns + "|" + name
}

func (l *loop) pullCandidates() []int {
	c := l.candidates[:0]
	if !l.updatedKnown {
		for i := range l.g.nodeList {
			c = append(c, i)
		}
	} else {
		for _, ch := range l.updated {
			c = append(c, l.g.trigNodes[ch]...)
		}
		if len(c) > 1 {
			sortFew(c)
			c = slices.Compact(c)
		}
	}
	l.candidates = c
	return c
}

// sortFew sorts channel or node indexes, of which a step has a few:
// without a call into the sort for none, one or two.
func sortFew(s []int) {
	switch {
	case len(s) < 2:
	case len(s) == 2:
		if s[1] < s[0] {
			s[0], s[1] = s[1], s[0]
		}
	default:
		slices.Sort(s)
	}
}

func (l *loop) triggered(n *Node) bool {
	seen := l.seen[n.idx]
	for k, c := range n.trig {
		if !l.chans[c].IsAvailable() {
			continue
		}
		if seen == nil || l.versions[c] > seen[k] {
			return true
		}
	}
	return false
}

func (n *Node) sortedTriggers() []string {
	if !slices.IsSorted(n.Triggers) {
		n.Triggers = slices.Sorted(slices.Values(n.Triggers))
	}
	return n.Triggers
}

func (l *loop) prepareCache(t *task) error {
	if t.node.Cache == nil || l.g.cfg.Cache == nil {
		return nil
	}
	k, err := t.node.Cache.key(t.node, t.input)
	if err != nil {
		return fmt.Errorf("node %q: %w", t.name, err)
	}
	t.cacheKey, t.useCache = k, true
	return nil
}

func asSends(v any) ([]Send, error) {
	switch x := v.(type) {
	case []Send:
		return x, nil
	case []any:
		out := make([]Send, 0, len(x))
		for _, e := range x {
			switch s := e.(type) {
			case Send:
				out = append(out, s)
			case *Send:
				out = append(out, *s)
			default:
				return nil, fmt.Errorf("%w: %T written to the tasks channel is not a Send", ErrInvalidUpdate, e)
			}
		}
		return out, nil
	case nil:
		return nil, nil
	}
	return nil, fmt.Errorf("%w: tasks channel holds %T", ErrInvalidUpdate, v)
}

// tick runs one superstep: cached and pending writes first, then the
// tasks, then the barrier and the checkpoint.
func (l *loop) tick(ctx context.Context, tasks []*task) error {
	if len(l.pending) > 0 && !l.replaying {
		l.reapplyPending(tasks)
	}
	l.replaying = false
	if hit := l.shouldInterrupt(l.breakpoints(false), tasks); hit != nil {
		l.interrupt = &Interrupted{Before: hit}
		return nil
	}
	if l.emit != nil {
		infos := make([]TaskInfo, len(tasks))
		for i, t := range tasks {
			infos[i] = t.info()
		}
		l.emit.send(StepPlanned{Namespace: l.ns, Step: l.step, Tasks: infos})
	}
	if err := l.matchCache(ctx, tasks); err != nil {
		return err
	}
	if l.emit != nil {
		for _, t := range tasks {
			if t.cached {
				l.emit.send(TaskFinished{Task: t.info(), Writes: slices.Clone(t.writes), Cached: true})
			}
		}
	}
	if err := l.runTasks(ctx, tasks); err != nil {
		return withFlush(err, l.flushStepWrites(ctx))
	}
	if _, err := l.apply(tasks); err != nil {
		return withFlush(err, l.flushStepWrites(ctx))
	}
	l.pending = nil
	if l.opts.Durability == DurabilityExit {
		// Writes of a finished step live on in the next checkpoint's
		// values; only the step that stops the run keeps pending writes.
		l.exitMu.Lock()
		l.exitWrites = l.exitWrites[:0]
		l.exitMu.Unlock()
	}
	var names []string
	if bp := l.breakpoints(true); len(bp) > 0 {
		names = l.shouldInterrupt(bp, tasks)
	}
	l.recycle(tasks)
	if err := l.putCheckpoint(ctx, checkpoints.SourceLoop); err != nil {
		return err
	}
	if len(names) > 0 {
		l.interrupt = &Interrupted{After: names}
	}
	return nil
}

// reapplyPending gives tasks that succeeded in an earlier, interrupted or
// failed, attempt at this superstep their saved writes, so they do not run
// again.
func (l *loop) reapplyPending(tasks []*task) {
	byID := map[string]*task{}
	for _, t := range tasks {
		byID[t.ID()] = t
	}
	for _, pw := range l.pending {
		t, ok := byID[pw.TaskID]
		if ok && pw.Channel == resumeKey {
			var answers []any
			if json.Unmarshal(pw.Value, &answers) == nil {
				t.resume = answers
			}
			continue
		}
		if !ok || pw.Channel == errorKey || pw.Channel == interruptKey || pw.Channel == "__error_source_node__" {
			continue
		}
		t.cached = true
		if pw.Channel == noWritesKey {
			continue
		}
		v, err := l.decodeWrite(pw.Channel, pw.Value)
		if err != nil {
			// Undecodable writes cannot be trusted: run the task again.
			t.cached = false
			t.setWrites(nil)
			delete(byID, pw.TaskID)
			continue
		}
		t.addWrite(pw.Channel, v)
	}
}

func (l *loop) matchCache(ctx context.Context, tasks []*task) error {
	var keys []cache.Key
	for _, t := range tasks {
		if t.useCache && !t.cached {
			keys = append(keys, t.cacheKey)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	hits, err := l.g.cfg.Cache.Get(ctx, keys)
	if err != nil {
		return fmt.Errorf("node cache: %w", err)
	}
	for _, t := range tasks {
		b, ok := hits[t.cacheKey]
		if !t.useCache || t.cached || !ok {
			continue
		}
		var cw []cachedWrite
		if err := json.Unmarshal(b, &cw); err != nil {
			continue // a corrupt entry is a miss
		}
		writes := make([]KV, 0, len(cw))
		valid := true
		for _, w := range cw {
			v, err := l.decodeWrite(w.Channel, w.Value)
			if err != nil {
				valid = false
				break
			}
			writes = append(writes, KV{Key: w.Channel, Value: v})
		}
		if valid {
			t.setWrites(writes)
			t.cached = true
		}
	}
	return nil
}

// decodeWrite decodes a write read back from storage into the channel's
// value type (or, for reducers over slices, its element type).
func (l *loop) decodeWrite(channel string, raw json.RawMessage) (any, error) {
	if channel == tasksChannel {
		var s Send
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return s, nil
	}
	typ := l.g.cfg.ChannelTypes[channel]
	if typ == nil {
		var v any
		err := json.Unmarshal(raw, &v)
		return v, err
	}
	p := reflect.New(typ)
	err := json.Unmarshal(raw, p.Interface())
	if err == nil {
		return p.Elem().Interface(), nil
	}
	if typ.Kind() == reflect.Slice {
		e := reflect.New(typ.Elem())
		if json.Unmarshal(raw, e.Interface()) == nil {
			return e.Elem().Interface(), nil
		}
	}
	// An Overwrite saved as a pending write: {"__overwrite__": x}.
	var ow struct {
		Value *json.RawMessage `json:"__overwrite__"`
	}
	if json.Unmarshal(raw, &ow) == nil && ow.Value != nil {
		if json.Unmarshal(*ow.Value, p.Interface()) == nil {
			return Overwrite{Value: p.Elem().Interface()}, nil
		}
	}
	return nil, fmt.Errorf("write to %q does not decode into %s: %w", channel, typ, err)
}

func (l *loop) runTasks(ctx context.Context, tasks []*task) error {
	run := l.runBuf[:0]
	for _, t := range tasks {
		if !t.cached {
			t.nextCtx = l.ctxs.next()
			run = append(run, t)
		}
	}
	l.runBuf = run
	switch len(run) {
	case 0:
		return nil
	case 1:
		if err := run[0].execute(ctx); err == nil || !errors.Is(err, errInterruptSignal) {
			return err
		}
		return l.interrupted(tasks)
	}
	if err := runStep(ctx, run); err != nil {
		return err
	}
	return l.interrupted(tasks)
}

// interrupted collects the step's interrupts into an *Interrupted error.
// The writes of the tasks that finished are applied in memory only, so the
// returned state shows them, as upstream's final values do; nothing is
// checkpointed.
func (l *loop) interrupted(tasks []*task) error {
	if !slices.ContainsFunc(tasks, func(t *task) bool { return len(t.interrupts) > 0 || t.subInterrupted }) {
		return nil
	}
	var is []Interruption
	var done []*task
	var before, after []string
	stopped := false
	for _, t := range tasks {
		if len(t.interrupts) > 0 || t.subInterrupted {
			is = append(is, t.interrupts...)
			before, after = append(before, t.subBefore...), append(after, t.subAfter...)
			stopped = true
		} else {
			done = append(done, t)
		}
	}
	if !stopped {
		return nil
	}
	if len(done) > 0 {
		// Errors here only affect the in-memory view; the saved pending
		// writes are what a resume uses. As upstream, the root streams
		// the state they make as its last values; a subgraph does not.
		l.quietValues = l.ns != ""
		_, _ = l.apply(done)
		l.quietValues = false
	}
	return &Interrupted{Interrupts: is, Before: before, After: after}
}

func (l *loop) commitInterrupt(ctx context.Context, t *task) {
	if l.emit != nil {
		// The step's channels are not written until its barrier: reading
		// them from a task's goroutine is safe.
		l.emit.send(TaskInterrupted{Task: t.info(), Interrupts: slices.Clone(t.interrupts), Values: l.values()})
	}
	if l.saver == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	interrupts := t.interrupts
	if interrupts == nil {
		interrupts = []Interruption{}
	}
	is, _ := json.Marshal(interrupts)
	resume := t.resume
	if resume == nil {
		resume = []any{}
	}
	rs, err := json.Marshal(resume)
	if err != nil {
		rs = []byte("[]")
	}
	_ = l.putWrites(ctx, t.ID(), []checkpoints.Write{{Channel: interruptKey, Value: is}, {Channel: resumeKey, Value: rs}})
}

func (l *loop) commitSuccess(ctx context.Context, t *task, d time.Duration) error {
	if l.emit != nil {
		l.emit.send(TaskFinished{Task: t.info(), Writes: slices.Clone(t.writes), Duration: d, Attempts: t.attempts})
	}
	needEncode := l.saver != nil || t.useCache
	if !needEncode {
		return nil
	}
	// A successful task's writes are saved even when a sibling's failure
	// has cancelled the step: they are what lets a resume skip this task.
	// (Buffered for a StepSaver, they need no context until the step's
	// checkpoint is saved.)
	if l.stepSaver == nil || t.useCache {
		ctx = context.WithoutCancel(ctx)
	}
	// The Write slice goes back to the task once the saver is done with
	// it: a StepSaver's is saved with the step's checkpoint, before the
	// task runs again, and PutWrites keeps nothing. Async and exit saves
	// keep theirs for later.
	reuse := l.stepSaver != nil || (l.persist == nil && l.opts.Durability != DurabilityExit)
	var encoded []checkpoints.Write
	var err error
	if reuse {
		encoded, err = appendEncoded(t.encoded[:0], t.writes, &t.encBuf)
		t.encoded = encoded
	} else {
		encoded, err = appendEncoded(nil, t.writes, &t.encBuf)
	}
	if err != nil {
		return fmt.Errorf("node %q: %w", t.name, err)
	}
	if t.useCache {
		cw := make([]cachedWrite, len(encoded))
		for i, w := range encoded {
			cw[i] = cachedWrite{Channel: w.Channel, Value: w.Value}
		}
		if b, err := json.Marshal(cw); err == nil {
			if err := l.g.cfg.Cache.Set(ctx, []cache.Entry{{Key: t.cacheKey, Value: b, TTL: t.node.Cache.TTL}}); err != nil {
				return fmt.Errorf("node cache: %w", err)
			}
		}
	}
	if l.saver == nil {
		return nil
	}
	if len(encoded) == 0 {
		encoded = []checkpoints.Write{{Channel: noWritesKey, Value: json.RawMessage("null")}}
	}
	return l.putWrites(ctx, t.ID(), encoded)
}

func (l *loop) commitError(ctx context.Context, t *task) {
	ctx = context.WithoutCancel(ctx)
	if l.emit != nil {
		l.emit.send(TaskFailed{Task: t.info(), Err: t.err, Attempts: t.attempts})
	}
	if l.saver == nil {
		return
	}
	msg, _ := json.Marshal(t.err.Error())
	_ = l.putWrites(ctx, t.ID(), []checkpoints.Write{{Channel: errorKey, Value: msg}})
}

// encodeWrites encodes writes for a saver.
func encodeWrites(ws []KV) ([]checkpoints.Write, error) {
	var scratch []byte
	return appendEncoded(nil, ws, &scratch)
}

// appendEncoded encodes ws, appending them to out. Small values are
// encoded in *scratch (kept for the next call), then copied into one
// allocation of their exact size that they share; each is capped so that
// none can be appended into the next. The values are the saver's, never
// reused.
func appendEncoded(out []checkpoints.Write, ws []KV, scratch *[]byte) ([]checkpoints.Write, error) {
	if out == nil {
		out = make([]checkpoints.Write, 0, len(ws))
	}
	start := len(out)
	buf := (*scratch)[:0]
	defer func() { *scratch = buf }()
	var endBuf [4]int32
	ends := endBuf[:0] // end of each simple value in buf; -1: encoded apart
	for _, w := range ws {
		if next, ok := jsonfast.AppendSimple(buf, w.Value); ok {
			buf = next
			ends = append(ends, int32(len(buf)))
			out = append(out, checkpoints.Write{Channel: w.Key})
			continue
		}
		b, err := json.Marshal(w.Value)
		if err != nil {
			return out[:start], fmt.Errorf("write to %q is not JSON-encodable: %w", w.Key, err)
		}
		ends = append(ends, -1)
		out = append(out, checkpoints.Write{Channel: w.Key, Value: b})
	}
	if len(buf) > 0 {
		vals := make([]byte, len(buf))
		copy(vals, buf)
		from := 0
		for i, end := range ends {
			if end < 0 {
				continue
			}
			out[start+i].Value = vals[from:end:end]
			from = int(end)
		}
	}
	return out, nil
}

func (l *loop) putWrites(ctx context.Context, taskID string, ws []checkpoints.Write) error {
	switch {
	case l.stepSaver != nil:
		l.exitMu.Lock()
		l.stepWrites = append(l.stepWrites, checkpoints.TaskWrites{TaskID: taskID, Writes: ws})
		l.exitMu.Unlock()
		return nil
	case l.opts.Durability == DurabilityExit:
		l.exitMu.Lock()
		l.exitWrites = append(l.exitWrites, exitWrite{taskID: taskID, writes: ws})
		l.exitMu.Unlock()
		return nil
	case l.persist != nil:
		cfg := l.ckptCfg
		l.persist.submit(func(ctx context.Context) error {
			return l.saver.PutWrites(ctx, cfg, ws, taskID, "")
		})
		return nil
	}
	if err := l.saver.PutWrites(ctx, l.ckptCfg, ws, taskID, ""); err != nil {
		return fmt.Errorf("save writes of task %s: %w", taskID, err)
	}
	return nil
}

// apply is upstream's apply_writes: the barrier at the end of a superstep.
// It returns the indexes of the channels updated (those that can trigger
// nodes next).
func (l *loop) apply(tasks []*task) ([]int, error) {
	l.stateVal = nil
	sortTasks(tasks)
	bump := false
	for _, t := range tasks {
		if len(t.triggers) > 0 {
			bump = true
		}
		n := t.node
		if n == nil {
			continue
		}
		s := l.seen[n.idx]
		if s == nil {
			if n.idx < len(l.seenStore) && cap(l.seenStore[n.idx]) >= len(n.trig) {
				s = l.seenStore[n.idx][:len(n.trig)]
				clear(s)
			} else {
				s = make([]int64, len(n.trig))
			}
			l.seen[n.idx] = s
		}
		l.seenDirty[n.idx] = true
		if !t.push && !t.asUpdate {
			for k, c := range n.trig {
				if v := l.versions[c]; v > 0 {
					s[k] = v
				}
			}
		}
	}
	next := l.maxVersion + 1
	l.bumps = l.bumps[:0]
	track := l.g.statePlan != nil && l.stateBuf != nil && !l.stateAll
	setVersion := func(c int) {
		if l.emit != nil {
			l.bumps = append(l.bumps, ChannelBump{Channel: l.g.chanNames[c], Old: l.versions[c], New: next})
		}
		l.versions[c] = next
		l.maxVersion = next
		if track {
			if len(l.stateDirty) < len(l.chans) {
				l.stateDirty = append(l.stateDirty, c)
			} else {
				l.stateAll = true
			}
		}
	}
	for _, t := range tasks {
		if t.node == nil || t.push || t.asUpdate {
			continue
		}
		for _, c := range t.node.trig {
			if l.versions[c] != next && l.chans[c].Consume() {
				setVersion(c)
			}
		}
	}
	// Group writes by channel in barrier order.
	for _, c := range l.touched {
		l.grouped[c] = l.grouped[c][:0]
		l.touchedSet[c] = false
	}
	l.touched = l.touched[:0]
	for _, t := range tasks {
		for i, w := range t.writes {
			if reservedWrite(w.Key) {
				continue
			}
			c, ok := t.chanOf(i)
			if !ok {
				return nil, fmt.Errorf("%w: node %q wrote to unknown channel %q", ErrInvalidUpdate, t.name, w.Key)
			}
			if !l.touchedSet[c] {
				l.touchedSet[c] = true
				l.touched = append(l.touched, c)
			}
			l.grouped[c] = append(l.grouped[c], w.Value)
		}
	}
	updated := l.updated[:0]
	for _, c := range l.touched {
		ch := l.chans[c]
		changed, err := ch.Update(l.grouped[c])
		if err != nil {
			return nil, fmt.Errorf("at key %q: %w", l.g.chanNames[c], err)
		}
		if changed {
			setVersion(c)
			if ch.IsAvailable() {
				updated = append(updated, c)
			}
		}
	}
	if bump {
		// Only channels that may hold something an unwritten step clears
		// are asked (volFull); the rest are empty or never change.
		next := l.volNext[:0]
		for _, c := range l.volFull {
			l.volIn[c] = false
			if l.touchedSet[c] {
				continue // written this step: re-added below
			}
			ch := l.chans[c]
			if changed, _ := ch.Update(nil); changed {
				setVersion(c)
				if ch.IsAvailable() {
					updated = append(updated, c)
				}
			}
			if l.g.volKind[c] == volUnknown || ch.IsAvailable() {
				next = append(next, c)
				l.volIn[c] = true
			}
		}
		l.volFull, l.volNext = next, l.volFull[:0]
		triggers := false
		for _, c := range updated {
			if len(l.g.trigNodes[c]) > 0 {
				triggers = true
				break
			}
		}
		if !triggers {
			for c, ch := range l.chans {
				if ch.Finish() {
					setVersion(c)
					if ch.IsAvailable() && !slices.Contains(updated, c) {
						updated = append(updated, c)
					}
				}
			}
		}
	}
	added := false
	for _, c := range l.touched {
		if l.g.volKind[c] != 0 && !l.volIn[c] {
			l.volFull = append(l.volFull, c)
			l.volIn[c] = true
			added = true
		}
	}
	if added {
		slices.Sort(l.volFull) // bumps are reported in channel order
	}
	sortFew(updated)
	l.updated, l.updatedKnown = updated, true
	if l.emit != nil {
		names := make([]string, len(updated))
		for i, c := range updated {
			names[i] = l.g.chanNames[c]
		}
		ev := BarrierApplied{Namespace: l.ns, Step: l.step, Bumps: slices.Clone(l.bumps), Updated: names}
		for _, c := range l.g.streamIdx {
			if !l.quietValues && slices.Contains(updated, c) {
				ev.Values = l.values()
				break
			}
		}
		l.emit.send(ev)
	}
	return updated, nil
}

// putCheckpoint records the state after a step (or the input) as a new
// checkpoint and advances the step.
func (l *loop) putCheckpoint(ctx context.Context, source checkpoints.Source) error {
	l.newCheckpointID()
	defer func() { l.step++ }()
	if l.saver == nil || l.opts.Durability == DurabilityExit {
		if l.emit != nil {
			cfg := checkpoints.Config{ThreadID: l.opts.ThreadID, Namespace: l.ns, CheckpointID: l.ckptID}
			l.lastSaved = &CheckpointSaved{Config: cfg, Parent: l.evParent, Metadata: l.metadata(source), Values: l.values()}
			l.evParent = &cfg
		}
		return nil
	}
	return l.saveCheckpoint(ctx, source)
}

// noParents is the Parents of root checkpoints saved without a listener.
var noParents = map[string]string{}

func (l *loop) metadata(source checkpoints.Source) checkpoints.Metadata {
	md := checkpoints.Metadata{Source: source, Step: l.step, Parents: noParents, RunID: l.opts.RunID}
	if len(l.parents) > 0 || l.emit != nil {
		// A listener gets a map of its own; savers never modify the
		// shared empty one.
		md.Parents = maps.Clone(l.parents)
		if md.Parents == nil {
			md.Parents = map[string]string{}
		}
	}
	if len(l.opts.Metadata) > 0 {
		md.Extra = maps.Clone(l.opts.Metadata)
	}
	return md
}

// seenFrame is versions_seen in a frame's form; buf holds room for the
// nodes that ran since the last frame (see frame).
func (l *loop) seenFrame(buf []int64) []checkpoints.SeenVersions {
	// Sized exactly: a frame is kept for as long as its checkpoint.
	noInput := !slices.ContainsFunc(l.extraSeen, func(s checkpoints.SeenVersions) bool { return s.Node == inputTask })
	n := len(l.extraSeen)
	if noInput {
		n++
	}
	for _, s := range l.seen {
		if s != nil {
			n++
		}
	}
	if l.seenInterrupt != nil {
		n++
	}
	out := make([]checkpoints.SeenVersions, 0, n)
	if noInput {
		out = append(out, checkpoints.SeenVersions{Node: inputTask})
	}
	out = append(out, l.extraSeen...)
	for i, s := range l.seen {
		if s == nil {
			continue
		}
		n := l.g.nodeList[i]
		frozen := l.seenFrozen[i]
		if frozen == nil || l.seenDirty[i] {
			frozen, buf = buf[:len(s):len(s)], buf[len(s):]
			copy(frozen, s)
			l.seenFrozen[i], l.seenDirty[i] = frozen, false
		}
		out = append(out, checkpoints.SeenVersions{Node: n.Name, Channels: n.Triggers, Versions: frozen})
	}
	if l.seenInterrupt != nil {
		out = append(out, checkpoints.SeenVersions{Node: interruptKey, Channels: l.g.chanNames, Versions: l.seenInterrupt})
	}
	return out
}

// frame builds the checkpoint of the current state; only the channels
// whose versions changed since the last put are encoded.
func (l *loop) frame() (*checkpoints.Frame, error) {
	// One allocation holds the versions and the versions seen of the
	// nodes that ran.
	need := len(l.versions)
	for i, s := range l.seen {
		if s != nil && (l.seenFrozen[i] == nil || l.seenDirty[i]) {
			need += len(s)
		}
	}
	buf := make([]int64, need)
	n := copy(buf, l.versions)
	f := &checkpoints.Frame{
		ID:       l.ckptID,
		TS:       time.Now().UTC(),
		Channels: l.g.chanNames,
		Versions: buf[:n:n],
		Seen:     l.seenFrame(buf[n:]),
	}
	if l.updatedKnown {
		if l.updNames == nil || !slices.Equal(l.updIdx, l.updated) {
			l.updNames = make([]string, len(l.updated))
			for i, c := range l.updated {
				l.updNames[i] = l.g.chanNames[c]
			}
			l.updIdx = append(l.updIdx[:0], l.updated...)
		}
		f.UpdatedChannels = l.updNames
	}
	changed := 0
	for c, v := range f.Versions {
		if v != 0 && (!l.hasSaved || l.saved[c] != v) {
			changed++
		}
	}
	f.New = make([]checkpoints.FrameValue, 0, changed)
	for c, v := range f.Versions {
		if v == 0 || (l.hasSaved && l.saved[c] == v) {
			continue
		}
		raw, ok, err := l.chans[c].Checkpoint()
		if err != nil {
			return nil, fmt.Errorf("encode channel %q: %w", l.g.chanNames[c], err)
		}
		if !ok {
			raw = nil
		}
		f.New = append(f.New, checkpoints.FrameValue{Index: c, Value: raw})
	}
	// The frame is the saver's now and never modified: the next put
	// replaces l.saved instead of writing into it.
	l.saved, l.hasSaved = f.Versions, true
	return f, nil
}

func (l *loop) saveCheckpoint(ctx context.Context, source checkpoints.Source) error {
	f, err := l.frame()
	if err != nil {
		return err
	}
	md := l.metadata(source)
	parent := l.ckptCfg
	parent.ThreadID, parent.Namespace = l.opts.ThreadID, l.ns
	next := checkpoints.Config{ThreadID: l.opts.ThreadID, Namespace: l.ns, CheckpointID: f.ID}
	l.ckptCfg = next
	if l.emit != nil {
		var parentPtr *checkpoints.Config
		if parent.CheckpointID != "" {
			p := parent
			parentPtr = &p
		}
		ev := &CheckpointSaved{Config: next, Parent: parentPtr, Metadata: md, Values: l.values()}
		l.lastSaved, l.evParent = ev, &ev.Config
	}
	if l.persist != nil {
		l.persist.submit(func(ctx context.Context) error {
			return l.put(ctx, parent, nil, f, md)
		})
		return nil
	}
	var writes []checkpoints.TaskWrites
	if l.stepSaver != nil {
		l.exitMu.Lock()
		writes = l.stepWrites
		l.stepWrites = nil
		l.exitMu.Unlock()
	}
	err = l.put(ctx, parent, writes, f, md)
	if writes != nil {
		// The saver kept the values, not the slices: the next step
		// buffers its writes here.
		clear(writes)
		l.exitMu.Lock()
		if l.stepWrites == nil {
			l.stepWrites = writes[:0]
		}
		l.exitMu.Unlock()
	}
	return err
}

// put saves a frame, with the writes of the step that led to it (which
// only a StepSaver is given), in the form the saver takes.
func (l *loop) put(ctx context.Context, parent checkpoints.Config, writes []checkpoints.TaskWrites, f *checkpoints.Frame, md checkpoints.Metadata) error {
	var err error
	if l.frameSaver != nil {
		_, err = l.frameSaver.PutFrame(ctx, parent, writes, f, md)
	} else if cp, newVersions, cerr := f.Checkpoint(); cerr != nil {
		err = cerr
	} else if l.stepSaver != nil {
		_, err = l.stepSaver.PutStep(ctx, parent, writes, cp, md, newVersions)
	} else {
		_, err = l.saver.Put(ctx, parent, cp, md, newVersions)
	}
	if err != nil {
		return fmt.Errorf("save checkpoint %s: %w", f.ID, err)
	}
	return nil
}

// finishPersist flushes background saves, and in exit durability saves the
// final checkpoint and the pending writes of the step that stopped.
func (l *loop) finishPersist(ctx context.Context, runErr error) error {
	if l.saver == nil {
		return nil
	}
	if err := l.flushStepWrites(ctx); err != nil {
		return err
	}
	if l.opts.Durability == DurabilityExit && l.ckptID != "" && l.ckptCfg.CheckpointID != l.ckptID {
		pctx := context.WithoutCancel(ctx)
		if runErr == nil || l.ckptID != "" {
			if err := l.saveCheckpointAt(pctx); err != nil {
				return err
			}
		}
		for _, w := range l.exitWrites {
			if err := l.saver.PutWrites(pctx, l.ckptCfg, w.writes, w.taskID, ""); err != nil {
				return err
			}
		}
	}
	if l.persist != nil {
		return l.persist.wait()
	}
	return nil
}

// withFlush returns err, joined with a failure to save writes if any.
func withFlush(err, flushErr error) error {
	if flushErr == nil {
		return err
	}
	return errors.Join(err, flushErr)
}

// flushStepWrites saves buffered task writes on their own: the step did
// not reach its checkpoint (a task failed or interrupted, or the run
// ended), and the writes of the tasks that succeeded must survive.
func (l *loop) flushStepWrites(ctx context.Context) error {
	if l.stepSaver == nil {
		return nil
	}
	l.exitMu.Lock()
	writes := l.stepWrites
	l.stepWrites = nil
	l.exitMu.Unlock()
	ctx = context.WithoutCancel(ctx)
	for _, w := range writes {
		if err := l.saver.PutWrites(ctx, l.ckptCfg, w.Writes, w.TaskID, w.TaskPath); err != nil {
			return fmt.Errorf("save writes of task %s: %w", w.TaskID, err)
		}
	}
	return nil
}

// saveCheckpointAt saves the in-memory current checkpoint (exit
// durability) with the step it was created at.
func (l *loop) saveCheckpointAt(ctx context.Context) error {
	if !l.hasVersions() {
		return nil
	}
	l.step--
	defer func() { l.step++ }()
	src := checkpoints.SourceLoop
	if l.step < 0 {
		src = checkpoints.SourceInput
	}
	return l.saveCheckpoint(ctx, src)
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

// persister runs saves in the background, in submission order.
type persister struct {
	jobs chan persistJob
	done chan struct{}
	err  error
	// mu guards closed: WaitCheckpoint may flush from a goroutine a node
	// left behind after the run ended and wait closed jobs.
	mu     sync.Mutex
	closed bool
}

// persistJob is a save, or a barrier that receives the first error once
// every earlier job has run.
type persistJob struct {
	fn      func(context.Context) error
	barrier chan error
}

func newPersister() *persister {
	p := &persister{jobs: make(chan persistJob, 64), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for job := range p.jobs {
			switch {
			case job.barrier != nil:
				job.barrier <- p.err
			case p.err == nil:
				p.err = job.fn(context.Background())
			}
		}
	}()
	return p
}

func (p *persister) submit(job func(context.Context) error) { p.jobs <- persistJob{fn: job} }

// flush waits until every save submitted so far has run.
func (p *persister) flush() error { return p.flushCtx(context.Background()) }

// flushCtx is flush, given up when ctx ends.
func (p *persister) flushCtx(ctx context.Context) error {
	b := make(chan error, 1)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.done
		return p.err
	}
	select {
	case p.jobs <- persistJob{barrier: b}:
	case <-ctx.Done():
		p.mu.Unlock()
		return ctx.Err()
	}
	p.mu.Unlock()
	select {
	case err := <-b:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *persister) wait() error {
	p.mu.Lock()
	p.closed = true
	close(p.jobs)
	p.mu.Unlock()
	<-p.done
	return p.err
}
