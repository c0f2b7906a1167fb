package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/superstep-dev/superstep/engine"
)

// Queue makes runs durable and lets several processes share threads
// (WithQueue; package runs/riverq keeps it in Postgres on river). A run is
// claimed before it starts: the claim records the run's request, takes the
// thread's lease for this process and leaves a recovery job, all in one
// transaction, so that when this process dies another one (or this one,
// restarted) takes the run over and continues it from its last checkpoint.
// The lease carries a fencing token that every checkpoint write checks
// (checkpoints.WithFence), so a process that lost its lease cannot write.
type Queue interface {
	// Claim records run and takes its thread's lease for this process.
	// ErrThreadBusy: the thread has an active run, in any process.
	Claim(ctx context.Context, run QueuedRun) (Lease, error)
	// Renew extends the lease. It reports whether someone asked for the
	// run to be cancelled (Cancel, from any process); ErrLeaseLost when
	// another process took the thread over.
	Renew(ctx context.Context, l Lease) (cancel bool, err error)
	// Finish ends the run: the lease is released and the run's request
	// and recovery job go. ErrLeaseLost when another process took over.
	Finish(ctx context.Context, l Lease) error
	// HandBack gives a run that has not ended back to the queue at once
	// (this process is stopping): another process takes it over.
	HandBack(ctx context.Context, l Lease) error
	// Cancel asks the process running the thread's active run to cancel
	// it (it learns of it on its next Renew), if that run is runID (""
	// for any). ErrNotRunning when the thread has no such active run.
	Cancel(ctx context.Context, thread, runID string) error
	// Active reports the thread's active run, if any, in any process.
	Active(ctx context.Context, thread string) (runID string, ok bool, err error)
	// Queued returns the runs of the thread the queue holds (claimed, not
	// yet ended), oldest first: a run is there from its claim, before
	// the registry or the run log hear of it.
	Queued(ctx context.Context, thread string) ([]QueuedRun, error)

	// Enqueue keeps run pending in its thread's queue: it starts, in any
	// process (riverq.Executor StartQueued), once every run ahead of it has ended and
	// run.NotBefore has passed. A pending run makes its thread busy to
	// Claim, so a new run never jumps the queue. ErrQueueFull past the
	// limits.
	Enqueue(ctx context.Context, run QueuedRun, limits QueueLimits) error
	// Pending lists the thread's pending runs, oldest first (every
	// thread's for "").
	Pending(ctx context.Context, thread string) ([]QueuedRun, error)
	// PendingThreads reports which of threads have pending runs.
	PendingThreads(ctx context.Context, threads []string) (map[string]bool, error)
	// PendingRun finds a pending run by its id.
	PendingRun(ctx context.Context, runID string) (QueuedRun, bool, error)
	// StillPending reports which of runIDs are pending still.
	StillPending(ctx context.Context, runIDs []string) (map[string]bool, error)
	// Unqueue takes pending runs out of their thread's queue (run runID,
	// or every one of the thread's when runID is "") and returns those it
	// took: a run that started meanwhile is not among them.
	Unqueue(ctx context.Context, thread, runID string) ([]QueuedRun, error)
	// Hold keeps the thread's pending runs from starting until release
	// is called, or for at most d should this process die (or stall)
	// first: then release reports ErrHoldLost.
	Hold(ctx context.Context, thread string, d time.Duration) (release func(context.Context) error, err error)
}

// ErrHoldLost: a hold lapsed before it was released (its process
// stalled past it), so a pending run may have started meanwhile.
var ErrHoldLost = errors.New("runs: the hold on the thread's queued runs lapsed before it was released")

// QueueLimits bounds the pending runs: each holds its request.
type QueueLimits struct {
	PerThread, Total int
}

// ErrQueueFull: a run cannot be enqueued, its thread's queue (or all
// queues together) holds as many as QueueLimits allows.
var ErrQueueFull = errors.New("too many runs are queued")

// ErrLeaseLost: another process took the thread's run over (this one
// paused or lost the database for longer than the lease); the run's
// writes are refused from then on and it must stop without writing.
var ErrLeaseLost = errors.New("lease lost: another process took the thread over")

// Lease is a process's claim on a thread for one run.
type Lease struct {
	Thread, RunID string
	// Fence is the fencing token: it grows with each claim and takeover.
	Fence int64
	// Attempt is 1 for the claim that started the run, more for
	// takeovers.
	Attempt int
}

// QueuedRun is a run as the queue keeps it: everything another process
// needs to start or continue it.
type QueuedRun struct {
	Graph  string  `json:"graph"`
	Thread string  `json:"thread"`
	RunID  string  `json:"run_id"`
	Kind   RunKind `json:"kind"`
	// Input is the run's input encoded (encodeInput).
	Input        *queuedInput   `json:"input,omitempty"`
	Options      StartOptions   `json:"options"`
	CheckpointID string         `json:"checkpoint_id,omitempty"`
	Origin       string         `json:"origin,omitempty"`
	Answers      []Answer       `json:"answers,omitempty"`
	Metadata     map[string]any `json:"metadata,omitempty"`
	Meta         *RunMeta       `json:"meta,omitempty"`
	Started      time.Time      `json:"started"`
	// From is the checkpoint the run started from ("" for a new thread).
	From string `json:"from,omitempty"`
	// ResumeOf is the interrupted run a resume answers.
	ResumeOf string `json:"resume_of,omitempty"`
	// Stream is the API run's StreamSpec: its parts are stored (PartStore).
	Stream *queuedStream `json:"stream,omitempty"`
	// Edit marks the claim of a change that is not a run (a state edit,
	// a delete: Manager.beginEdit), which holds the lease while it lasts;
	// a takeover of one only releases it.
	Edit bool `json:"edit,omitempty"`
	// MustExist is the RunRequest's: a run started from the queue does
	// not bring back a thread deleted while it waited.
	MustExist bool `json:"must_exist,omitempty"`
	// NotBefore is when a pending run may start at the earliest
	// (after_seconds); zero: as soon as its turn comes.
	NotBefore time.Time `json:"not_before,omitzero"`
	// Cancel says someone asked for the run to be cancelled (Queue.Cancel)
	// while no process ran it: a takeover ends it as cancelled. Set by
	// the queue, not stored in the request.
	Cancel bool `json:"-"`
}

// record is the run-log record of a run the queue holds, as it stands
// before its process writes one: running.
func (q QueuedRun) record() RunRecord {
	return RunRecord{Thread: q.Thread, RunID: q.RunID, Kind: q.Kind, From: q.From, Origin: q.Origin,
		Started: q.Started, Status: StatusRunning, Answers: q.Answers, Meta: q.Meta}
}

// queuedInput is a run's input in JSON: an update (a map of state
// keys), or a Command.
type queuedInput struct {
	Update  map[string]any `json:"update,omitempty"`
	Command bool           `json:"command,omitempty"`
	Goto    []queuedGoto   `json:"goto,omitempty"`
	Resume  any            `json:"resume,omitempty"`
}

type queuedGoto struct {
	Node string `json:"node"`
	Send bool   `json:"send,omitempty"`
	Arg  any    `json:"arg,omitempty"`
}

// encodeInput turns a run's input into its queued form.
func encodeInput(in any) (*queuedInput, error) {
	switch v := in.(type) {
	case nil:
		return nil, nil
	case engine.Update:
		return &queuedInput{Update: v}, nil
	case engine.Command:
		q := &queuedInput{Command: true, Resume: v.Resume}
		switch u := v.Update.(type) {
		case nil:
		case engine.Update:
			q.Update = u
		default:
			return nil, fmt.Errorf("runs: a queued command's update must be a map of state keys, not %T", v.Update)
		}
		for _, g := range v.Goto {
			switch x := g.(type) {
			case string:
				q.Goto = append(q.Goto, queuedGoto{Node: x})
			case engine.Send:
				q.Goto = append(q.Goto, queuedGoto{Node: x.Node, Send: true, Arg: x.Arg})
			default:
				return nil, fmt.Errorf("runs: a queued command's goto holds %T: only node names and Sends", g)
			}
		}
		return q, nil
	default:
		return nil, fmt.Errorf("runs: a queued run's input is %T: only an update, a command or none", in)
	}
}

// decode is the input encodeInput encoded.
func (q *queuedInput) decode() any {
	if q == nil {
		return nil
	}
	if !q.Command {
		return engine.Update(q.Update)
	}
	c := engine.Command{Resume: q.Resume}
	if q.Update != nil {
		c.Update = engine.Update(q.Update)
	}
	for _, g := range q.Goto {
		if g.Send {
			c.Goto = append(c.Goto, engine.Send{Node: g.Node, Arg: g.Arg})
		} else {
			c.Goto = append(c.Goto, g.Node)
		}
	}
	return c
}

// EncodeQueuedRun and DecodeQueuedRun are the queue's storage format.
func EncodeQueuedRun(r QueuedRun) ([]byte, error) { return json.Marshal(r) }

// DecodeQueuedRun reads what EncodeQueuedRun wrote.
func DecodeQueuedRun(b []byte) (QueuedRun, error) {
	var r QueuedRun
	if err := json.Unmarshal(b, &r); err != nil {
		return QueuedRun{}, fmt.Errorf("runs: read a queued run: %w", err)
	}
	return r, nil
}

// WithQueue makes the Manager's runs durable and shared through q (see
// Queue). Without it runs live in this process, as they always did: a
// restart marks a running thread stopped (see NewManager).
func WithQueue(q Queue) ManagerOption {
	return func(m *Manager) { m.queue = q }
}

// EventLog shares threads' events between processes (WithEventLog): the
// process executing a run writes the events its tabs see, under the
// run's lease; another process with tabs open on the thread follows them
// and shows them live (runs/riverq.EventLog keeps them in Postgres and
// wakes followers with NOTIFY).
type EventLog interface {
	// Writer writes one run's events, in order, under its lease's fence;
	// Add never waits on the database. Close flushes what was added.
	Writer(thread, runID string, fence int64) EventWriter
	// Recent returns the events of the run the thread's log ends with
	// (the run going on, or the last one), at most limit of the latest,
	// and the seq of the log's last event (0 for none).
	Recent(ctx context.Context, thread string, limit int) (runID string, bodies [][]byte, last int64, err error)
	// Follow calls fn with every event of the thread written after seq
	// after, in order, until stop is called.
	Follow(thread string, after int64, fn func(runID string, body []byte)) (stop func())
}

// EventWriter is a run's writer to an EventLog.
type EventWriter interface {
	Add(body []byte)
	Close() error
}

// WithEventLog shares the threads' events with other processes through
// l (with WithQueue): a tab open on one process sees, live and in order,
// the events of a run another process executes.
func WithEventLog(l EventLog) ManagerOption {
	return func(m *Manager) { m.events = l }
}
