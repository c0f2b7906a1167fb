package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
)

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
	if l.stepSaver != nil {
		// Only a StepSaver's steps count their tasks (commitSuccess);
		// the atomic store is not free in a loop of tiny steps.
		l.toFinish.Store(int32(len(run)))
	}
	switch len(run) {
	case 0:
		return nil
	case 1:
		if l.runCtx == nil {
			// ctx is the run's, the same at every step.
			l.runCtx = &ctxHolder{ctx: ctx}
		}
		if err := run[0].execute(ctx, l.runCtx); err == nil || !errors.Is(err, errInterruptSignal) {
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
		// Exit durability saves the step's checkpoint when the run
		// stops, after this: it keeps the state as it was (failing to
		// encode it fails the run, as the save would).
		if err := l.holdExitFrame(tasks); err != nil {
			return err
		}
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
	// The last of a step's tasks to succeed leaves its writes to a
	// StepSaver, which saves them with the step's checkpoint, made as soon
	// as it returns: one transaction for the common one-task step. Any
	// other task's writes are saved as it finishes, as upstream does, so
	// that a crash while a sibling still works loses none of them.
	combine := l.stepSaver != nil && l.toFinish.Add(-1) == 0
	// A successful task's writes are saved even when a sibling's failure
	// has cancelled the step: they are what lets a resume skip this task.
	// (Left to the checkpoint, they need no context until it is saved.)
	if !combine || t.useCache {
		ctx = context.WithoutCancel(ctx)
	}
	// The Write slice goes back to the task once the saver is done with
	// it: in sync durability it is saved with the step's checkpoint,
	// before the task runs again, or by PutWrites, which keeps nothing;
	// in async durability the step's checkpoint copies it (asyncSave)
	// before the task runs again. Other saves in the background, and exit
	// durability's, keep theirs for later.
	reuse := l.opts.Durability != DurabilityExit && (l.persist == nil || combine)
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
	if combine {
		l.exitMu.Lock()
		l.stepWrites = append(l.stepWrites, checkpoints.TaskWrites{TaskID: t.ID(), Writes: encoded})
		l.exitMu.Unlock()
		return nil
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
