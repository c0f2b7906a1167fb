package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/internal/jsonfast"
	"github.com/superstep-dev/superstep/internal/slab"
)

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

// putWrites saves a task's writes on their own (see commitSuccess for
// the writes a step's checkpoint takes along).
func (l *loop) putWrites(ctx context.Context, taskID string, ws []checkpoints.Write) error {
	switch {
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

// seenFrame appends versions_seen in a frame's form to out. buf holds
// room for the versions it copies (seenRoom): every node's into a lent
// frame; into a given one, only those of the nodes that ran since the
// last given frame, the others sharing what that one was given.
func (l *loop) seenFrame(out []checkpoints.SeenVersions, buf []int64, lent bool) []checkpoints.SeenVersions {
	if !slices.ContainsFunc(l.extraSeen, isInputSeen) {
		out = append(out, checkpoints.SeenVersions{Node: inputTask})
	}
	out = append(out, l.extraSeen...)
	for i, s := range l.seen {
		if s == nil {
			continue
		}
		n := l.g.nodeList[i]
		versions := l.seenFrozen[i]
		if lent || versions == nil || l.seenDirty[i] {
			versions, buf = buf[:len(s):len(s)], buf[len(s):]
			copy(versions, s)
			if !lent {
				l.seenFrozen[i], l.seenDirty[i] = versions, false
			}
		}
		out = append(out, checkpoints.SeenVersions{Node: n.Name, Channels: n.Triggers, Versions: versions})
	}
	if l.seenInterrupt != nil {
		out = append(out, checkpoints.SeenVersions{Node: interruptKey, Channels: l.g.chanNames, Versions: l.seenInterrupt})
	}
	return out
}

func isInputSeen(s checkpoints.SeenVersions) bool { return s.Node == inputTask }

// seenRoom is how many entries seenFrame makes and how many versions it
// copies.
func (l *loop) seenRoom(lent bool) (entries, versions int) {
	entries = len(l.extraSeen)
	if !slices.ContainsFunc(l.extraSeen, isInputSeen) {
		entries++
	}
	for i, s := range l.seen {
		if s != nil {
			entries++
			if lent || l.seenFrozen[i] == nil || l.seenDirty[i] {
				versions += len(s)
			}
		}
	}
	if l.seenInterrupt != nil {
		entries++
	}
	return entries, versions
}

// frameSlabs are the slabs a run's given frames are carved from.
type frameSlabs struct {
	frames slab.Slab[checkpoints.Frame]
	ints   slab.Slab[int64]
	news   slab.Slab[checkpoints.FrameValue]
	seens  slab.Slab[checkpoints.SeenVersions]
}

// lentFrame is a frame a run lends to its saver, with its columns'
// memory, reused by the frames built in it later (see checkpoints.Frame).
type lentFrame struct {
	f    checkpoints.Frame
	ints []int64
	news []checkpoints.FrameValue
	seen []checkpoints.SeenVersions
}

// frame builds the checkpoint of the current state; only the channels
// whose versions changed since the last put are encoded. A frame to lend
// is built in into, whose buffers are reused once the saver has returned
// (a saver copies what it keeps): the loop's own for a save that returns
// before the loop goes on, an asyncSave's for one in the background. The
// frame exit durability holds (into nil) is given, carved from the run's
// slabs: nothing writes into it again.
func (l *loop) frame(into *lentFrame) (*checkpoints.Frame, error) {
	lent := into != nil
	entries, seen := l.seenRoom(lent)
	var f *checkpoints.Frame
	var buf []int64
	var news []checkpoints.FrameValue
	if lent {
		lf := into
		lf.ints = slices.Grow(lf.ints[:0], len(l.versions)+seen)[:len(l.versions)+seen]
		lf.seen = slices.Grow(lf.seen[:0], entries)
		lf.f = checkpoints.Frame{Seen: l.seenFrame(lf.seen, lf.ints[len(l.versions):], true)}
		f, buf, news = &lf.f, lf.ints, lf.news[:0]
	} else {
		if l.frameMem == nil {
			l.frameMem = new(frameSlabs)
		}
		mem := l.frameMem
		// One piece holds the versions and the versions seen of the
		// nodes that ran; each is sized exactly, so that a chunk holds
		// as many frames as it can.
		buf = mem.ints.Make(len(l.versions) + seen)
		f = mem.frames.New()
		*f = checkpoints.Frame{Seen: l.seenFrame(mem.seens.Make(entries)[:0], buf[len(l.versions):], false)}
		changed := 0
		for c, v := range l.versions {
			if l.isNew(c, v) {
				changed++
			}
		}
		news = mem.news.Make(changed)[:0]
	}
	n := copy(buf, l.versions)
	f.ID, f.TS, f.Channels, f.Versions = l.ckptID, time.Now().UTC(), l.g.chanNames, buf[:n:n]
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
	for c, v := range f.Versions {
		if !l.isNew(c, v) {
			continue
		}
		raw, ok, err := l.chans[c].Checkpoint()
		if err != nil {
			return nil, fmt.Errorf("encode channel %q: %w", l.g.chanNames[c], err)
		}
		if !ok {
			raw = nil
		}
		news = append(news, checkpoints.FrameValue{Index: c, Value: raw})
	}
	f.New = news
	if lent {
		into.news = news
	}
	// The loop's own copy: a lent frame's is reused and a given one's is
	// the saver's.
	l.saved, l.hasSaved = append(l.saved[:0], f.Versions...), true
	return f, nil
}

// isNew reports whether channel c's version v is one the last put did not
// save (a frame's New).
func (l *loop) isNew(c int, v int64) bool {
	return v != 0 && (!l.hasSaved || l.saved[c] != v)
}

// saveCheckpoint saves the current state as a checkpoint, with the tasks
// planned from it.
func (l *loop) saveCheckpoint(ctx context.Context, source checkpoints.Source) error {
	into := &l.lent
	var later *asyncSave
	if l.persist != nil {
		later = l.persist.take()
		into = &later.frame
	}
	f, err := l.frame(into)
	if err != nil {
		if later != nil {
			l.persist.give(later)
		}
		return err
	}
	f.Next = l.planNext()
	return l.saveFrame(ctx, f, l.metadata(source), later)
}

// saveFrame saves f, with md, as the loop's next checkpoint: in the
// background when the run has a persister, in later, which saveCheckpoint
// built f in. (later is nil only for the frame exit durability holds,
// and that run has no persister.)
func (l *loop) saveFrame(ctx context.Context, f *checkpoints.Frame, md checkpoints.Metadata, later *asyncSave) error {
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
	var writes []checkpoints.TaskWrites
	if l.stepSaver != nil {
		l.exitMu.Lock()
		writes = l.stepWrites
		l.stepWrites = nil
		l.exitMu.Unlock()
	}
	var err error
	if l.persist != nil {
		// In the background, in order: the step's writes and its
		// checkpoint still go in one call, one transaction. The writes'
		// slices are the tasks' and this loop's to reuse, so the save
		// lends the saver copies of its own.
		later.parent, later.f, later.md = parent, f, md
		later.keepWrites(writes)
		l.persist.submitSave(later)
	} else {
		err = l.put(ctx, parent, writes, f, md)
	}
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
	if err == nil {
		return nil
	}
	err = fmt.Errorf("save checkpoint %s: %w", f.ID, err)
	// The checkpoint was not saved (the run's context ended, say): the
	// writes of the step's last task still are, on the checkpoint they
	// follow, so that a resume skips the task as it skips its siblings.
	if werr := l.putTaskWrites(context.WithoutCancel(ctx), parent, writes); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// putTaskWrites saves tasks' writes against the checkpoint cfg, one
// PutWrites a task.
func (l *loop) putTaskWrites(ctx context.Context, cfg checkpoints.Config, writes []checkpoints.TaskWrites) error {
	for _, w := range writes {
		if err := l.saver.PutWrites(ctx, cfg, w.Writes, w.TaskID, w.TaskPath); err != nil {
			return fmt.Errorf("save writes of task %s: %w", w.TaskID, err)
		}
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
	if l.opts.Durability == DurabilityExit && l.ckptID != "" {
		pctx := context.WithoutCancel(ctx)
		if l.ckptCfg.CheckpointID != l.ckptID {
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
	cfg := l.ckptCfg
	if l.persist != nil && len(writes) > 0 {
		// After the saves before them (their checkpoint among them);
		// a failure is the run's, from the persister's wait. The writes'
		// slices may be the tasks' own (see commitSuccess), so the save
		// takes copies, as a checkpoint's does.
		kept := new(keptWrites)
		kept.keepWrites(writes)
		l.persist.submit(func(ctx context.Context) error { return l.putTaskWrites(ctx, cfg, kept.writes) })
		return nil
	}
	return l.putTaskWrites(context.WithoutCancel(ctx), cfg, writes)
}

// saveCheckpointAt saves the in-memory current checkpoint (exit
// durability) with the step it was created at: the one holdExitFrame
// held, if any.
func (l *loop) saveCheckpointAt(ctx context.Context) error {
	if f := l.exitFrame; f != nil {
		l.exitFrame = nil
		return l.saveFrame(ctx, f, l.exitMD, nil)
	}
	if !l.hasVersions() {
		return nil
	}
	l.step--
	defer func() { l.step++ }()
	return l.saveCheckpoint(ctx, l.exitSource())
}

// exitSource is the source of the checkpoint exit durability saves, l.step
// being its step.
func (l *loop) exitSource() checkpoints.Source {
	if l.step < 0 {
		return checkpoints.SourceInput
	}
	return checkpoints.SourceLoop
}

// holdExitFrame takes, under exit durability, the frame of the checkpoint
// the step of tasks ran from, before anything changes its state in memory
// (see loop.exitFrame). Its next tasks are the step's.
func (l *loop) holdExitFrame(tasks []*task) error {
	if l.opts.Durability != DurabilityExit || l.saver == nil || !l.hasVersions() {
		return nil
	}
	l.step--
	defer func() { l.step++ }()
	f, err := l.frame(nil)
	if err != nil {
		return err
	}
	f.Next = taskNames(tasks)
	l.exitFrame, l.exitMD = f, l.metadata(l.exitSource())
	return nil
}

// persister runs saves in the background, in submission order.
type persister struct {
	jobs chan persistJob
	// free holds checkpoint saves whose saver has returned, for the
	// loop's next ones (take): a run builds its frames in as many as it
	// has had saves in flight at once, however long it runs, and hands
	// them to the graph's next run (loopMem.saves). freeMu guards it.
	freeMu sync.Mutex
	free   []*asyncSave
	done   chan struct{}
	err    error
	// mu guards closed: WaitCheckpoint may flush from a goroutine a node
	// left behind after the run ended and wait closed jobs.
	mu     sync.Mutex
	closed bool
}

// persistJob is a save (a checkpoint's, or any other), or a barrier that
// receives the first error once every earlier job has run.
type persistJob struct {
	save    *asyncSave
	fn      func(context.Context) error
	barrier chan error
}

// persistQueue is how many jobs a persister queues before the loop waits
// for it.
const persistQueue = 64

// newPersister starts l's persister, with saves (an earlier run's) to
// build l's checkpoints in.
func newPersister(l *loop, saves []*asyncSave) *persister {
	p := &persister{jobs: make(chan persistJob, persistQueue), free: saves, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for job := range p.jobs {
			switch {
			case job.barrier != nil:
				job.barrier <- p.err
			case job.save != nil:
				if s := job.save; p.err == nil {
					p.err = l.put(context.Background(), s.parent, s.writes, s.f, s.md)
				}
				p.give(job.save)
			case p.err == nil:
				p.err = job.fn(context.Background())
			}
		}
	}()
	return p
}

func (p *persister) submit(job func(context.Context) error) { p.jobs <- persistJob{fn: job} }

// submitSave queues a checkpoint's save.
func (p *persister) submitSave(s *asyncSave) { p.jobs <- persistJob{save: s} }

// asyncSave is a checkpoint saved in the background, with what the saver
// is lent of it: the frame, built in the save's own buffers, and a copy
// of the step's writes. Once the saver has returned, the persister hands
// it back (give) and a later checkpoint is built in it. A free one
// points to nothing of a run (see loopMem).
type asyncSave struct {
	parent checkpoints.Config
	f      *checkpoints.Frame
	md     checkpoints.Metadata
	frame  lentFrame
	keptWrites
}

// keptWrites is a copy of a step's writes for a save in the background:
// their values are given, so only the slices are copied, into memory of
// the copy's own.
type keptWrites struct {
	writes []checkpoints.TaskWrites
	wbuf   []checkpoints.Write // the writes' Write slices
}

// take returns a finished save to build the loop's next checkpoint in,
// or a new one.
func (p *persister) take() *asyncSave {
	p.freeMu.Lock()
	defer p.freeMu.Unlock()
	n := len(p.free)
	if n == 0 {
		return new(asyncSave)
	}
	s := p.free[n-1]
	p.free[n-1] = nil
	p.free = p.free[:n-1]
	return s
}

// saves returns the persister's free saves, once it has stopped (wait).
func (p *persister) saves() []*asyncSave {
	p.freeMu.Lock()
	defer p.freeMu.Unlock()
	return p.free
}

// give keeps s for a later checkpoint, holding nothing of its own (a
// kept save must not keep values alive).
func (p *persister) give(s *asyncSave) {
	s.parent, s.f, s.md = checkpoints.Config{}, nil, checkpoints.Metadata{}
	s.frame.f = checkpoints.Frame{}
	clear(s.frame.news[:cap(s.frame.news)])
	clear(s.frame.seen[:cap(s.frame.seen)])
	clear(s.writes[:cap(s.writes)])
	clear(s.wbuf[:cap(s.wbuf)])
	p.freeMu.Lock()
	p.free = append(p.free, s)
	p.freeMu.Unlock()
}

// keepWrites copies writes into s.
func (s *keptWrites) keepWrites(writes []checkpoints.TaskWrites) {
	n := 0
	for _, tw := range writes {
		n += len(tw.Writes)
	}
	s.wbuf = slices.Grow(s.wbuf[:0], n)
	s.writes = s.writes[:0]
	for _, tw := range writes {
		at := len(s.wbuf)
		s.wbuf = append(s.wbuf, tw.Writes...)
		tw.Writes = s.wbuf[at:len(s.wbuf):len(s.wbuf)]
		s.writes = append(s.writes, tw)
	}
	if writes == nil {
		s.writes = nil // no StepSaver: the writes went on their own
	}
}

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
