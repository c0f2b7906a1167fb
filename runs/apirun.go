package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// StreamSpec asks a run to keep its stream parts (engine.Stream's
// projections of its events) for API clients: the modes, and whether a
// subgraph's parts are included (RunOptions.Subgraphs).
type StreamSpec struct {
	Modes     []engine.StreamMode
	Subgraphs bool
	// Keep keeps the parts after the run ends (a resumable stream's
	// reconnect, a late join replaying from the start), within
	// PartLogsKept and EndedPartsBytes; otherwise they go when it ends.
	Keep bool

	mu  sync.Mutex
	log *PartLog
}

// Log is the part log of the run the spec was given to, once it started
// (nil before): the caller keeps it however long the Manager keeps it.
func (s *StreamSpec) Log() *PartLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log
}

func (s *StreamSpec) setLog(l *PartLog) {
	s.mu.Lock()
	s.log = l
	s.mu.Unlock()
}

// RunRequest is a run as a program asks for one through the Agent Server
// API: new input, a Command (resume, update, goto), or neither (continue
// from the thread's head or from CheckpointID, a fork when it is not the
// head). It goes through the rules every run does: one active run per
// thread (ErrThreadBusy), the thread's graph for life, and the events
// every open Studio tab receives.
type RunRequest struct {
	Graph, Thread string
	// RunID is the run's id; "" makes a fresh one.
	RunID string
	// Input is a map (keys are the state's json names), an
	// engine.Command, or nil.
	Input        any
	CheckpointID string
	Options      StartOptions
	// Metadata is copied into every checkpoint the run writes.
	Metadata map[string]any
	// Stream, when set, keeps the run's parts (see Manager.Parts).
	Stream *StreamSpec
	// Origin says where the run came from (OriginAPI when empty).
	Origin string
	// Meta is kept with the run's record in the run log.
	Meta *RunMeta
	// MustExist refuses to start the run (ErrUnknownThread) when the
	// thread does not exist, rather than creating it.
	MustExist bool
}

// Run starts a run as RunRequest describes and returns once it has got
// going (as Start does): input the graph refuses comes back here as
// ErrInvalidInput, and nothing is left behind. The run's id is the
// returned Thread's RunID.
func (m *Manager) Run(ctx context.Context, req RunRequest) (Thread, error) {
	lr, err := m.prepareRun(ctx, req)
	if err != nil {
		return Thread{}, err
	}
	return m.launch(ctx, lr)
}

// CheckRun reports why Run would refuse req before starting it (an
// unknown graph, a bad id, option, input key or type), or nil; a caller
// that queues a run checks it at once rather than when it starts.
func (m *Manager) CheckRun(ctx context.Context, req RunRequest) error {
	_, err := m.prepareRun(ctx, req)
	return err
}

// prepareRun checks req and turns it into a launch.
func (m *Manager) prepareRun(ctx context.Context, req RunRequest) (launchRequest, error) {
	g, err := m.Graph(req.Graph)
	if err != nil {
		return launchRequest{}, err
	}
	if req.Thread == "" {
		req.Thread = uuid.NewString()
	}
	if err := CheckThreadID(req.Thread); err != nil {
		return launchRequest{}, err
	}
	if req.RunID == "" {
		req.RunID = uuid.NewString()
	} else if !validName.MatchString(req.RunID) {
		return launchRequest{}, fmt.Errorf("%w: run id %q: use letters, digits, '.', '_' and '-' (1-128 characters)", ErrInvalidInput, clip(req.RunID))
	}
	if err := checkOptions(g, req.Options); err != nil {
		return launchRequest{}, err
	}
	if err := storable("metadata", req.Metadata); err != nil {
		return launchRequest{}, err
	}
	origin := req.Origin
	if origin == "" {
		origin = OriginAPI
	}
	origin = cutText(origin, MaxOriginBytes)
	lr := launchRequest{g: g, graph: req.Graph, thread: req.Thread, opts: req.Options, checkpointID: req.CheckpointID,
		origin: origin, runID: req.RunID, metadata: req.Metadata, stream: req.Stream, meta: req.Meta, mustExist: req.MustExist}
	switch in := req.Input.(type) {
	case nil:
		lr.kind = RunFromCheckpoint
	case map[string]any:
		if fields := stateFields(g.ZeroState()); fields != nil {
			for k := range in {
				if _, ok := fields[k]; !ok {
					return launchRequest{}, fmt.Errorf("%w: input key %q is not a state key of graph %q", ErrInvalidInput, k, req.Graph)
				}
			}
		}
		coerced, err := coerceInput(g.ZeroState(), in)
		if err != nil {
			return launchRequest{}, err
		}
		if err := storable("input", coerced); err != nil {
			return launchRequest{}, err
		}
		lr.input, lr.kind = engine.Update(coerced), RunStart
	case engine.Command:
		if u, ok := in.Update.(engine.Update); ok {
			coerced, err := coerceInput(g.ZeroState(), u)
			if err != nil {
				return launchRequest{}, err
			}
			in.Update = engine.Update(coerced)
		}
		if err := storable("command", in); err != nil {
			return launchRequest{}, err
		}
		lr.input, lr.kind = in, RunStart
		if in.Resume != nil {
			lr.kind = RunResume
			if info, err := m.Thread(ctx, req.Thread); err == nil && info.Status == StatusInterrupted && req.CheckpointID == "" {
				// The answers shown on the thread page and in other tabs;
				// the thread must still wait on this run when it starts.
				lr.resumeOf = info.RunID
				lr.answers = answersOf(info.Pending, resumeAnswer(in.Resume), origin, Stamp(m.now()))
			}
		}
	default:
		return launchRequest{}, fmt.Errorf("%w: input must be an object, a command or null, not %T", ErrInvalidInput, req.Input)
	}
	return lr, nil
}

// resumeAnswer is a Command's resume as answersOf reads it: a map keyed
// by interrupt id answers several.
func resumeAnswer(v any) any {
	if m, ok := v.(map[string]any); ok {
		return ByID(m)
	}
	return v
}

// Part is one stream part of a run, as an API client receives it: its
// position in the run's stream (from 0), mode, namespace and JSON data.
type Part struct {
	ID        int
	Mode      engine.StreamMode
	Namespace []string
	Data      json.RawMessage
}

// Limits of a run's kept parts.
const (
	// PartLogBytes caps the JSON a run keeps of its parts: beyond it the
	// oldest are dropped (a client replaying from before them gets what
	// is left).
	PartLogBytes = 32 << 20
	// PartLogsKept is how many ended runs' parts are kept for a late
	// join or a reconnect.
	PartLogsKept = 256
	// EndedPartsBytes caps the JSON of all ended runs' kept parts: the
	// oldest go first.
	EndedPartsBytes = 256 << 20
)

// PartLog holds a run's stream parts for its API clients: the live
// stream, a join, and a reconnect that replays after the last id it saw.
type PartLog struct {
	mu    sync.Mutex
	parts []Part
	first int // id of parts[0]
	next  int
	bytes int
	done  bool
	wake  chan struct{}
	// w writes the parts for other processes (PartStore), nil without.
	w PartWriter
	// stop stops following a run another process executes (remote).
	stop func()
	// thread is the run's thread, for the store.
	thread string
}

func newPartLog() *PartLog { return &PartLog{wake: make(chan struct{})} }

func (l *PartLog) add(p engine.StreamPart) {
	data, err := json.Marshal(p.Data)
	if err != nil {
		data, _ = json.Marshal(map[string]string{"error": "unencodable part: " + err.Error()})
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	part := Part{ID: l.next, Mode: p.Mode, Namespace: p.Namespace, Data: data}
	if l.w != nil {
		// Under the lock: the writer gets the parts in id order.
		l.w.Add(part)
	}
	l.push(part)
}

// push appends part (numbered l.next) and wakes the readers; l.mu held.
func (l *PartLog) push(part Part) {
	l.parts = append(l.parts, part)
	l.next = part.ID + 1
	l.bytes += len(part.Data)
	for l.bytes > PartLogBytes && len(l.parts) > 1 {
		l.bytes -= len(l.parts[0].Data)
		l.parts = l.parts[1:]
		l.first++
	}
	close(l.wake)
	l.wake = make(chan struct{})
}

// received adds the parts another process wrote, read from a PartStore;
// ended closes the log after them.
func (l *PartLog) received(parts []Part, ended bool) {
	l.mu.Lock()
	for _, p := range parts {
		switch {
		case p.ID < l.next:
			continue // had already
		case p.ID > l.next:
			// Parts pruned from the store before they were read: the
			// log goes on from what is left, as one that dropped its
			// oldest parts does.
			l.parts, l.bytes, l.first = nil, 0, p.ID
		}
		l.push(p)
	}
	var stop func()
	if ended {
		// With the parts, under one lock: a reader sees them and the
		// end together.
		stop = l.endLocked()
	}
	l.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (l *PartLog) close() {
	l.mu.Lock()
	stop := l.endLocked()
	l.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// endLocked marks the log ended and returns what stops following its
// run, to be called without l.mu; l.mu held.
func (l *PartLog) endLocked() (stop func()) {
	stop, l.stop = l.stop, nil
	if !l.done {
		l.done = true
		close(l.wake)
	}
	return stop
}

// Read returns the parts after id after (-1: from the start), waiting
// until there is one or the run has ended; ended reports that no part
// will follow those returned. ctx ends the wait.
func (l *PartLog) Read(ctx context.Context, after int) (parts []Part, ended bool, err error) {
	for {
		l.mu.Lock()
		from := max(after+1, l.first)
		if from < l.next {
			parts = append([]Part(nil), l.parts[from-l.first:]...)
			ended = l.done
			l.mu.Unlock()
			return parts, ended, nil
		}
		if l.done {
			l.mu.Unlock()
			return nil, true, nil
		}
		wake := l.wake
		l.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// Wait blocks until the run has ended (or ctx is done).
func (l *PartLog) Wait(ctx context.Context) error {
	for {
		l.mu.Lock()
		done, wake := l.done, l.wake
		l.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Done reports whether the run has ended.
func (l *PartLog) Done() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done
}

// Parts returns the parts kept of run runID (a run started with a
// StreamSpec), while it runs and for the last PartLogsKept runs after.
func (m *Manager) Parts(runID string) (*PartLog, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.partLogs[runID]
	return l, ok
}

// keepParts registers a run's part log.
func (m *Manager) keepParts(runID string, l *PartLog) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.partLogs == nil {
		m.partLogs = map[string]*PartLog{}
	}
	m.partLogs[runID] = l
}

// partsEnded closes a run's part log (its readers see the end) and keeps
// it only when asked to, forgetting the oldest ended ones beyond
// PartLogsKept and EndedPartsBytes. ended says the run ended here (not
// lost to, or handed back for, another process): other processes' readers
// are told too (PartStore.EndParts).
func (m *Manager) partsEnded(runID string, l *PartLog, keep, ended bool) {
	l.close()
	if s := m.partStore(); s != nil && ended && l.w != nil {
		ctx, cancel := storeContext()
		if err := s.EndParts(ctx, l.thread, runID, keep); err != nil {
			m.report(fmt.Errorf("runs: end the stored parts of run %q: %w", runID, err))
		}
		cancel()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !keep {
		delete(m.partLogs, runID)
		return
	}
	m.endedParts = append(m.endedParts, runID)
	m.endedBytes += l.size()
	for len(m.endedParts) > PartLogsKept || m.endedBytes > EndedPartsBytes && len(m.endedParts) > 1 {
		if old, ok := m.partLogs[m.endedParts[0]]; ok {
			m.endedBytes -= old.size()
			delete(m.partLogs, m.endedParts[0])
		}
		m.endedParts = m.endedParts[1:]
	}
}

// firstKept is the id of the oldest part the log holds (the next one's
// when it holds none).
func (l *PartLog) firstKept() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first
}

// size is the JSON the log holds.
func (l *PartLog) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytes
}

// RunRecord returns run runID of a thread as the run log keeps it: its
// start record while it goes on, its end once it ended. ErrUnknownRun
// when the thread has no such run.
func (m *Manager) RunRecord(ctx context.Context, thread, runID string) (RunRecord, error) {
	recs, err := m.ThreadRuns(ctx, thread, 0)
	if err != nil {
		return RunRecord{}, err
	}
	for _, r := range recs {
		if r.RunID == runID {
			return r, nil
		}
	}
	return RunRecord{}, fmt.Errorf("%w %q of thread %q", ErrUnknownRun, runID, thread)
}

// ThreadRuns lists a thread's latest runs from the run log, at most limit
// (0: all), oldest first.
//
// With a queue, a run claimed but not yet in the run log (its process has
// not got it going, or died first and it waits for a takeover) is listed
// too, as running: a client whose request's answer was lost can find it.
func (m *Manager) ThreadRuns(ctx context.Context, thread string, limit int) ([]RunRecord, error) {
	recs, err := m.runLogOf(ctx, thread, limit)
	if err != nil || m.queue == nil {
		return recs, err
	}
	queued, err := m.queue.Queued(ctx, thread)
	if err != nil {
		return nil, fmt.Errorf("runs: list the queued runs of thread %q: %w", thread, err)
	}
	for _, q := range queued {
		if slices.ContainsFunc(recs, func(r RunRecord) bool { return r.RunID == q.RunID }) {
			continue
		}
		recs = append(recs, q.record())
	}
	if limit > 0 && len(recs) > limit {
		recs = recs[len(recs)-limit:]
	}
	return recs, nil
}

// DeleteRun removes an ended run's record from the run log and, with
// rollback, every checkpoint it wrote: the thread's head goes back to
// where the run started. The thread's active run cannot be deleted
// (ErrThreadBusy): cancel it and wait first.
func (m *Manager) DeleteRun(ctx context.Context, thread, runID string, rollback bool) error {
	info, err := m.Thread(ctx, thread)
	if err != nil {
		return err
	}
	if info.Status == StatusRunning && info.RunID == runID {
		return fmt.Errorf("%w: run %q of thread %q is still going on; cancel it first", ErrThreadBusy, runID, thread)
	}
	if _, err := m.RunRecord(ctx, thread, runID); err != nil {
		return err
	}
	if rollback && info.Graph != "" {
		g, err := m.Graph(info.Graph)
		if err != nil {
			return err
		}
		if err := g.Pregel().Checkpointer().DeleteForRuns(ctx, []string{runID}); err != nil {
			return fmt.Errorf("runs: roll back run %q of thread %q: %w", runID, thread, err)
		}
	}
	// A record of it waiting to be written again would bring it back, and
	// so would one being written: a client hears a run's end before its
	// record is written (a join answers at once).
	m.mu.Lock()
	delete(m.unsavedRuns, [2]string{thread, runID})
	m.mu.Unlock()
	if err := m.awaitEndWrites(ctx, thread, runID); err != nil {
		return err
	}
	return m.runLog.DeleteRun(ctx, thread, runID)
}

// Last is the id of the latest part (-1 before the first): a client
// joining now reads after it.
func (l *PartLog) Last() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next - 1
}

// PartStore shares API runs' stream parts between processes: the process
// executing a run writes them under its lease, and a client connected to
// another process follows, joins or resumes the run's stream from there
// (Manager.RunParts). An EventLog (WithEventLog) that also implements
// PartStore is used as the Manager's (runs/riverq.EventLog does).
type PartStore interface {
	// PartWriter writes the run's parts, in order, under its lease's
	// fence; Add never waits on the database. Close flushes what was
	// added and reports the first failure.
	PartWriter(thread, runID string, fence int64) PartWriter
	// EndParts records, after the run released its lease, that its
	// stream ended; keep says whether its parts are kept for late
	// joins and reconnects (StreamSpec.Keep).
	EndParts(ctx context.Context, thread, runID string, keep bool) error
	// PartsState reports the id of the run's last stored part (-1 for
	// none), whether anything of its stream is stored, and whether it
	// ended.
	PartsState(ctx context.Context, runID string) (last int, found, ended bool, err error)
	// ReadParts returns the run's stored parts after id after, and
	// whether its end follows them.
	ReadParts(ctx context.Context, runID string, after int) (parts []Part, ended bool, err error)
	// FollowParts calls fn with the run's parts after id after as they
	// are stored, in order, each once, and with ended once its end is
	// read, until stop is called (which fn may do).
	FollowParts(runID string, after int, fn func(parts []Part, ended bool)) (stop func())
}

// PartWriter is a run's writer to a PartStore.
type PartWriter interface {
	Add(Part)
	Close() error
}

// partStore is the Manager's PartStore, if its event log is one.
func (m *Manager) partStore() PartStore {
	if m.queue == nil {
		return nil
	}
	s, _ := m.events.(PartStore)
	return s
}

// newRunPartLog is the part log of a run this process executes: with a
// PartStore and a lease, its parts are stored too, and a takeover numbers
// on after the last part stored (its clients' Last-Event-IDs stay valid).
func (m *Manager) newRunPartLog(thread, runID string, lease *Lease, takeover bool) *PartLog {
	l := newPartLog()
	l.thread = thread
	s := m.partStore()
	if s == nil || lease == nil {
		return l
	}
	if takeover {
		ctx, cancel := storeContext()
		last, _, _, err := s.PartsState(ctx, runID)
		cancel()
		if err != nil {
			// Without the last id, parts would be numbered again from 0
			// and clash with those stored: this process keeps its own.
			m.report(fmt.Errorf("runs: read the stored parts of run %q taken over: %w", runID, err))
			return l
		}
		l.first, l.next = last+1, last+1
	}
	l.w = s.PartWriter(thread, runID, lease.Fence)
	return l
}

// flush writes the parts added so far to the store, and stops writing:
// called when the run's last part has been added, before its lease goes.
func (l *PartLog) flush(m *Manager) {
	if l == nil {
		return
	}
	l.mu.Lock()
	w := l.w
	l.mu.Unlock()
	if w == nil {
		return
	}
	if err := w.Close(); err != nil && !errors.Is(err, checkpoints.ErrFenced) {
		m.report(fmt.Errorf("runs: store the parts of a run of thread %q: %w", l.thread, err))
	}
}

// PartsFromNow, as RunParts' from, asks for the parts stored from now on.
const PartsFromNow = -1

// RunParts returns the part log of run runID of thread, wherever it runs:
// this process's (Parts), or, when another process executes it (or did,
// and its parts are kept), one that reads the parts it stores from id
// from on (PartsFromNow: those after its last stored now) and then
// follows them live until the run ends or ctx does. ok is false when no
// parts are kept of the run anywhere.
func (m *Manager) RunParts(ctx context.Context, thread, runID string, from int) (*PartLog, bool) {
	s := m.partStore()
	if l, ok := m.Parts(runID); ok && (s == nil || from == PartsFromNow || from >= l.firstKept()) {
		return l, true
	}
	// Parts this process never had (it took the run over after them)
	// are read from the store, which has every part of the run.
	if s == nil {
		return nil, false
	}
	last, found, ended, err := s.PartsState(ctx, runID)
	if err != nil {
		m.report(fmt.Errorf("runs: read the stored parts of run %q: %w", runID, err))
		return nil, false
	}
	// Whether the run goes on: queued (claimed, not yet ended) with a
	// stream, it will store parts even if it has none yet.
	going := false
	if !ended {
		queued, err := m.queue.Queued(ctx, thread)
		if err != nil {
			m.report(fmt.Errorf("runs: read the queued runs of thread %q: %w", thread, err))
			return nil, false
		}
		i := slices.IndexFunc(queued, func(q QueuedRun) bool { return q.RunID == runID })
		going = i >= 0 && queued[i].Stream != nil
	}
	if !found && !going {
		return nil, false
	}
	if from == PartsFromNow {
		from = last + 1
	}
	l := newPartLog()
	l.thread, l.first, l.next = thread, from, from
	if !going && !ended {
		// It ended (its end is being written, or never will be: its
		// process died before): what is stored is all there will be.
		parts, _, err := s.ReadParts(ctx, runID, from-1)
		if err != nil {
			m.report(fmt.Errorf("runs: read the stored parts of run %q: %w", runID, err))
			return nil, false
		}
		l.received(parts, true)
		return l, true
	}
	stop := s.FollowParts(runID, from-1, l.received)
	l.mu.Lock()
	if l.done {
		l.mu.Unlock()
		stop()
	} else {
		l.stop = stop
		l.mu.Unlock()
	}
	context.AfterFunc(ctx, l.close)
	return l, true
}

// queuedStream is a run's StreamSpec as the queue keeps it, so that a
// takeover stores its parts on, and other processes know to wait for
// them.
type queuedStream struct {
	Modes     []engine.StreamMode `json:"modes"`
	Subgraphs bool                `json:"subgraphs,omitempty"`
	Keep      bool                `json:"keep,omitempty"`
}

func queuedStreamOf(s *StreamSpec) *queuedStream {
	if s == nil {
		return nil
	}
	return &queuedStream{Modes: s.Modes, Subgraphs: s.Subgraphs, Keep: s.Keep}
}

func (q *queuedStream) spec() *StreamSpec {
	if q == nil {
		return nil
	}
	return &StreamSpec{Modes: q.Modes, Subgraphs: q.Subgraphs, Keep: q.Keep}
}

// awaitEndWrites waits until the records of the thread's ended runs
// (runID's alone, unless it is "") are written (Manager.endWrites). A
// caller drops the records waiting to be written again first
// (unsavedRuns): one the writer took is among those awaited.
func (m *Manager) awaitEndWrites(ctx context.Context, thread, runID string) error {
	for {
		var wait chan struct{}
		m.mu.Lock()
		for key, done := range m.endWrites {
			if key[0] == thread && (runID == "" || key[1] == runID) {
				wait = done
				break
			}
		}
		m.mu.Unlock()
		if wait == nil {
			return nil
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return fmt.Errorf("runs: wait for the record of a run of thread %q to be written: %w", thread, ctx.Err())
		}
	}
}
