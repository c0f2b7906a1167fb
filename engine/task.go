package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine/channels"
	"github.com/superstep-dev/superstep/store"
)

// task is one node execution within a superstep. Tasks are pooled
// (newTask): taskRun is cleared when one is reused, taskBufs keeps its
// storage.
type task struct {
	taskRun
	taskBufs
}

// taskRun is a task's state for one execution.
type taskRun struct {
	l        *loop
	id       string // computed lazily by ID
	name     string
	node     *Node
	push     bool
	idx      int
	triggers []string
	input    any
	// cached: the writes came from the cache or from pending writes; the
	// node does not run.
	cached   bool
	cacheKey cache.Key
	useCache bool
	attempts int
	err      error
	// builtInput: input was built from the state by the node's plan (a
	// pointer to a fresh struct), not given by a Send.
	builtInput bool
	// shown is the input as events show it (inputChannels), built once
	// per task: by the loop when it plans the step, before the task's
	// goroutine reads it.
	shown    any
	hasShown bool
	// asUpdate marks a task made by UpdateState: it bumps the step but
	// records no trigger versions and consumes nothing.
	asUpdate bool
	// tctx is the context of the current execution (nil between them);
	// nextCtx is the fresh one the loop has set aside for the next.
	tctx, nextCtx *taskContext

	// Interrupts: answers given so far (by call order), the next call's
	// index, and the interrupts raised by this execution.
	imu        sync.Mutex
	resume     []any
	intrIdx    int
	interrupts []Interruption
	// subInterrupted: a subgraph run by this task stopped (a breakpoint
	// or an interrupt inside it).
	subInterrupted bool
	// subBefore and subAfter are the breakpoints the subgraph stopped at,
	// qualified with this task's node name ("research:plan").
	subBefore, subAfter []string
}

// taskBufs is storage a pooled task keeps from one execution to the
// next; newTask empties the slices.
type taskBufs struct {
	writes []KV
	wbuf   [2]KV // storage for the first writes, so most tasks never grow writes
	// wch[i] is the index+1 of writes[i]'s channel (0: look it up), valid
	// while it is as long as writes (setWrites empties it).
	wch   []int32
	wcbuf [2]int32
	// encoded is storage for the encoded writes, when the saver is done
	// with them before the task runs again (see commitSuccess); encBuf is
	// scratch space for encoding their values.
	encoded []checkpoints.Write
	encBuf  []byte
	ov      overlay
	// scratch is the *S a conditional edge's router state is built in.
	scratch any
}

// inputTaskOf is the pseudo-task of a run's (or an update's) input
// writes.
func inputTaskOf(l *loop, writes []KV) *task {
	t := &task{}
	t.l, t.name, t.writes = l, inputTask, writes
	return t
}

// ID is the task's deterministic id (upstream's derivation), computed on
// first use: runs without a checkpointer, listener or cache never need it.
//
// When a saver or listener needs ids the loop computes them while planning
// (one goroutine); otherwise only the task's own goroutine computes its id
// (for an interrupt), so t.id has a single writer. The shared hasher
// buffer is guarded for that case.
func (t *task) ID() string {
	if t.id == "" {
		l := t.l
		ns := l.taskNS(t.name)
		l.hmu.Lock()
		// The step's checkpoint id is materialised here on first need
		// (runs without a saver or listener never need it).
		ckpt := l.checkpointBytes()
		if t.push {
			t.id = l.hasher.pushID(ckpt, ns, t.step(), t.name, t.idx)
		} else {
			t.id = l.hasher.pullID(ckpt, ns, t.step(), t.name, t.triggers)
		}
		l.hmu.Unlock()
	}
	return t.id
}

func (t *task) step() int { return t.l.step }

// taskContext carries the task to Attempt, Emit and friends. There is
// one per execution, never reused: a node may keep its context (in a
// goroutine that outlives it), and the context must stay what it was —
// the run's values and cancellation — while the task object goes on to
// other executions. Once the execution is over, t is nil and the context
// no longer belongs to a node. They are allocated in blocks
// (taskContexts), each element used once, and hold the context they run
// under through a ctxHolder that the run's executions share: two words,
// where embedding the context would take three.
type taskContext struct {
	h *ctxHolder
	// t is the running *task: set before the context is handed to the
	// node (a plain write, as nothing else can see the context yet) and
	// cleared atomically when the execution ends. It is also the Writes
	// of a Writes node that cannot retry (callWrites).
	t unsafe.Pointer
}

// ctxHolder is the context executions run under: the run's, or a
// parallel step's. Once handed to an execution it never changes.
type ctxHolder struct{ ctx context.Context }

func (c *taskContext) Deadline() (time.Time, bool) { return c.h.ctx.Deadline() }
func (c *taskContext) Done() <-chan struct{}       { return c.h.ctx.Done() }
func (c *taskContext) Err() error                  { return c.h.ctx.Err() }

func (c *taskContext) Value(key any) any {
	if key == (taskCtxKey{}) {
		if t := atomic.LoadPointer(&c.t); t != nil {
			return (*task)(t)
		}
		return nil
	}
	return c.h.ctx.Value(key)
}

func (t *task) addWrite(channel string, v any) {
	t.writes = append(t.writes, KV{Key: channel, Value: v})
	t.wch = append(t.wch, 0)
}

// addWriteAt is addWrite by a writer that knows the channel's index, so
// the barrier need not look the name up.
func (t *task) addWriteAt(channel string, idx int, v any) {
	t.writes = append(t.writes, KV{Key: channel, Value: v})
	t.wch = append(t.wch, int32(idx)+1)
}

// setWrites replaces the task's writes; their channel indexes are unknown.
func (t *task) setWrites(ws []KV) {
	t.writes, t.wch = ws, t.wch[:0]
}

// chanOf returns the index of the i-th write's channel.
func (t *task) chanOf(i int) (int, bool) {
	if len(t.wch) == len(t.writes) && t.wch[i] > 0 {
		return int(t.wch[i]) - 1, true
	}
	c, ok := t.l.g.chanIdx[t.writes[i].Key]
	return c, ok
}

func (t *task) info() TaskInfo {
	in := t.input
	if t.builtInput {
		// The state builder hands nodes a *S; events show what upstream
		// does: the node's input keys that hold a value (a struct has a
		// zero value for every key, set or not).
		if !t.hasShown {
			t.shown, t.hasShown = t.inputChannels(), true
		}
		in = t.shown
	}
	info := t.ref()
	info.Input = in
	return info
}

// checkpointNS is the task's checkpoint namespace, "<node>:<task id>"
// under its graph's: where a subgraph it runs keeps its checkpoints, and
// what its interrupts' ids hash.
func (t *task) checkpointNS() string { return t.l.taskNS(t.name) + ":" + t.ID() }

// ref is the task's info without its input (which costs a map to build).
func (t *task) ref() TaskInfo {
	path := pullKind
	if t.push {
		path = pushKind
	}
	return TaskInfo{ID: t.ID(), Name: t.name, Step: t.l.step, Triggers: t.triggers, Path: path, Index: t.idx, Namespace: t.l.ns}
}

// inputChannels is the node's input as a map of the channels its plan
// reads that hold a value, or the built input when there is no plan.
func (t *task) inputChannels() any {
	if t.node == nil || t.node.inputKeys == nil || t.push {
		if rv := reflect.ValueOf(t.input); rv.Kind() == reflect.Pointer && !rv.IsNil() {
			return rv.Elem().Interface()
		}
		return t.input
	}
	out := make(map[string]any, len(t.node.inputKeys))
	for _, c := range t.node.inputKeys {
		i, ok := t.l.g.chanIdx[c]
		if !ok {
			continue
		}
		if v, ok := t.l.chans[i].Get(); ok {
			out[c] = v
		}
	}
	return out
}

type taskCtxKey struct{}

func taskFrom(ctx context.Context) *task {
	t, _ := ctx.Value(taskCtxKey{}).(*task)
	return t
}

// Attempt returns the 1-based attempt number of the running node (0 when
// ctx does not belong to a node).
func Attempt(ctx context.Context) int {
	if t := taskFrom(ctx); t != nil {
		return t.attempts
	}
	return 0
}

// Step returns the superstep of the running node (-1 outside a node).
func Step(ctx context.Context) int {
	if t := taskFrom(ctx); t != nil {
		return t.l.step
	}
	return -1
}

// TaskContext is what a running node may know about where it runs: the
// thread, the run, the checkpoint its step runs from, and the task. Model
// code keys per-thread choices (prompt-cache latches) and finds the
// previous call of its lineage with it.
type TaskContext struct {
	ThreadID string
	RunID    string
	// CheckpointID is the checkpoint the task's step runs from ("" when
	// the graph keeps no checkpoints and nothing asked for ids).
	CheckpointID string
	// Namespace is the checkpoint namespace of the graph running the task
	// ("" at the root); CheckpointNS the task's own ("<node>:<task id>"
	// under it).
	Namespace    string
	CheckpointNS string
	Node         string
	TaskID       string
	// Path is the task's path as upstream writes it.
	Path    []any
	Step    int
	Attempt int
}

// CurrentTask returns the running node's TaskContext; false outside a
// node.
func CurrentTask(ctx context.Context) (TaskContext, bool) {
	t := taskFrom(ctx)
	if t == nil {
		return TaskContext{}, false
	}
	return TaskContext{
		ThreadID: t.l.opts.ThreadID, RunID: t.l.opts.RunID, CheckpointID: t.l.ckptID,
		Namespace: t.l.ns, CheckpointNS: t.checkpointNS(), Node: t.name, TaskID: t.ID(),
		Path: taskPath(t.push, t.name, t.idx), Step: t.l.step, Attempt: t.attempts,
	}, true
}

// ErrCheckpointNotSaved: the running node's run saves no checkpoint
// before it ends (DurabilityExit), so WaitCheckpoint cannot wait for one.
var ErrCheckpointNotSaved = errors.New("engine: this run saves its checkpoints only when it ends (DurabilityExit)")

// WaitCheckpoint blocks until the checkpoint the running node's step runs
// from, and every one before it, is saved: under DurabilityAsync those
// saves run beside the step's tasks, and code that reads the thread's
// history from a node (a lineage walk) must not read ahead of them. It
// returns at once under DurabilitySync, without a checkpointer, and
// outside a node; ErrCheckpointNotSaved under DurabilityExit; ctx's error
// if ctx ends first.
func WaitCheckpoint(ctx context.Context) error {
	t := taskFrom(ctx)
	if t == nil || t.l.saver == nil {
		return nil
	}
	if t.l.opts.Durability == DurabilityExit {
		return ErrCheckpointNotSaved
	}
	if t.l.persist == nil {
		return nil
	}
	return t.l.persist.flushCtx(ctx)
}

// StoreFrom returns the long-term store of the graph running the node, or
// nil when the graph was compiled without one (or ctx is not a node's).
func StoreFrom(ctx context.Context) store.Store {
	if t := taskFrom(ctx); t != nil {
		return t.l.g.cfg.Store
	}
	return nil
}

// Emit sends a custom event from the running node to the run's listener
// (stream mode "custom"). It is a no-op outside a node or when nobody
// listens.
func Emit(ctx context.Context, payload any) {
	t := taskFrom(ctx)
	if t == nil || t.l.emit == nil {
		return
	}
	t.l.emit.send(Custom{Task: t.info(), Payload: payload})
}

// RemainingSteps is how many supersteps the running node's run may still
// take before it hits its recursion limit, counting the current one
// (upstream's RemainingSteps managed value: 1 on the last step allowed).
// Outside a node it is 0.
func RemainingSteps(ctx context.Context) int {
	if t := taskFrom(ctx); t != nil {
		return t.l.stop - t.l.step
	}
	return 0
}

// IsLastStep reports whether the running node runs in the last superstep
// its run's recursion limit allows (upstream's IsLastStep).
func IsLastStep(ctx context.Context) bool {
	t := taskFrom(ctx)
	return t != nil && t.l.step == t.l.stop-1
}

// EmitMessageChunk streams a chunk of a chat model's reply from the
// running node (stream mode "messages"), with the model's metadata
// (ls_provider, ls_model_name, ...) added to upstream's keys. A chunk
// whose type has a MessageID method is known by that id: the node's
// output repeating the message is not streamed again. It is a no-op
// outside a node or when nobody listens.
func EmitMessageChunk(ctx context.Context, chunk any, model map[string]any) {
	t := taskFrom(ctx)
	if t == nil || t.l.emit == nil {
		return
	}
	info := t.ref()
	t.l.emit.send(MessageChunk{Task: info, Chunk: chunk, Metadata: messageMetadata(info, t.l.opts.ThreadID, t.l.opts.RunID, model)})
}

// messageMetadata is upstream's metadata of a "messages" part from task
// info, plus extra keys (a model's).
func messageMetadata(info TaskInfo, threadID, runID string, extra map[string]any) map[string]any {
	ns := info.Name + ":" + info.ID
	if info.Namespace != "" {
		ns = info.Namespace + "|" + ns
	}
	md := make(map[string]any, 8+len(extra))
	for k, v := range extra {
		md[k] = v
	}
	md["langgraph_step"] = info.Step
	md["langgraph_node"] = info.Name
	md["langgraph_triggers"] = info.Triggers
	md["langgraph_path"] = info.TaskPath()
	md["langgraph_checkpoint_ns"] = ns
	md["checkpoint_ns"] = ns
	if threadID != "" {
		md["thread_id"] = threadID
	}
	if runID != "" {
		md["run_id"] = runID
	}
	return md
}

// call runs the node function, turning a panic into a *PanicError.
func (t *task) call(ctx context.Context) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	if f := t.node.funcW; f != nil {
		out, err = t.callWrites(ctx, f)
	} else {
		out, err = t.node.Func(ctx, t.input)
	}
	if err != nil {
		return nil, err
	}
	for _, w := range t.node.writers {
		if err := w.write(t, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// execute runs the task with its retry policies and commits the result;
// h holds ctx.
func (t *task) execute(ctx context.Context, h *ctxHolder) error {
	l := t.l
	tctx := t.nextCtx
	if tctx == nil {
		tctx = &taskContext{}
	}
	t.nextCtx = nil
	tctx.h = h
	tctx.t = unsafe.Pointer(t)
	t.tctx = tctx
	defer func() {
		atomic.StorePointer(&tctx.t, nil)
		t.tctx = nil
	}()
	var start time.Time
	if l.emit != nil {
		start = time.Now() // durations are only reported in events
	}
	for {
		t.attempts++
		t.setWrites(t.writes[:0])
		t.intrIdx, t.interrupts, t.subInterrupted = 0, nil, false
		t.subBefore, t.subAfter = nil, nil
		if l.emit != nil {
			l.emit.send(TaskStarted{Task: t.info(), Attempt: t.attempts})
		}
		_, err := t.call(tctx)
		if len(t.interrupts) > 0 || t.subInterrupted {
			// Interrupted (even if the node swallowed the signal): not a
			// failure, not retried, and the node's other writes are dropped.
			l.commitInterrupt(ctx, t)
			return errInterruptSignal
		}
		if err == nil {
			var d time.Duration
			if l.emit != nil {
				d = time.Since(start)
			}
			return l.commitSuccess(ctx, t, d)
		}
		if ctx.Err() != nil {
			// A sibling failed or the run was cancelled: not this task's fault.
			t.setWrites(t.writes[:0])
			return ctx.Err()
		}
		p, ok := policyFor(t.retryPolicies(), err)
		if !ok || t.attempts >= p.maxAttempts() {
			t.err = err
			l.commitError(ctx, t)
			return fmt.Errorf("node %q: %w", t.name, err)
		}
		wait := p.wait(t.attempts, err)
		if l.emit != nil {
			l.emit.send(TaskRetried{Task: t.info(), Attempt: t.attempts, Err: err, Backoff: wait})
		}
		if err := sleepCtx(ctx, wait); err != nil {
			return err
		}
	}
}

// taskContexts hands out fresh task contexts from blocks, so a run of
// many one-task supersteps does not allocate one per task. An element is
// handed out once and never reused: a context a node keeps holds its
// block, whose other elements are the kept contexts of other executions
// or were never used. It belongs to the loop's goroutine.
type taskContexts struct {
	block []taskContext
}

// taskContextBlock is how many contexts a block holds: a few kilobytes at
// most stay alive for a node that keeps its context.
const taskContextBlock = 64

func (c *taskContexts) next() *taskContext {
	if len(c.block) == 0 {
		c.block = make([]taskContext, taskContextBlock)
	}
	tc := &c.block[0]
	c.block = c.block[1:]
	return tc
}

// readInput builds a pull task's input from the current channels.
func (l *loop) readInput(n *Node) (any, bool, error) {
	if n.sharedInput {
		v, err := l.state()
		return v, true, err
	}
	if n.input != nil {
		v, err := n.input(l.reader())
		return v, true, err
	}
	var in any
	if n.ReadSingle {
		v, ok := l.chans[n.read[0]].Get()
		if !ok {
			return nil, false, nil
		}
		in = v
	} else {
		m := make(map[string]any, len(n.read))
		for k, c := range n.read {
			if v, ok := l.chans[c].Get(); ok {
				m[n.Channels[k]] = v
			}
		}
		in = m
	}
	if n.Mapper != nil {
		v, err := n.Mapper(in)
		if err != nil {
			return nil, false, fmt.Errorf("node %q: input mapper: %w", n.Name, err)
		}
		in = v
	}
	return in, true, nil
}

// reader reads channels by index; StateGraph input builders use it.
type reader interface {
	read(channel int) (any, bool)
}

type chanReader []channels.Channel

func (r chanReader) read(c int) (any, bool) {
	if c < 0 || c >= len(r) {
		return nil, false
	}
	return r[c].Get()
}

// reader returns the loop's channels as a reader; the interface value is
// made once per run (converting a slice to an interface allocates).
func (l *loop) reader() reader {
	if l.rd == nil {
		l.rd = chanReader(l.chans)
	}
	return l.rd
}

// localRead gives the state as it would be after applying only this task's
// writes: what a conditional edge sees (upstream's fresh local read). The
// overlay reuses the task's buffers.
func (t *task) localRead() (reader, error) {
	l := t.l
	ov := &t.ov
	ov.base = chanReader(l.chans)
	ov.names, ov.vals = ov.names[:0], ov.vals[:0]
	for i, w := range t.writes {
		if reservedWrite(w.Key) {
			continue
		}
		ci, ok := t.chanOf(i)
		if !ok || (len(ov.names) > 0 && slices.Contains(ov.names, ci)) {
			continue
		}
		ch := l.chans[ci]
		n := 1
		for _, w2 := range t.writes[i+1:] {
			if w2.Key == w.Key {
				n++
			}
		}
		if _, last := ch.(*channels.LastValue); last && n == 1 {
			ov.names, ov.vals = append(ov.names, ci), append(ov.vals, w.Value)
			continue
		}
		var vals []any
		for _, w2 := range t.writes[i:] {
			if w2.Key == w.Key {
				vals = append(vals, w2.Value)
			}
		}
		c := ch.Copy()
		if _, err := c.Update(vals); err != nil {
			return nil, fmt.Errorf("at key %q: %w", w.Key, err)
		}
		v, _ := c.Get()
		ov.names, ov.vals = append(ov.names, ci), append(ov.vals, v)
	}
	if len(ov.names) == 0 {
		return l.reader(), nil
	}
	return ov, nil
}

// overlay reads channels with some values replaced.
type overlay struct {
	base  chanReader
	names []int
	vals  []any
}

func (o *overlay) read(c int) (any, bool) {
	for i, n := range o.names {
		if n == c {
			return o.vals[i], true
		}
	}
	return o.base.read(c)
}

// decodeArg turns a Send argument read back from a checkpoint into the
// target node's input type.
func decodeArg(n *Node, arg any) (any, error) {
	raw, ok := arg.(json.RawMessage)
	if !ok {
		return arg, nil
	}
	typ := n.inType
	if typ == nil {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		return v, nil
	}
	p := reflect.New(typ)
	if err := json.Unmarshal(raw, p.Interface()); err != nil {
		return nil, fmt.Errorf("send to %q: argument does not decode into %s: %w", n.Name, typ, err)
	}
	return p.Elem().Interface(), nil
}

// UnmarshalJSON keeps Arg as raw JSON: the target node's input type, known
// only when the task is prepared, decides how to decode it.
func (s *Send) UnmarshalJSON(b []byte) error {
	var w struct {
		Node string          `json:"node"`
		Arg  json.RawMessage `json:"arg"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	s.Node, s.Arg = w.Node, w.Arg
	return nil
}

func fmtAny(v any) string {
	switch x := v.(type) {
	case error:
		return x.Error()
	case string:
		return x
	}
	return strings.TrimSpace(fmt.Sprintf("%v", v))
}

func sortTasks(ts []*task) {
	if len(ts) < 2 || slices.IsSortedFunc(ts, cmpTasks) {
		return // planned in barrier order, as a step of pull tasks is
	}
	slices.SortFunc(ts, cmpTasks)
}

// cmpTasks orders tasks as upstream's barrier does: pull tasks by node
// name, then push tasks by Send index. Pull tasks of the graph's nodes
// compare by node index, which is node name order (nodeNames is sorted).
func cmpTasks(a, b *task) int {
	switch {
	case a.push != b.push:
		if a.push {
			return 1
		}
		return -1
	case a.push:
		return cmp.Compare(a.idx, b.idx)
	case a.node != nil && b.node != nil && a.l == b.l:
		return cmp.Compare(a.node.idx, b.node.idx)
	}
	return strings.Compare(a.name, b.name)
}
