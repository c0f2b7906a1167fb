package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
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

// ThreadFilter narrows Threads; empty fields match everything.
type ThreadFilter struct {
	Status Status
	Graph  string
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

	mu      sync.Mutex
	threads map[string]*thread
}

type thread struct {
	info Thread
	// updating is set while UpdateState writes a checkpoint: runs are
	// refused meanwhile, as they are while a run is active.
	updating bool
	hub      *hub
	cancel   context.CancelFunc
	done     chan struct{} // closed when the active run ends
}

// NewManager registers graphs by name. Every graph needs a checkpointer:
// threads, resume and catch-up all read checkpoints.
func NewManager(graphs map[string]engine.Compiled) (*Manager, error) {
	m := &Manager{graphs: map[string]engine.Compiled{}, threads: map[string]*thread{}, now: time.Now}
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
	m.base, m.stop = context.WithCancel(context.Background())
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

// Thread returns a thread's current record.
func (m *Manager) Thread(id string) (Thread, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.threads[id]
	if !ok {
		return Thread{}, fmt.Errorf("%w %q", ErrUnknownThread, id)
	}
	return t.snapshot(), nil
}

// Threads lists the threads f selects, most recently updated first.
func (m *Manager) Threads(f ThreadFilter) []Thread {
	m.mu.Lock()
	out := make([]Thread, 0, len(m.threads))
	for _, t := range m.threads {
		if (f.Status == "" || t.info.Status == f.Status) && (f.Graph == "" || t.info.Graph == f.Graph) {
			out = append(out, t.snapshot())
		}
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Updated.Equal(out[j].Updated) {
			return out[i].Updated.After(out[j].Updated)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func (t *thread) snapshot() Thread {
	s := t.info
	s.Pending = slices.Clone(s.Pending)
	s.Before, s.After = slices.Clone(s.Before), slices.Clone(s.After)
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
	if !validName.MatchString(threadID) {
		return Thread{}, fmt.Errorf("%w: thread id %q: use letters, digits, '.', '_' and '-' (1-128 characters)", ErrInvalidInput, threadID)
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
	return m.launch(ctx, g, graph, threadID, engine.Update(input), opts, "", "")
}

// ByID answers several interrupts at once, keyed by interrupt id.
type ByID map[string]any

// Resume continues an interrupted thread. answer is the value the single
// pending interrupt's Interrupt call returns, or a ByID map answering
// interrupts by id (needed when several are pending). A run stopped at a
// static breakpoint continues with a nil answer. Resume reuses the last
// run's options (breakpoints and recursion limit).
func (m *Manager) Resume(ctx context.Context, threadID string, answer any) (Thread, error) {
	m.mu.Lock()
	t, ok := m.threads[threadID]
	if !ok {
		m.mu.Unlock()
		return Thread{}, fmt.Errorf("%w %q", ErrUnknownThread, threadID)
	}
	info := t.snapshot()
	m.mu.Unlock()
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
	return m.launch(ctx, g, info.Graph, threadID, input, info.Options, info.RunID, "")
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
func (m *Manager) Cancel(threadID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.threads[threadID]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownThread, threadID)
	}
	if t.info.Status != StatusRunning || t.cancel == nil {
		return fmt.Errorf("%w: thread %q is %s", ErrNotRunning, threadID, t.info.Status)
	}
	t.cancel()
	return nil
}

// Wait blocks until the thread has no active run (or ctx is done) and
// returns its record.
func (m *Manager) Wait(ctx context.Context, threadID string) (Thread, error) {
	m.mu.Lock()
	t, ok := m.threads[threadID]
	if !ok {
		m.mu.Unlock()
		return Thread{}, fmt.Errorf("%w %q", ErrUnknownThread, threadID)
	}
	done := t.done
	m.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return Thread{}, ctx.Err()
		}
	}
	return m.Thread(threadID)
}

// Close cancels every active run and waits for them to end.
func (m *Manager) Close() {
	m.stop()
	m.wg.Wait()
}

func checkOptions(g engine.Compiled, opts StartOptions) error {
	if opts.RecursionLimit < 0 || opts.RecursionLimit > MaxRecursionLimit {
		return fmt.Errorf("%w: recursion limit %d: use 1 to %d (0 for the default)", ErrInvalidInput, opts.RecursionLimit, MaxRecursionLimit)
	}
	nodes := g.Pregel().NodeNames()
	for _, list := range [][]string{opts.InterruptBefore, opts.InterruptAfter} {
		for _, n := range list {
			if n != "*" && (!slices.Contains(nodes, n) || n == engine.Start) {
				return fmt.Errorf("%w: breakpoint on unknown node %q", ErrInvalidInput, n)
			}
		}
	}
	return nil
}

// launch claims the thread, starts the run in the background and waits
// until it has got going (saved a checkpoint or planned a step: its input
// was accepted) or ended. resumeOf, when set, is the interrupted run a
// resume continues; the thread must still be waiting on it. checkpointID,
// when set, runs from that checkpoint instead of the thread's latest.
func (m *Manager) launch(ctx context.Context, g engine.Compiled, graph, threadID string, input any, opts StartOptions, resumeOf, checkpointID string) (Thread, error) {
	runID := uuid.NewString()
	m.mu.Lock()
	t, existed := m.threads[threadID]
	var prev Thread
	if existed {
		prev = t.snapshot()
		if t.info.Graph != graph {
			m.mu.Unlock()
			return Thread{}, fmt.Errorf("%w: thread %q runs graph %q, not %q", ErrGraphMismatch, threadID, t.info.Graph, graph)
		}
		if t.info.Status == StatusRunning || t.updating {
			m.mu.Unlock()
			return Thread{}, fmt.Errorf("%w: thread %q already has an active run; wait for it or cancel it", ErrThreadBusy, threadID)
		}
		if resumeOf != "" && (t.info.RunID != resumeOf || t.info.Status != StatusInterrupted) {
			m.mu.Unlock()
			return Thread{}, fmt.Errorf("%w: thread %q was resumed by someone else", ErrNotInterrupted, threadID)
		}
	} else {
		t = &thread{hub: newHub()}
		m.threads[threadID] = t
	}
	runCtx, cancel := context.WithCancel(m.base)
	t.cancel, t.done = cancel, make(chan struct{})
	t.info = Thread{ID: threadID, Graph: graph, Status: StatusRunning, Updated: m.now(), RunID: runID, Options: opts}
	done := t.done
	m.mu.Unlock()

	started := make(chan struct{})
	var startOnce sync.Once
	markStarted := func() { startOnce.Do(func() { close(started) }) }
	// progressed is set (by the listener, before Invoke returns) once
	// the run saved a checkpoint or planned a step.
	var progressed bool
	ro := &engine.RunOptions{
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
			switch ev.(type) {
			case engine.CheckpointSaved, engine.StepPlanned:
				progressed = true
			}
			if evs := fromEngine(threadID, runID, ev, m.now()); len(evs) > 0 {
				t.hub.publish(evs...)
			}
			if progressed {
				markStarted()
			}
		},
	}
	var runErr error
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cancel()
		_, err := g.Pregel().Invoke(runCtx, input, ro)
		runErr = err
		m.finish(t, threadID, runID, err, !progressed, existed, prev)
		close(done)
		markStarted()
	}()

	select {
	case <-started:
	case <-ctx.Done():
		// The caller went away; the run goes on.
		return m.Thread(threadID)
	}
	select {
	case <-done:
		if !progressed && runErr != nil {
			return Thread{}, fmt.Errorf("%w: %v", ErrInvalidInput, runErr)
		}
	default:
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return t.snapshot(), nil
}

// finish records how a run ended and tells the subscribers. A run that
// failed before saving anything is rolled back: a new thread disappears,
// an existing one gets its previous record back.
func (m *Manager) finish(t *thread, threadID, runID string, err error, rejected, existed bool, prev Thread) {
	m.mu.Lock()
	if rejected && err != nil {
		status := StatusIdle
		if existed {
			t.info = prev
			status = prev.Status
		} else {
			delete(m.threads, threadID)
		}
		t.cancel = nil
		m.mu.Unlock()
		t.hub.publish(Event{Kind: KindRunFinished, Thread: threadID, RunID: runID, Status: status, Error: "rejected: " + err.Error(), Time: m.now()})
		return
	}
	info := &t.info
	info.Updated = m.now()
	info.Pending, info.Before, info.After, info.Error = nil, nil, nil, ""
	var intr *engine.Interrupted
	switch {
	case err == nil:
		info.Status = StatusIdle
	case errors.As(err, &intr):
		info.Status = StatusInterrupted
		info.Pending = slices.Clone(intr.Interrupts)
		info.Before, info.After = slices.Clone(intr.Before), slices.Clone(intr.After)
	case errors.Is(err, context.Canceled):
		info.Status, info.Error = StatusIdle, "cancelled"
	default:
		info.Status, info.Error = StatusError, err.Error()
	}
	t.cancel = nil
	ev := Event{Kind: KindRunFinished, Thread: threadID, RunID: runID, Status: info.Status, Error: info.Error, Time: info.Updated}
	ev.Interrupts = previews(info.Pending)
	m.mu.Unlock()
	t.hub.publish(ev)
}
