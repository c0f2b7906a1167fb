package runs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// Errors returned by the Manager; test with errors.Is. Handlers map them
// to status codes: unknown graph or thread → 404, busy or wrong status →
// 409, invalid input → 400.
var (
	ErrUnknownGraph  = errors.New("unknown graph")
	ErrUnknownThread = errors.New("unknown thread")
	// ErrThreadBusy: the thread already has an active run. The Studio
	// rejects a second run instead of queueing it (upstream's "reject"
	// multitask strategy): a person clicking Start twice, or resuming
	// while a run is live, should see that at once rather than have a
	// hidden run start later from a state they did not look at.
	ErrThreadBusy = errors.New("thread is busy")
	// ErrNotInterrupted: Resume on a thread that is not waiting at an
	// interrupt or breakpoint.
	ErrNotInterrupted = errors.New("thread is not interrupted")
	// ErrNotRunning: Cancel on a thread with no active run.
	ErrNotRunning = errors.New("thread has no active run")
	// ErrGraphMismatch: a thread belongs to one graph for its whole life.
	ErrGraphMismatch = errors.New("thread belongs to another graph")
	// ErrInvalidInput: the input, an answer, a thread id, a breakpoint or
	// a recursion limit is not acceptable; the message says which.
	ErrInvalidInput = errors.New("invalid input")
)

// Status is where a thread stands.
type Status string

// The thread statuses.
const (
	// StatusIdle: no active run; the last run finished or was cancelled.
	StatusIdle Status = "idle"
	// StatusRunning: a run is active.
	StatusRunning Status = "running"
	// StatusInterrupted: the last run stopped at an interrupt or a
	// breakpoint and waits for Resume.
	StatusInterrupted Status = "interrupted"
	// StatusError: the last run failed.
	StatusError Status = "error"
)

// Statuses lists every status, in the order pages show them.
var Statuses = []Status{StatusIdle, StatusRunning, StatusInterrupted, StatusError}

// MaxRecursionLimit caps StartOptions.RecursionLimit.
const MaxRecursionLimit = 1_000_000

// Thread is a thread known to the Manager.
type Thread struct {
	ID      string
	Graph   string
	Status  Status
	Updated time.Time
	// RunID is the active or last run.
	RunID string
	// Error is why the last run failed (or "cancelled").
	Error string
	// Pending are the interrupts waiting for an answer when Status is
	// interrupted; empty when the run stopped at a static breakpoint.
	Pending []engine.Interruption
	// Before and After name the breakpoint nodes the run stopped at.
	Before, After []string
	// Options are the last run's options; Resume reuses them.
	Options StartOptions
	// Metadata, Created and StateUpdated are as in ThreadRecord; the
	// Manager carries them so that its writes never wipe them.
	Metadata     map[string]any
	Created      time.Time
	StateUpdated time.Time
}

// StartOptions are a run's per-run settings.
type StartOptions struct {
	// InterruptBefore and InterruptAfter are breakpoints: node names, or
	// "*" for every node.
	InterruptBefore []string
	InterruptAfter  []string
	// RecursionLimit caps supersteps; 0 means the engine's default.
	RecursionLimit int
}

// ThreadFilter narrows ListThreads; empty fields match everything.
type ThreadFilter struct {
	Status Status
	Graph  string
	// Limit caps how many threads come back, the most recently updated;
	// 0 means no cap.
	Limit int
	// Metadata selects the threads whose metadata contains it (as
	// Postgres' jsonb @>: nested objects contained too).
	Metadata map[string]any
	// IDs, when not empty, selects only these threads.
	IDs []string
	// Offset skips that many threads of the ordered list.
	Offset int
	// SortBy is one of ThreadSorts ("" is updated_at); SortOrder is
	// "asc" or "desc" ("" is desc). Ties are by id, ascending.
	SortBy, SortOrder string
}

// Manager runs registered graphs on threads: at most one active run per
// thread, each run's events fanned out to every subscriber of the thread.
// It is safe for concurrent use.
type Manager struct {
	graphs map[string]engine.Compiled
	base   context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup
	now    func() time.Time
	// store is the thread registry every status change is written to,
	// and the truth for every thread this process does not hold.
	store ThreadStore
	// runLog keeps each run's details checkpoints do not (RunLog).
	runLog  RunLog
	onError func(error)
	// idleThreads and idleBytes bound the threads held while nobody uses
	// them (WithIdleLimits).
	idleThreads, idleBytes int

	mu sync.Mutex
	// threads holds the threads in use (active runs, subscribers, a
	// status not yet written to the registry) and the most recently used
	// idle ones, with their hubs; it is the truth for them.
	threads map[string]*thread
	// clock counts lookups; a thread's used is the count at its last one.
	clock uint64
	// evictions counts the threads evicted, and evicted holds the last
	// ones (by count, modulo its size), so that a registry read that raced
	// the eviction of its thread is not taken for the latest record
	// (lockThread).
	evictions uint64
	evicted   [64]string
	// unsaved holds the threads whose latest record a registry write
	// failed to store; the writer goroutine (rewrite) writes them again
	// until they land. Such threads are never evicted (see changes).
	// The value is the fence of the write that failed (0 for none): a
	// retry carries it, so a process that lost the thread's lease
	// meanwhile never writes over its new holder's record.
	unsaved map[*thread]int64
	// unsavedRuns are run-log records a write failed to store, by thread
	// and run; the writer stores the latest of each until it lands.
	unsavedRuns map[[2]string]unsavedRun
	// endWrites are the runs whose end is published and whose record
	// is being written (or written again, see rewriteRun), by thread and
	// run: each channel closes once the run is read from the run log
	// alone. Deleting a run (or its thread) waits for them, or the write
	// would bring the deleted run back.
	endWrites map[[2]string]chan struct{}
	closeOnce sync.Once
	// owner is this Manager's id in the registry: it marks the threads
	// it runs, and its heartbeat says it is alive.
	owner string
	// rewake wakes the writer; closing ends it once it has tried one
	// last time (Close).
	rewake  chan struct{}
	closing chan struct{}
	writer  sync.WaitGroup
	// partLogs are the stream parts of API runs by run id (RunRequest
	// Stream); endedParts the ended ones, oldest first, to bound them.
	partLogs   map[string]*PartLog
	endedParts []string
	endedBytes int
	// queue, when set, makes runs durable and shared with other
	// processes (WithQueue); renewEvery is how often a running run's
	// lease is renewed (and a cancel from another process is noticed).
	queue      Queue
	renewEvery time.Duration
	// events shares events with other processes (WithEventLog).
	events EventLog
	// draining refuses new runs while the runs going on finish (Drain).
	draining bool
}

type thread struct {
	info Thread
	// updating is set while UpdateState writes a checkpoint: runs are
	// refused meanwhile, as they are while a run is active.
	updating bool
	hub      *hub
	// run records the active run (or the last, until its record is
	// written to the run log); ending holds the runs before it whose end
	// is still being written (a next run started meanwhile).
	run    *recorder
	ending []*recorder
	cancel context.CancelFunc
	done   chan struct{} // closed when the active run ends
	// starting is set while the active run has not yet saved a
	// checkpoint or planned a step; cancelAsked is a Cancel that came
	// then, carried out once the run has started (see Cancel).
	starting, cancelAsked bool
	// unfollow stops following the thread's events written by other
	// processes (WithEventLog); localRun is the run this process last
	// executed, whose events it has already (it wrote them).
	unfollow func()
	localRun string
	// writer writes the active run's events to the event log.
	writer EventWriter
	// stop ends the active run with a cause (Takeover: ErrLeaseLost).
	stop context.CancelCauseFunc
	// fromQueue: the thread was read from the queue, the registry not
	// knowing it yet (queuedThread).
	fromQueue bool
	// fence is the fencing token of the active run's lease (WithQueue),
	// 0 without one: the registry and run-log writes of the run carry it.
	fence int64
	// saveMu orders writes of this thread's record to the store: each
	// write takes the record as it is once it holds the lock, so the last
	// write is never an older record than an earlier one.
	saveMu sync.Mutex
	// used orders the threads by their last use: the least recently used
	// idle thread is evicted first.
	used uint64
	// changes counts the changes of info; saved is the count the
	// registry last took. A thread with a change the registry lacks is
	// never evicted: reading it back would turn its status back.
	changes, saved uint64
}

// NewManager registers graphs by name. Every graph needs a checkpointer:
// threads, resume and catch-up all read checkpoints. Without
// WithThreadStore the thread registry is in memory.
//
// With a registry that outlives processes, NewManager first settles the
// threads the registry calls running whose owner is no longer alive (see
// ThreadStore.Orphans): their runs died with the process that ran them.
// Each is settled from its checkpoints, so a run whose end the registry
// never got is recorded as it ended (see settleOrphans). The running
// threads of another live Manager on the same registry are left alone.
func NewManager(graphs map[string]engine.Compiled, opts ...ManagerOption) (*Manager, error) {
	m := &Manager{graphs: map[string]engine.Compiled{}, threads: map[string]*thread{}, now: time.Now,
		idleThreads: DefaultIdleThreads, idleBytes: DefaultIdleEventBytes}
	for _, o := range opts {
		o(m)
	}
	if m.store == nil {
		m.store = NewMemoryThreads()
	}
	if m.runLog == nil {
		m.runLog = NewMemoryRunLog()
	}
	if m.idleThreads < 1 || m.idleBytes < 0 {
		return nil, fmt.Errorf("runs: idle limits of %d threads and %d event bytes: keep at least 1 thread and 0 bytes", m.idleThreads, m.idleBytes)
	}
	for name, g := range graphs {
		if name == "" || !validName.MatchString(name) {
			return nil, fmt.Errorf("runs: graph name %q: use letters, digits, '.', '_' and '-' (1-128 characters)", name)
		}
		if g == nil || g.Pregel() == nil {
			return nil, fmt.Errorf("runs: graph %q is nil", name)
		}
		if g.Pregel().Checkpointer() == nil {
			return nil, fmt.Errorf("runs: graph %q has no checkpointer; compile it with CompileOptions{Checkpointer: checkpoints.NewMemory()} or a Postgres saver", name)
		}
		m.graphs[name] = g
	}
	m.owner = uuid.NewString()
	ctx, cancel := storeContext()
	defer cancel()
	if err := m.store.Heartbeat(ctx, m.owner, m.now()); err != nil {
		return nil, fmt.Errorf("runs: register this process with the thread registry: %w", err)
	}
	// Orphans a slow or failing settle leaves are settled on a later beat:
	// a Studio starts whatever its predecessor left.
	if err := m.settleOrphans(ctx); err != nil {
		m.report(err)
	}
	m.base, m.stop = context.WithCancel(context.Background())
	m.unsaved, m.rewake, m.closing = map[*thread]int64{}, make(chan struct{}, 1), make(chan struct{})
	m.unsavedRuns = map[[2]string]unsavedRun{}
	m.endWrites = map[[2]string]chan struct{}{}
	m.writer.Add(2)
	go m.rewrite()
	go m.beat()
	return m, nil
}

// validName is what graph names and thread ids may look like: safe in a
// URL path segment and in an element id.
var validName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// GraphNames lists the registered graphs, sorted.
func (m *Manager) GraphNames() []string {
	names := make([]string, 0, len(m.graphs))
	for n := range m.graphs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Graph returns a registered graph.
func (m *Manager) Graph(name string) (engine.Compiled, error) {
	g, ok := m.graphs[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownGraph, name)
	}
	return g, nil
}

// Thread returns a thread's current record, read from the registry when
// this process does not hold the thread (a thread of an earlier run of
// the Studio, or one evicted while idle); an interrupted thread's pending
// interrupts are then read from its checkpoints.
func (m *Manager) Thread(ctx context.Context, id string) (Thread, error) {
	t, err := m.lockThread(ctx, id)
	if err != nil {
		return Thread{}, err
	}
	defer m.mu.Unlock()
	return t.snapshot(), nil
}

// ListThreads lists the threads f selects in f's order (most recently
// updated first by default; ties by id), skipping f.Offset, at most
// f.Limit of them. The registry lists them; a
// thread this process holds is shown as it holds it (its record may lag,
// when a write failed or is under way), and so may move in the order, or
// join the list. A list leaves Pending empty (Thread fills it): reading
// every interrupted thread's checkpoints would make a list page cost a
// checkpoint read per row.
func (m *Manager) ListThreads(ctx context.Context, f ThreadFilter) ([]Thread, error) {
	// The page is cut after the held threads join: the registry is asked
	// for everything up to the page's end.
	sf := f
	if f.Limit > 0 {
		sf.Limit = f.Offset + f.Limit
	}
	sf.Offset = 0
	recs, err := m.store.ListThreads(ctx, sf)
	if err != nil {
		return nil, fmt.Errorf("runs: list threads: %w", err)
	}
	// key is what the filter reads of a thread, without record's copies.
	key := func(th Thread) ThreadRecord {
		return ThreadRecord{ID: th.ID, Graph: th.Graph, Status: th.Status, Updated: th.Updated,
			Metadata: th.Metadata, Created: th.Created, StateUpdated: th.StateUpdated}
	}
	match := f.matcher()
	matches := func(th Thread) bool { return match(key(th)) }
	out := make([]Thread, 0, len(recs))
	m.mu.Lock()
	for _, rec := range recs {
		if t, held := m.threads[rec.ID]; !held || (m.queue != nil && !t.holdsTruth()) {
			out = append(out, fromRecord(rec))
		}
	}
	// The held threads are few (see WithIdleLimits): each is shown as
	// held, whether or not the registry listed it, so a thread whose
	// live update is newer than its record is not cut by the limit.
	for _, t := range m.threads {
		if m.queue != nil && !t.holdsTruth() {
			continue // the registry's record is the truth
		}
		th := t.snapshot()
		th.Pending = nil
		if matches(th) {
			out = append(out, th)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Thread) int { return f.Compare(key(a), key(b)) })
	out = out[min(f.Offset, len(out)):]
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

func (t *thread) snapshot() Thread {
	s := t.info
	s.Pending = slices.Clone(s.Pending)
	s.Before, s.After = slices.Clone(s.Before), slices.Clone(s.After)
	if s.Metadata != nil {
		s.Metadata = deepCopy(s.Metadata).(map[string]any)
	}
	return s
}

// Start runs graph on thread with input (keys are the state's json names).
// An empty thread id starts a new thread with a fresh id. Start returns
// once the run has saved its first checkpoint (or ended), so an input the
// graph rejects comes back here as ErrInvalidInput and leaves no thread
// behind; the run itself goes on in the background.
func (m *Manager) Start(ctx context.Context, graph, threadID string, input map[string]any, opts StartOptions) (Thread, error) {
	g, err := m.Graph(graph)
	if err != nil {
		return Thread{}, err
	}
	if threadID == "" {
		threadID = uuid.NewString()
	}
	if err := CheckThreadID(threadID); err != nil {
		return Thread{}, err
	}
	if err := checkOptions(g, opts); err != nil {
		return Thread{}, err
	}
	if input == nil {
		input = map[string]any{}
	}
	input, err = coerceInput(g.ZeroState(), input)
	if err != nil {
		return Thread{}, err
	}
	if err := storable("input", input); err != nil {
		return Thread{}, err
	}
	return m.launch(ctx, launchRequest{g: g, graph: graph, thread: threadID, input: engine.Update(input), opts: opts, kind: RunStart})
}

// ByID answers several interrupts at once, keyed by interrupt id.
type ByID map[string]any

// Resume continues an interrupted thread. answer is the value the single
// pending interrupt's Interrupt call returns, or a ByID map answering
// interrupts by id (needed when several are pending). A run stopped at a
// static breakpoint continues with a nil answer. Resume reuses the last
// run's options (breakpoints and recursion limit). It is ResumeWith
// without options: the answer's origin shows as OriginAPI.
func (m *Manager) Resume(ctx context.Context, threadID string, answer any) (Thread, error) {
	return m.ResumeWith(ctx, threadID, answer, nil)
}

// ResumeWith is Resume with options (nil for none): opts.Origin is
// recorded with the answers, in the thread's run log and in the
// interrupt_answered events every open tab receives.
func (m *Manager) ResumeWith(ctx context.Context, threadID string, answer any, opts *ResumeOptions) (Thread, error) {
	info, err := m.Thread(ctx, threadID)
	if err != nil {
		return Thread{}, err
	}
	switch info.Status {
	case StatusRunning:
		return Thread{}, fmt.Errorf("%w: thread %q has an active run", ErrThreadBusy, threadID)
	case StatusInterrupted:
	default:
		return Thread{}, fmt.Errorf("%w: thread %q is %s", ErrNotInterrupted, threadID, info.Status)
	}
	var input any
	switch a := answer.(type) {
	case ByID:
		if len(a) == 0 {
			return Thread{}, fmt.Errorf("%w: no answers given", ErrInvalidInput)
		}
		for id := range a {
			if !slices.ContainsFunc(info.Pending, func(i engine.Interruption) bool { return i.ID == id }) {
				return Thread{}, fmt.Errorf("%w: thread %q has no pending interrupt %q", ErrInvalidInput, threadID, id)
			}
		}
		input = engine.Command{Resume: map[string]any(a)}
	default:
		switch len(info.Pending) {
		case 0:
			input = nil // a static breakpoint: continue
		case 1:
			input = engine.Command{Resume: answer}
		default:
			return Thread{}, fmt.Errorf("%w: thread %q has %d pending interrupts; answer them by id", ErrInvalidInput, threadID, len(info.Pending))
		}
	}
	if err := storable("answer", answer); err != nil {
		return Thread{}, err
	}
	g, err := m.Graph(info.Graph)
	if err != nil {
		return Thread{}, err
	}
	origin := ""
	if opts != nil {
		origin = cutText(opts.Origin, MaxOriginBytes)
	}
	return m.launch(ctx, launchRequest{g: g, graph: info.Graph, thread: threadID, input: input, opts: info.Options, resumeOf: info.RunID,
		kind: RunResume, origin: origin, answers: answersOf(info.Pending, answer, origin, Stamp(m.now()))})
}

// storable refuses a value no checkpointer can store (a NUL in a string,
// a lone surrogate) before a run starts, instead of letting the run fail on
// its first save.
func storable(what string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalidInput, what, err)
	}
	if err := checkpoints.CheckValue(raw); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidInput, what, err)
	}
	return nil
}

// Cancel stops the thread's active run. The thread becomes idle with
// Error "cancelled"; what the run saved so far stays.
func (m *Manager) Cancel(ctx context.Context, threadID string) error {
	return m.cancelRun(ctx, threadID, "")
}

// CancelRun is Cancel of run runID only: ErrNotRunning when the thread's
// active run is another (runID ended, and a later run started since).
func (m *Manager) CancelRun(ctx context.Context, threadID, runID string) error {
	return m.cancelRun(ctx, threadID, runID)
}

// cancelRun cancels the thread's active run, if it is runID ("": any).
func (m *Manager) cancelRun(ctx context.Context, threadID, runID string) error {
	t, err := m.holdThread(ctx, threadID)
	if err != nil {
		return err
	}
	defer m.mu.Unlock()
	if t.cancel == nil && m.queue != nil {
		// The run, if any, is in another process: it learns of the
		// cancel when it next renews its lease.
		m.mu.Unlock()
		err := m.queue.Cancel(ctx, threadID, runID)
		m.mu.Lock()
		if errors.Is(err, ErrNotRunning) {
			if runID != "" {
				return fmt.Errorf("%w: thread %q has no active run %s", ErrNotRunning, threadID, runID)
			}
			return fmt.Errorf("%w: thread %q has no active run", ErrNotRunning, threadID)
		}
		return err
	}
	if t.info.Status != StatusRunning || t.cancel == nil {
		return fmt.Errorf("%w: thread %q is %s", ErrNotRunning, threadID, t.info.Status)
	}
	if runID != "" && t.info.RunID != runID {
		return fmt.Errorf("%w: run %s of thread %q has ended; run %s is active", ErrNotRunning, runID, threadID, t.info.RunID)
	}
	if t.starting {
		// Cancelled now, a run that has not saved its input yet would
		// look rejected: its start would fail and nothing would say the
		// thread was cancelled. The cancel waits for the run to start
		// (its input saved, the registry told), then ends it as
		// cancelled; a run whose input is refused ends without it.
		t.cancelAsked = true
		return nil
	}
	t.cancel()
	return nil
}

// Wait blocks until the thread has no active run (or ctx is done) and
// returns its record.
func (m *Manager) Wait(ctx context.Context, threadID string) (Thread, error) {
	t, err := m.holdThread(ctx, threadID)
	if err != nil {
		return Thread{}, err
	}
	done := t.done
	remote := m.queue != nil && t.cancel == nil
	m.mu.Unlock()
	if remote {
		// Not running here: another process may be running it.
		if err := m.waitElsewhere(ctx, threadID); err != nil {
			return Thread{}, err
		}
	} else if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return Thread{}, ctx.Err()
		}
	}
	return m.Thread(ctx, threadID)
}

// waitElsewhere waits until the thread has no active run in any process
// (Queue.Active), polling with a growing pause.
func (m *Manager) waitElsewhere(ctx context.Context, threadID string) error {
	pause := 10 * time.Millisecond
	for {
		_, active, err := m.queue.Active(ctx, threadID)
		if err != nil {
			return fmt.Errorf("runs: wait for the run of thread %q: %w", threadID, err)
		}
		if !active {
			return nil
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return ctx.Err()
		}
		pause = min(pause*2, 200*time.Millisecond)
	}
}

// Close cancels every active run and waits for them to end, then makes a
// last attempt (bounded by closeRoundTimeout) at the registry and run-log
// writes that failed. It is safe to call more than once.
func (m *Manager) Close() {
	m.closeOnce.Do(func() {
		m.stop()
		m.mu.Lock()
		for _, t := range m.threads {
			if t.unfollow != nil {
				t.unfollow()
				t.unfollow = nil
			}
		}
		m.mu.Unlock()
		m.wg.Wait()
		close(m.closing)
		m.writer.Wait()
	})
}

func checkOptions(g engine.Compiled, opts StartOptions) error {
	if opts.RecursionLimit < 0 || opts.RecursionLimit > MaxRecursionLimit {
		return fmt.Errorf("%w: recursion limit %d: use 1 to %d (0 for the default)", ErrInvalidInput, opts.RecursionLimit, MaxRecursionLimit)
	}
	nodes := g.Pregel().NodeNames()
	for _, list := range [][]string{opts.InterruptBefore, opts.InterruptAfter} {
		for _, n := range list {
			if strings.Contains(n, ":") {
				if !innerNode(g.Topology(), n) {
					return fmt.Errorf("%w: breakpoint on unknown node %q: a name with \":\" is a node inside a subgraph, as <subgraph node>:<node>", ErrInvalidInput, n)
				}
				continue
			}
			if n != "*" && (!slices.Contains(nodes, n) || n == engine.Start) {
				return fmt.Errorf("%w: breakpoint on unknown node %q", ErrInvalidInput, n)
			}
		}
	}
	return nil
}

// innerNode reports whether the qualified name q ("research:plan") names a
// node inside a subgraph of topo: the engine passes such breakpoints down
// to the subgraph's run (engine/doc.go).
func innerNode(topo engine.Topology, q string) bool {
	segs := strings.Split(q, ":")
	for i, seg := range segs {
		j := slices.IndexFunc(topo.Nodes, func(n engine.TopoNode) bool { return n.Name == seg })
		if j < 0 || seg == engine.Start || seg == engine.End {
			return false
		}
		if i == len(segs)-1 {
			return true
		}
		if topo.Nodes[j].Subgraph == nil {
			return false
		}
		topo = *topo.Nodes[j].Subgraph
	}
	return false
}

// launchRequest is a run to launch. resumeOf, when set, is the
// interrupted run a resume continues; the thread must still be waiting on
// it. checkpointID, when set, runs from that checkpoint instead of the
// thread's latest. kind, origin and answers go to the run log.
type launchRequest struct {
	g                              engine.Compiled
	graph, thread                  string
	input                          any
	opts                           StartOptions
	resumeOf, checkpointID, origin string
	kind                           RunKind
	answers                        []Answer
	// runID, metadata, stream, meta and mustExist come from a
	// RunRequest.
	mustExist bool
	runID     string
	metadata  map[string]any
	stream    *StreamSpec
	meta      *RunMeta
	// lease is the thread's lease a takeover holds (nil: claimed by
	// launch when the Manager has a queue). takeover marks a run taken
	// over from another process, continuing one that had saved a
	// checkpoint; started is the run's original start and prior its
	// record so far.
	lease                *Lease
	takeover, continuing bool
	started              *time.Time
	prior                *RunRecord
	// ended, on a takeover, is how the run had already ended (see
	// endOf): it is recorded as its end without running anything.
	ended *error
}

// launch claims the thread, starts the run in the background and waits
// until it has got going (saved a checkpoint or planned a step: its input
// was accepted) or ended.
func (m *Manager) launch(ctx context.Context, req launchRequest) (Thread, error) {
	g, graph, threadID, input, opts, resumeOf, checkpointID := req.g, req.graph, req.thread, req.input, req.opts, req.resumeOf, req.checkpointID
	runID := req.runID
	if runID == "" {
		runID = uuid.NewString()
	}
	from := checkpointID
	if from == "" {
		head, err := headCheckpoint(ctx, g, threadID)
		if err != nil {
			return Thread{}, err
		}
		from = head
	}
	startedAt := Stamp(m.now())
	if req.started != nil {
		startedAt = *req.started
	}
	runRec := RunRecord{Thread: threadID, RunID: runID, Kind: req.kind, From: from, Origin: req.origin, Started: startedAt, Status: StatusRunning, Answers: req.answers, Meta: req.meta}
	if req.prior != nil {
		runRec = *req.prior
	}
	rec := newRecorder(runRec)
	lease := req.lease
	m.mu.Lock()
	draining := m.draining
	m.mu.Unlock()
	if draining {
		return Thread{}, fmt.Errorf("%w: this Studio is stopping; start the run again (another Studio takes it)", ErrThreadBusy)
	}
	if m.queue != nil && lease == nil {
		// The claim in the database is the truth for "one active run
		// per thread" across processes; the checks below still refuse
		// what this process knows to be wrong, and give the claim back.
		l, err := m.claim(ctx, req, runID, from, startedAt)
		if err != nil {
			return Thread{}, err
		}
		lease = &l
	}
	release := func() {
		if lease != nil && req.lease == nil {
			m.release(*lease)
		}
	}
	// A thread of an earlier process (or an evicted one) is loaded
	// first, so the checks below (its graph, whether it waits on
	// resumeOf) see its record.
	t, err := m.lockThread(ctx, threadID)
	existed := err == nil
	switch {
	case errors.Is(err, ErrUnknownThread) && req.mustExist:
		// Deleted since the caller looked (a queued API run whose thread
		// went): not brought back.
		release()
		return Thread{}, err
	case errors.Is(err, ErrUnknownThread):
		m.mu.Lock()
		t, existed = m.threads[threadID] // started meanwhile
	case err != nil:
		release()
		return Thread{}, err
	}
	// prev is the thread as it was, restored if the run is rejected.
	var prev *Thread
	var prevChanges uint64
	if existed {
		p := t.snapshot()
		prev, prevChanges = &p, t.changes
		if t.info.Graph != graph && t.info.Graph != "" {
			m.mu.Unlock()
			release()
			return Thread{}, fmt.Errorf("%w: thread %q runs graph %q, not %q", ErrGraphMismatch, threadID, t.info.Graph, graph)
		}
		// With a lease, a "running" this process did not start is what it
		// last read of another process's run, which has ended since (the
		// lease says so); without one, it is the truth.
		busy := t.info.Status == StatusRunning && (lease == nil || t.cancel != nil)
		if busy || t.updating {
			m.mu.Unlock()
			release()
			return Thread{}, fmt.Errorf("%w: thread %q already has an active run; wait for it or cancel it", ErrThreadBusy, threadID)
		}
		if resumeOf != "" && !req.takeover && (t.info.RunID != resumeOf || t.info.Status != StatusInterrupted) {
			m.mu.Unlock()
			release()
			return Thread{}, fmt.Errorf("%w: thread %q was resumed by someone else", ErrNotInterrupted, threadID)
		}
		if t.fromQueue {
			// Only the queue knows the thread (queuedThread), from this
			// run's own claim: a rejected run leaves no thread behind.
			prev = nil
		} else if req.takeover && prev.Status == StatusRunning && prev.RunID == runID {
			// The record as the run left it is not what a rejected
			// takeover goes back to (see Takeover).
			prev.Status = StatusError
		}
	} else {
		t = &thread{hub: newHub()}
		m.threads[threadID] = t
		m.touch(t)
	}
	runCtx, cancelCause := context.WithCancelCause(m.base)
	cancel := func() { cancelCause(errCancelled) }
	if lease != nil {
		runCtx = checkpoints.WithFence(runCtx, checkpoints.Fence{Thread: threadID, Token: lease.Fence})
	}
	t.cancel, t.stop, t.done = cancel, cancelCause, make(chan struct{})
	if t.run != nil {
		// The last run's end may not be written yet: until it is, it is
		// read from its recorder (runLogOf), as the active run is.
		t.ending = append(t.ending, t.run)
	}
	t.run = rec
	t.starting, t.cancelAsked = !req.takeover || !req.continuing, false
	t.fence = 0
	if lease != nil {
		t.fence = lease.Fence
		if m.events != nil {
			t.writer, t.localRun = m.events.Writer(threadID, runID, lease.Fence), runID
			t.hub.setSink(t.writer.Add)
		}
	}
	created := t.info.Created
	if created.IsZero() {
		created = Stamp(m.now())
	}
	t.fromQueue = false
	t.info = Thread{ID: threadID, Graph: graph, Status: StatusRunning, Updated: Stamp(m.now()), RunID: runID, Options: opts,
		Metadata: t.info.Metadata, Created: created, StateUpdated: t.info.StateUpdated}
	t.changes++
	done := t.done
	m.mu.Unlock()

	var fence int64
	if lease != nil {
		fence = lease.Fence
	}
	started := make(chan struct{})
	var startOnce sync.Once
	markStarted := func() { startOnce.Do(func() { close(started) }) }
	// progressed is set (by the listener, before Invoke returns) once
	// the run saved a checkpoint or planned a step.
	// A takeover that continues the run from its checkpoints got going
	// long ago.
	progressed := req.continuing
	conv := newRunEvents(threadID, runID)
	var parts *PartLog
	var project func(engine.Event)
	if req.stream != nil {
		parts = m.newRunPartLog(threadID, runID, lease, req.takeover)
		project = g.Pregel().StreamListener(req.stream.Modes, req.stream.Subgraphs, parts.add)
		m.keepParts(runID, parts)
		req.stream.setLog(parts)
	}
	ro := &engine.RunOptions{
		Metadata: req.metadata,
		// Sync: each checkpoint is saved before the next step starts, so
		// a tab that connects mid-run catches up on every finished step
		// and a crash loses nothing the page already showed.
		Durability:      engine.DurabilitySync,
		ThreadID:        threadID,
		CheckpointID:    checkpointID,
		RunID:           runID,
		RecursionLimit:  opts.RecursionLimit,
		InterruptBefore: opts.InterruptBefore,
		InterruptAfter:  opts.InterruptAfter,
		Listener: func(ev engine.Event) {
			if project != nil {
				project(ev)
			}
			switch ev.(type) {
			case engine.CheckpointSaved, engine.StepPlanned:
				if !progressed {
					// The input was accepted: from now on the thread
					// exists, and runs, for the registry too. (Written
					// here, in the run's own goroutine, so it always
					// precedes the write of how the run ended.)
					m.persist(t)
					m.saveRunFenced(rec.snapshot(), threadID, fence)
					m.mu.Lock()
					t.starting = false
					if t.cancelAsked {
						cancel()
					}
					m.mu.Unlock()
				}
				progressed = true
			}
			if mc, ok := ev.(engine.MessageChunk); ok {
				// Live only: never in the run log, nor the hub's log.
				if x, ok := conv.chunk(mc, m.now()); ok {
					t.hub.stream(x)
				}
				return
			}
			if evs := conv.convert(ev, m.now()); len(evs) > 0 {
				for i := range evs {
					if evs[i].Kind == KindRunStarted {
						// The run log's start time, so a reload titles the
						// run as the live tab did.
						evs[i].RunKind, evs[i].Origin, evs[i].Time = req.kind, originText(req.origin), rec.rec.Started
						if req.takeover {
							// Not a second start of the run: a tab shows the
							// run it has been showing go on.
							evs[i].Kind, evs[i].Attempt, evs[i].Time = KindRunTakeover, lease.Attempt, m.now()
						}
					}
					rec.observe(evs[i])
				}
				t.hub.publish(evs...)
				if _, ok := ev.(engine.RunStarted); ok && len(req.answers) > 0 && !req.takeover {
					t.hub.publish(answerEvents(threadID, runID, req.answers)...)
				}
			}
			if progressed {
				markStarted()
			}
		},
	}
	var runErr error
	m.wg.Add(1)
	if lease != nil {
		m.wg.Add(1)
		go m.renew(runCtx, t, *lease, cancelCause)
	}
	go func() {
		defer m.wg.Done()
		defer cancel()
		var err error
		if req.ended != nil {
			err = *req.ended
		} else {
			_, err = g.Pregel().Invoke(runCtx, input, ro)
		}
		runErr = err
		parts.flush(m) // while the lease holds
		endedHere := true
		if lease != nil && m.leaseGone(runCtx, err, t, *lease) {
			// Another process runs it now (or will: this one stops).
			endedHere = false
		} else {
			m.finish(t, rec, err, !progressed, prev, prevChanges, lease)
		}
		if parts != nil {
			m.partsEnded(runID, parts, req.stream.Keep, endedHere)
		}
		close(done)
		markStarted()
	}()

	select {
	case <-started:
	case <-ctx.Done():
		// The caller went away; the run goes on.
		m.mu.Lock()
		defer m.mu.Unlock()
		return t.snapshot(), nil
	}
	select {
	case <-done:
		if !progressed && runErr != nil {
			return Thread{}, rejection(runErr)
		}
	default:
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return t.snapshot(), nil
}

// rejection is the error of a run that ended before it got going: what
// the input or the options got wrong is ErrInvalidInput; anything else
// (the checkpointer failing, the Manager closing) is not the caller's
// doing and is returned as it is.
func rejection(err error) error {
	for _, bad := range []error{engine.ErrInvalidUpdate, engine.ErrInvalidGraph, engine.ErrEmptyInput, checkpoints.ErrInvalidValue, checkpoints.ErrInvalidConfig} {
		if errors.Is(err, bad) {
			return fmt.Errorf("%w: %v", ErrInvalidInput, err)
		}
	}
	return fmt.Errorf("runs: the run could not start: %w", err)
}

// finish records how a run ended and tells the subscribers. A run that
// failed before saving anything is rolled back: a new thread disappears,
// an existing one (prev) gets its previous record back. Either way the
// registry already holds what it should (nothing, or prev), so nothing
// is written.
//
// With a lease, the lease is released once the run's end is written, and
// only then is the end told: whoever sees it may start the next run at
// once, in any process.
func (m *Manager) finish(t *thread, rec *recorder, err error, rejected bool, prev *Thread, prevChanges uint64, lease *Lease) {
	runID := rec.rec.RunID
	if rejected && err != nil && lease != nil {
		m.closeWriter(t, nil)
		m.release(*lease)
	}
	m.mu.Lock()
	threadID := t.info.ID
	if rejected && err != nil {
		status := StatusIdle
		if prev != nil {
			// The count only grows: a record written meanwhile (the
			// writer's) is older news than prev, which is written again.
			t.info = *prev
			t.changes++
			if t.saved == prevChanges {
				t.saved = t.changes // the registry holds prev already
			} else {
				// The registry has a later record (the writer's), or an
				// earlier one (prev's own write failed and waits): either
				// way prev is written (again).
				m.unsaved[t] = 0
				m.wakeWriter()
			}
			status = prev.Status
		} else {
			delete(m.unsaved, t)
		}
		t.cancel, t.run, t.starting, t.fence = nil, nil, false, 0
		t.hub.publish(Event{Kind: KindRunFinished, Thread: threadID, RunID: runID, Status: status, Error: "rejected: " + err.Error(), Time: m.now()})
		if prev == nil && m.threads[threadID] == t {
			// The thread never existed: its subscribers are told, then
			// let go (a later start of the id makes a new thread).
			delete(m.threads, threadID)
			t.hub.closeAll()
		}
		m.mu.Unlock()
		return
	}
	t.changes++
	m.touch(t)
	info := &t.info
	info.Updated = Stamp(m.now())
	info.StateUpdated = info.Updated // the run got going: it saved a checkpoint
	info.Pending, info.Before, info.After, info.Error = nil, nil, nil, ""
	var intr *engine.Interrupted
	switch {
	case err == nil:
		info.Status = StatusIdle
	case errors.As(err, &intr):
		info.Status = StatusInterrupted
		info.Pending = slices.Clone(intr.Interrupts)
		info.Before, info.After = slices.Clone(intr.Before), slices.Clone(intr.After)
	case errors.Is(err, context.Canceled) && m.base.Err() != nil:
		// The Manager closed (the Studio is stopping) mid-run: as after
		// a crash, the run is reported cut off, not cancelled by someone.
		info.Status, info.Error = StatusError, StoppedReason
	case errors.Is(err, context.Canceled):
		info.Status, info.Error = StatusIdle, "cancelled"
	default:
		info.Status, info.Error = StatusError, cleanText(err.Error())
	}
	if lease == nil {
		t.cancel = nil
	}
	if info.Error != "" {
		// The engine says nothing of the tasks a failure or a cancel cut
		// short: they were cancelled, and the page says so.
		for _, o := range rec.unfinished() {
			c := Event{Kind: KindTaskCancelled, Thread: threadID, Step: o.Step, Node: o.Node, TaskID: o.TaskID, Attempt: o.Attempts, Time: info.Updated}
			rec.observe(c)
			t.hub.publish(c)
		}
	}
	rec.end(info.Status, info.Error, info.Updated)
	ev := Event{Kind: KindRunFinished, Thread: threadID, RunID: runID, Status: info.Status, Error: info.Error, Time: info.Updated}
	ev.Interrupts = previews(info.Pending)
	// Published, and the record to write taken, before the thread is let
	// go: a next run's events must come after this one's end, and the
	// write must be of this run's end, not of whatever claims the thread
	// next.
	if lease == nil {
		t.hub.publish(ev)
	}
	threadRec, changes := m.record(t.info), t.changes
	fence := t.fence
	endKey, endWritten := [2]string{threadID, runID}, make(chan struct{})
	m.endWrites[endKey] = endWritten
	m.mu.Unlock()
	m.write(t, threadRec, changes)
	// Until its record is written, a page reads the run from rec.
	m.saveRunFenced(rec.snapshot(), threadID, fence)
	if lease != nil {
		// The end goes into the event log under the lease, before it is
		// released: other processes' tabs see it as this one's do.
		m.closeWriter(t, &ev)
		relErr := m.release(*lease)
		// Only a lost lease means another process took over. Another
		// failure leaves the lease to expire: whoever takes the run over
		// then finds it ended (endOf) and only records that.
		lost := errors.Is(relErr, ErrLeaseLost)
		m.mu.Lock()
		t.cancel, t.fence = nil, 0
		if relErr != nil {
			// A takeover of this run id writes events this process must
			// show as another's.
			t.localRun = ""
		}
		if lost {
			// Another process took the run over while this one ended it:
			// the end written here was refused by the fence, and what
			// this process holds is not the thread's truth any more.
			t.saved = t.changes
			delete(m.unsaved, t)
		} else {
			t.hub.publish(ev)
		}
		m.mu.Unlock()
	}
	t.hub.settle()
	// The thread may be idle now: the bounds count it.
	m.mu.Lock()
	if t.run == rec {
		t.run = nil
	}
	t.ending = slices.DeleteFunc(t.ending, func(r *recorder) bool { return r == rec })
	// The record is written, and no longer read from rec.
	m.doneEndWrite(endKey, endWritten)
	m.evictLocked(nil)
	m.mu.Unlock()
	close(endWritten)
}

// doneEndWrite removes the entry of an end's write that returned, unless
// another took its place; m.mu must be held.
func (m *Manager) doneEndWrite(key [2]string, done chan struct{}) {
	if m.endWrites[key] == done {
		delete(m.endWrites, key)
	}
}

// settleOrphans records how the orphaned runs of the registry (running,
// with no live owner) stand, read from each thread's head checkpoint:
//   - interrupts wait for an answer: interrupted;
//   - the head has nothing left to run: idle (the run ended and only the
//     registry's last write was lost);
//   - a step whose every task saved its writes but whose checkpoint was
//     never written (engine.StateSnapshot.WritesPending): error
//     ResumeNeededReason; continuing the thread applies those writes;
//   - otherwise (next tasks): error StoppedReason, and a resume goes on
//     from there.
//
// A thread whose graph is not served here or whose head cannot be read
// gets StoppedReason too: nothing runs it any more.
func (m *Manager) settleOrphans(ctx context.Context) error {
	at := Stamp(m.now())
	orphans, err := m.store.Orphans(ctx, at, OwnerTimeout)
	if err != nil {
		return fmt.Errorf("runs: read the runs of stopped processes: %w", err)
	}
	var errs []error
	for _, rec := range orphans {
		if ctx.Err() != nil {
			break // the rest wait for the next beat
		}
		if m.queue != nil {
			// A run in the queue is taken over, not settled: only a run
			// of a process that ran without one (before an upgrade) is.
			if _, active, err := m.queue.Active(ctx, rec.ID); err != nil || active {
				if err != nil {
					errs = append(errs, fmt.Errorf("runs: settle thread %q of a stopped process: %w", rec.ID, err))
				}
				continue
			}
		}
		owner, runID := rec.Owner, rec.RunID
		rec.Status, rec.Error, rec.Owner, rec.Updated = StatusError, StoppedReason, "", at
		var pending []engine.Interruption
		if g, ok := m.graphs[rec.Graph]; ok {
			sctx, cancel := context.WithTimeout(ctx, settleReadTimeout)
			st, err := g.Pregel().GetState(sctx, checkpoints.Config{ThreadID: rec.ID})
			cancel()
			if err == nil && st.Config.CheckpointID != "" {
				switch {
				case len(st.Interrupts) > 0:
					rec.Status, rec.Error, pending = StatusInterrupted, "", slices.Clone(st.Interrupts)
				case len(st.Next) == 0 && !st.WritesPending:
					rec.Status, rec.Error = StatusIdle, ""
				case st.WritesPending:
					rec.Error = ResumeNeededReason
				}
			}
		}
		// Only if the thread is still the orphan read above: another
		// Studio may have settled it and started a run on it since.
		settled, err := m.store.SettleThread(ctx, rec, owner, runID)
		if err != nil {
			errs = append(errs, fmt.Errorf("runs: settle thread %q of a stopped process: %w", rec.ID, err))
			continue
		}
		if !settled {
			continue
		}
		if err := m.endOrphanRun(ctx, rec, runID); err != nil {
			errs = append(errs, err)
		}
		// A thread this process read while it was still called running
		// (settled later than start-up) takes the settled record too.
		m.mu.Lock()
		// A lookup reading the registry right now may have read the
		// orphan's record: counted as an eviction of the thread, it makes
		// that lookup read again (see lockThread).
		m.evictions++
		m.evicted[m.evictions%uint64(len(m.evicted))] = rec.ID
		if t, ok := m.threads[rec.ID]; ok && t.cancel == nil && t.info.Status == StatusRunning && t.info.RunID == rec.RunID {
			t.info.Status, t.info.Error, t.info.Updated, t.info.Pending = rec.Status, rec.Error, rec.Updated, pending
			t.changes++
			t.saved = t.changes
			t.hub.publish(Event{Kind: KindRunFinished, Thread: rec.ID, RunID: rec.RunID, Status: rec.Status, Error: rec.Error, Time: rec.Updated, Interrupts: previews(pending)})
		}
		m.mu.Unlock()
	}
	return errors.Join(errs...)
}

// endOrphanRun ends the run-log record of a settled orphan's run as the
// thread was settled (rec): else the run, which no process runs any more,
// would read as running for ever.
func (m *Manager) endOrphanRun(ctx context.Context, rec ThreadRecord, runID string) error {
	if runID == "" {
		return nil
	}
	recs, err := m.runLog.ListRuns(ctx, rec.ID, 0)
	if err != nil {
		return fmt.Errorf("runs: end the run %q of stopped thread %q: %w", runID, rec.ID, err)
	}
	i := slices.IndexFunc(recs, func(r RunRecord) bool { return r.RunID == runID })
	if i < 0 || !recs[i].Ended.IsZero() {
		return nil
	}
	r := recs[i]
	r.Ended, r.Status, r.Error = rec.Updated, rec.Status, rec.Error
	if err := m.runLog.SaveRun(ctx, r); err != nil {
		return fmt.Errorf("runs: end the run %q of stopped thread %q: %w", runID, rec.ID, err)
	}
	return nil
}

// settleReadTimeout bounds the read of one orphan's head.
const settleReadTimeout = 5 * time.Second

// StoppedReason is the error of a thread whose run was going on when the
// Studio that ran it stopped (see NewManager).
const StoppedReason = "the Studio stopped during this run"

// ResumeNeededReason is the error of a thread whose run stopped with the
// writes of its last step saved but not the step's checkpoint: its head
// lists no next task, yet it is not finished (see settleOrphans).
const ResumeNeededReason = "resume needed: the Studio stopped after every task of a step saved its writes but before the step's checkpoint; continue the thread to apply them and go on"

// NeedsResume reports whether the thread stopped with writes to apply
// (ResumeNeededReason).
func (t Thread) NeedsResume() bool { return t.Status == StatusError && t.Error == ResumeNeededReason }

// ManagerOption configures NewManager.
type ManagerOption func(*Manager)

// WithThreadStore keeps the thread registry in s (Postgres: package
// runs/pgthreads), so threads are listed, and interrupted ones can be
// resumed, after a restart. The graphs' checkpointers must keep their
// checkpoints as long.
func WithThreadStore(s ThreadStore) ManagerOption {
	return func(m *Manager) { m.store = s }
}

// WithRunLog keeps the threads' run logs in l (Postgres: pgthreads.RunLog),
// so a page reloaded after a restart still shows cache hits, cancelled
// tasks, durations and answers. Without it the log is in memory.
func WithRunLog(l RunLog) ManagerOption {
	return func(m *Manager) { m.runLog = l }
}

// WithErrorHandler receives the errors the Manager cannot return to a
// caller: a run's status that could not be written to the registry (the
// Manager goes on with the status it holds, and keeps the thread in
// memory; the registry is behind until the thread's next change). The
// Manager never logs; without a handler these errors are dropped.
func WithErrorHandler(f func(error)) ManagerOption {
	return func(m *Manager) { m.onError = f }
}

// Defaults for WithIdleLimits.
const (
	DefaultIdleThreads    = 256
	DefaultIdleEventBytes = 64 << 20
)

// WithIdleLimits bounds the memory of the threads nobody is using: no
// active run, no subscriber, and a status the registry holds. The Manager
// keeps at most threads of them, and fewer when their retained events
// (see RetainEvents) hold more than eventBytes in all; beyond that it
// drops the least recently used from memory. A dropped thread is read
// back from the registry and its checkpoints when it is next looked at,
// as after a restart: it lists, opens and resumes as before (its page
// reads durations, cache hits and answers from the run log), and a
// cursor into its old events gets a full catch-up.
// Without this option the limits are DefaultIdleThreads and
// DefaultIdleEventBytes. threads must be at least 1, eventBytes at
// least 0 (NewManager refuses others).
func WithIdleLimits(threads, eventBytes int) ManagerOption {
	return func(m *Manager) { m.idleThreads, m.idleBytes = threads, eventBytes }
}

// storeTimeout bounds a registry call made without a caller's context:
// NewManager's, and the writes of a thread's status, which must not be
// cancelled with the run or the request that caused them.
const storeTimeout = 30 * time.Second

func storeContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), storeTimeout)
}

func (m *Manager) report(err error) {
	if m.onError != nil {
		m.onError(err)
	}
}

// lockThread returns the thread with m.mu held, from the threads this
// process holds or else from the registry; a thread read from the
// registry is held from then on (it gets a hub for subscribers), until it
// is evicted. An interrupted thread's pending interrupts are read from
// its latest checkpoint: they are what Resume answers. Holding m.mu, the
// caller may rely on the thread being the one held (eviction takes
// m.mu): a subscriber it adds, or a run it claims, is on the hub and
// record every later lookup finds. On error m.mu is not held.
func (m *Manager) lockThread(ctx context.Context, id string) (*thread, error) {
	return m.lookup(ctx, id, true)
}

// holdThread is lockThread for a caller that needs the thread held (its
// hub, its local run), not its record: with a queue, a held thread's
// record is not read again from the registry (see refresh), which the
// caller's later Thread call does if it reads the record.
func (m *Manager) holdThread(ctx context.Context, id string) (*thread, error) {
	return m.lookup(ctx, id, false)
}

func (m *Manager) lookup(ctx context.Context, id string, fresh bool) (*thread, error) {
	for attempt := 1; ; attempt++ {
		m.mu.Lock()
		if t, ok := m.threads[id]; ok {
			m.touch(t)
			if fresh && m.queue != nil && !t.holdsTruth() {
				return m.refresh(ctx, t)
			}
			return t, nil
		}
		evictions := m.evictions
		m.mu.Unlock()
		// After a few tries the record read is taken as it is: the
		// thread is being resumed and evicted faster than it can be read.
		t, err := m.loadThread(ctx, id, evictions, attempt < maxThreadReads)
		if t != nil || err != nil {
			return t, err
		}
		// The thread was evicted while the registry was read, so its
		// record may be newer than the one read. Read again.
	}
}

// maxThreadReads bounds lockThread's registry reads of one lookup.
const maxThreadReads = 8

// evictedSince reports whether id was evicted after the eviction count
// was since (or too many threads were, to tell). m.mu is held.
func (m *Manager) evictedSince(id string, since uint64) bool {
	if m.evictions-since > uint64(len(m.evicted)) {
		return true
	}
	for n := since + 1; n <= m.evictions; n++ {
		if m.evicted[n%uint64(len(m.evicted))] == id {
			return true
		}
	}
	return false
}

// loadThread reads a thread from the registry and holds it, returning it
// with m.mu held. With recheck, it returns nil, nil (m.mu not held) when
// the thread was evicted since the eviction count was evictions.
func (m *Manager) loadThread(ctx context.Context, id string, evictions uint64, recheck bool) (*thread, error) {
	if CheckThreadID(id) != nil {
		// Not a thread id, so not a thread: callers answer 404, as for
		// any id nobody started.
		return nil, fmt.Errorf("%w %q", ErrUnknownThread, clip(id))
	}
	info, queued, err := m.readThread(ctx, id, nil)
	if errors.Is(err, ErrUnknownThread) {
		m.mu.Lock()
		evicted := recheck && m.evictedSince(id, evictions)
		m.mu.Unlock()
		if evicted {
			return nil, nil // it was saved, then evicted, since
		}
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	t, ok := m.threads[id]
	if !ok && recheck && m.evictedSince(id, evictions) {
		m.mu.Unlock()
		return nil, nil
	}
	if !ok {
		t = &thread{info: info, hub: newHub(), fromQueue: queued}
		m.threads[id] = t
		m.evictLocked(t)
	}
	m.touch(t)
	return t, nil
}

// queuedThread is, with a queue, a thread the registry does not know yet
// whose first run is claimed (see ThreadRuns): running. Without one, or
// without such a run, it is ErrUnknownThread.
func (m *Manager) queuedThread(ctx context.Context, id string) (ThreadRecord, error) {
	unknown := fmt.Errorf("%w %q", ErrUnknownThread, clip(id))
	if m.queue == nil {
		return ThreadRecord{}, unknown
	}
	queued, err := m.queue.Queued(ctx, id)
	if err != nil {
		return ThreadRecord{}, err
	}
	if len(queued) == 0 {
		return ThreadRecord{}, unknown
	}
	q := queued[0]
	return ThreadRecord{ID: id, Graph: q.Graph, Status: StatusRunning, RunID: q.RunID, Updated: q.Started, Created: q.Started, Options: q.Options, Owner: queuedOwner}, nil
}

// queuedOwner marks a record queuedThread made: no registry holds it.
const queuedOwner = "\x00queued"

// holdsTruth reports whether what this process holds of t is the
// thread's truth: a run or an edit of its own, or a change the registry
// has yet to take. Otherwise, with a queue, another process may have
// changed the thread since, and the registry is the truth. m.mu is held.
func (t *thread) holdsTruth() bool {
	return t.cancel != nil || t.updating || t.changes != t.saved
}

// refresh reads t's record again from the registry (see holdsTruth) and
// returns t with m.mu held, as lockThread does; m.mu is held on entry.
func (m *Manager) refresh(ctx context.Context, t *thread) (*thread, error) {
	id, changes, held := t.info.ID, t.changes, t.snapshot()
	m.mu.Unlock()
	info, queued, err := m.readThread(ctx, id, &held)
	if errors.Is(err, ErrUnknownThread) {
		m.mu.Lock()
		if t.fromQueue && !t.holdsTruth() && m.threads[id] == t {
			// Known only from a claim that has ended without the thread
			// ever being written (a refused input): there is no thread.
			delete(m.threads, id)
			t.hub.closeAll()
			m.mu.Unlock()
			return nil, err
		}
		return t, nil // deleted meanwhile, or not yet written: as held
	}
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if !t.holdsTruth() && t.changes == changes {
		t.info, t.fromQueue = info, queued
	}
	return t, nil
}

// readThread reads a thread's record from the registry (or, with a queue,
// from its first run's claim: queued is then set; see queuedThread), with
// an interrupted thread's pending interrupts read from its checkpoints,
// unless held (what this process holds of it, or nil) is the same stop of
// the same run and has them already.
func (m *Manager) readThread(ctx context.Context, id string, held *Thread) (info Thread, queued bool, err error) {
	rec, err := m.store.GetThread(ctx, id)
	if errors.Is(err, ErrUnknownThread) {
		rec, err = m.queuedThread(ctx, id)
	}
	if errors.Is(err, ErrUnknownThread) {
		return Thread{}, false, err
	}
	if err != nil {
		return Thread{}, false, fmt.Errorf("runs: read thread %q: %w", id, err)
	}
	info = fromRecord(rec)
	same := held != nil && held.Status == StatusInterrupted && held.RunID == info.RunID && held.Updated.Equal(info.Updated)
	switch {
	case info.Status != StatusInterrupted:
	case same:
		info.Pending = held.Pending
	default:
		if g, ok := m.graphs[info.Graph]; ok {
			snap, err := g.Pregel().GetState(ctx, checkpoints.Config{ThreadID: id})
			if err != nil {
				return Thread{}, false, fmt.Errorf("runs: read the pending interrupts of thread %q: %w", id, err)
			}
			info.Pending = slices.Clone(snap.Interrupts)
		}
	}
	return info, rec.Owner == queuedOwner, nil
}

// touch marks t as just used. m.mu is held.
func (m *Manager) touch(t *thread) {
	m.clock++
	t.used = m.clock
}

// idle reports whether t may be evicted: nothing but memory would notice
// (subs is its subscriber count). m.mu is held.
func (t *thread) idle(subs int) bool {
	// A run whose end is still being written is read from its recorder
	// (runLogOf) until then: the thread is not idle yet.
	return t.info.Status != StatusRunning && t.cancel == nil && !t.updating && t.changes == t.saved && subs == 0 &&
		t.run == nil && len(t.ending) == 0
}

// evictLocked drops idle threads, least recently used first, until the
// idle ones number at most m.idleThreads and their retained events hold
// at most m.idleBytes. keep, the thread a caller is about to use, stays.
// The scan is over the held threads, which these bounds keep few.
// m.mu is held.
func (m *Manager) evictLocked(keep *thread) {
	type idleThread struct {
		id    string
		t     *thread
		bytes int
	}
	var idle []idleThread
	n, total := 0, 0
	for id, t := range m.threads {
		subs, bytes := t.hub.usage()
		if !t.idle(subs) {
			continue
		}
		n, total = n+1, total+bytes
		if t != keep {
			idle = append(idle, idleThread{id, t, bytes})
		}
	}
	if n <= m.idleThreads && total <= m.idleBytes {
		return
	}
	slices.SortFunc(idle, func(a, b idleThread) int { return cmp.Compare(a.t.used, b.t.used) })
	for _, it := range idle {
		if n <= m.idleThreads && total <= m.idleBytes {
			break
		}
		delete(m.threads, it.id)
		if it.t.unfollow != nil {
			it.t.unfollow()
		}
		m.evictions++
		m.evicted[m.evictions%uint64(len(m.evicted))] = it.id
		n, total = n-1, total-it.bytes
	}
}

// persist writes the thread's record as it is now to the registry. A
// failure goes to the error handler: the run it reports on has already
// happened, and the in-memory record stays right for this process.
func (m *Manager) persist(t *thread) {
	m.mu.Lock()
	rec, changes := m.record(t.info), t.changes
	m.mu.Unlock()
	m.write(t, rec, changes)
}

// write writes rec, the thread's record as of its changes-th change, to
// the registry, unless a later change is already written (writes of one
// thread are serialised, and may arrive out of order).
func (m *Manager) write(t *thread, rec ThreadRecord, changes uint64) {
	ctx, cancel := storeContext()
	defer cancel()
	m.mu.Lock()
	fence := t.fence
	m.mu.Unlock()
	ctx = fenced(ctx, rec.ID, fence)
	if err := m.save(ctx, t, rec, changes); err != nil {
		if errors.Is(err, checkpoints.ErrFenced) {
			// Another process holds the thread now: its record is the
			// thread's, and this one is never written.
			m.report(fmt.Errorf("runs: save thread %q (%s): %w", rec.ID, rec.Status, err))
			return
		}
		m.report(fmt.Errorf("runs: save thread %q (%s), will retry: %w", rec.ID, rec.Status, err))
		m.mu.Lock()
		m.unsaved[t] = fence
		m.mu.Unlock()
		m.wakeWriter()
	}
}

// wakeWriter tells the registry writer that something waits to be
// written; it never blocks.
func (m *Manager) wakeWriter() {
	select {
	case m.rewake <- struct{}{}:
	default:
	}
}

// save writes rec (the thread's record at its change count changes) to
// the registry, unless a later record was already written.
func (m *Manager) save(ctx context.Context, t *thread, rec ThreadRecord, changes uint64) error {
	t.saveMu.Lock()
	defer t.saveMu.Unlock()
	m.mu.Lock()
	written := t.saved >= changes
	m.mu.Unlock()
	if written {
		return nil
	}
	if err := m.store.SaveThread(ctx, rec); err != nil {
		return err
	}
	m.mu.Lock()
	t.saved = max(t.saved, changes)
	m.mu.Unlock()
	return nil
}

// Back-off of the registry writer between rounds that left writes
// unsaved.
const (
	rewriteFirst = 100 * time.Millisecond
	rewriteMax   = 5 * time.Second
	// rewriteTimeout bounds one write of a round, so one thread's write
	// into a database that is still down does not hold up the rest, and
	// rewriteRoundTimeout a whole round.
	rewriteTimeout      = 5 * time.Second
	rewriteRoundTimeout = 30 * time.Second
	// closeRoundTimeout bounds Close's last round.
	closeRoundTimeout = 10 * time.Second
)

// rewrite is the registry writer: it writes the latest record of every
// thread in unsaved again, in rounds with back-off, until each lands. A
// thread's writes stay in order (save never writes a record older than
// one written), and a thread left showing "running" in the registry
// after its run ended is what it exists to prevent. On Close it makes one
// last round after the runs have ended.
func (m *Manager) rewrite() {
	defer m.writer.Done()
	wait := rewriteFirst
	var next time.Time // when the next round is due; zero: none pending
	for {
		var timer <-chan time.Time
		m.mu.Lock()
		pending := len(m.unsaved) > 0 || len(m.unsavedRuns) > 0
		m.mu.Unlock()
		if pending {
			// A round already due stays due: new failures arriving
			// faster than the back-off must not keep postponing it.
			if next.IsZero() {
				next = time.Now().Add(wait)
			}
			timer = time.After(time.Until(next))
		}
		select {
		case <-m.closing:
			ctx, cancel := context.WithTimeout(context.Background(), closeRoundTimeout)
			m.rewriteRound(ctx)
			cancel()
			return
		case <-m.rewake:
			continue
		case <-timer:
		}
		next = time.Time{}
		ctx, cancel := context.WithTimeout(context.Background(), rewriteRoundTimeout)
		ok := m.rewriteRound(ctx)
		cancel()
		if ok {
			wait = rewriteFirst
		} else {
			wait = min(wait*2, rewriteMax)
		}
	}
}

// beat says this Manager is alive every HeartbeatInterval, on its own
// goroutine so that slow registry writes never delay it (three missed
// beats make this process's running threads orphans to other Managers),
// then settles the runs of processes that fell silent since (a replica
// that died, this process's predecessor restarted within OwnerTimeout).
func (m *Manager) beat() {
	defer m.writer.Done()
	tick := time.NewTicker(HeartbeatInterval)
	defer tick.Stop()
	for {
		select {
		case <-m.closing:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), HeartbeatInterval)
		if err := m.store.Heartbeat(ctx, m.owner, m.now()); err != nil {
			m.report(fmt.Errorf("runs: heartbeat: %w", err))
		} else if err := m.settleOrphans(ctx); err != nil {
			m.report(err)
		}
		cancel()
	}
}

// rewriteRound writes each unsaved thread's current record, and each
// unsaved run-log record, once (until ctx ends) and reports whether every
// one landed. A thread whose run is still starting is left for a later
// round: its record would claim a run whose input may yet be refused.
func (m *Manager) rewriteRound(ctx context.Context) bool {
	m.mu.Lock()
	ts := make([]*thread, 0, len(m.unsaved))
	fences := make(map[*thread]int64, len(m.unsaved))
	for t, f := range m.unsaved {
		ts = append(ts, t)
		fences[t] = f
	}
	keys := make([][2]string, 0, len(m.unsavedRuns))
	for k := range m.unsavedRuns {
		keys = append(keys, k)
	}
	m.mu.Unlock()
	ok := true
	for _, t := range ts {
		m.mu.Lock()
		rec, changes, starting := m.record(t.info), t.changes, t.starting
		m.mu.Unlock()
		if starting {
			ok = false
			continue
		}
		sctx, cancel := context.WithTimeout(fenced(ctx, rec.ID, fences[t]), rewriteTimeout)
		err := m.save(sctx, t, rec, changes)
		cancel()
		if errors.Is(err, checkpoints.ErrFenced) {
			// Another process holds the thread now (see write).
			m.mu.Lock()
			t.saved = max(t.saved, changes)
			delete(m.unsaved, t)
			m.mu.Unlock()
			continue
		}
		if err != nil {
			ok = false
			continue
		}
		m.mu.Lock()
		if t.saved >= t.changes {
			delete(m.unsaved, t)
		}
		m.mu.Unlock()
	}
	for _, key := range keys {
		if ctx.Err() != nil {
			return false
		}
		if !m.rewriteRun(ctx, key) {
			ok = false
		}
	}
	return ok
}

// rewriteRun writes the run-log record waiting under key, if one still
// is, and reports whether nothing is left waiting there.
func (m *Manager) rewriteRun(ctx context.Context, key [2]string) bool {
	m.mu.Lock()
	r, waiting := m.unsavedRuns[key]
	var written chan struct{}
	if waiting && m.endWrites[key] == nil {
		// Deleting the run waits for this write (endWrites).
		written = make(chan struct{})
		m.endWrites[key] = written
	}
	m.mu.Unlock()
	if !waiting {
		return true
	}
	if written != nil {
		defer func() {
			m.mu.Lock()
			m.doneEndWrite(key, written)
			m.mu.Unlock()
			close(written)
		}()
	}
	sctx, cancel := context.WithTimeout(fenced(ctx, key[0], r.fence), rewriteTimeout)
	defer cancel()
	if err := m.runLog.SaveRun(sctx, r.RunRecord); err != nil && !errors.Is(err, checkpoints.ErrFenced) {
		return false
	}
	m.mu.Lock()
	// Unless a newer record of the run came to wait meanwhile.
	if cur, ok := m.unsavedRuns[key]; ok && cur.Ended.Equal(r.Ended) && cur.Status == r.Status {
		delete(m.unsavedRuns, key)
	}
	m.mu.Unlock()
	return true
}

// unsavedRun is a run-log record waiting to be written again, with the
// fence of its run's lease (0 for none).
type unsavedRun struct {
	RunRecord
	fence int64
}

// record is t as the registry keeps it; a running thread is marked as
// this Manager's.
func (m *Manager) record(t Thread) ThreadRecord {
	rec := ThreadRecord{
		ID: t.ID, Graph: t.Graph, Status: t.Status, RunID: t.RunID, Error: t.Error, Updated: t.Updated,
		Before: t.Before, After: t.After, Options: t.Options,
		Metadata: t.Metadata, Created: t.Created, StateUpdated: t.StateUpdated,
	}.clone()
	if rec.Status == StatusRunning {
		rec.Owner = m.owner
	}
	return rec
}

func fromRecord(r ThreadRecord) Thread {
	r = r.clone()
	return Thread{
		ID: r.ID, Graph: r.Graph, Status: r.Status, RunID: r.RunID, Error: r.Error, Updated: r.Updated,
		Before: r.Before, After: r.After, Options: r.Options,
		Metadata: r.Metadata, Created: r.Created, StateUpdated: r.StateUpdated,
	}
}
