// Package riverq keeps the Studio's runs in Postgres on river
// (github.com/riverqueue/river), so that a run survives the process that
// started it and several Studio processes share one database's threads.
//
// A run normally executes in the process that received it. Its claim is
// one transaction: the thread's lease row (studio_thread_leases) is
// locked; a thread with an active run is refused (ErrThreadBusy); the
// run's request goes into studio_run_queue; the lease is taken for this
// process with a new fencing token; and a river job is inserted, parked a
// day ahead: the run's recovery ticket. The process renews the lease
// while the run goes on; its end releases the lease and deletes the
// ticket.
//
// When a process dies (or pauses past its lease), a reaper that every
// process runs finds the expired lease, raises its fence, clears its
// holder and makes the ticket available; a river worker in any process
// then takes the lease and continues the run from its last checkpoint
// (runs.Manager.Takeover). Every checkpoint, registry and run-log write a
// run makes carries its fence and is refused once the fence moved on
// (checkpoints.WithFence), so the old holder cannot write after the
// takeover.
//
// Why not river's own leases: river rescues a stuck job only after
// RescueStuckJobsAfter with no heartbeat, from the leader alone, every 30
// seconds; and its unique jobs cannot say "one running run per thread"
// without also refusing queued ones. River gives the transactional
// insert, dispatch to any process's workers, retries and shutdown; the
// lease and fence are ours (docs/durable-runs-plan.md).
package riverq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/superstep-dev/superstep/internal/logfilter"
	"github.com/superstep-dev/superstep/runs"
)

// Defaults for Config.
const (
	DefaultLeaseTTL  = 10 * time.Second
	DefaultReapEvery = 500 * time.Millisecond
	DefaultWorkers   = 32
	// DefaultPollEvery is how often river looks for jobs come due
	// without being told of them (river's insert notifications are
	// throttled per queue, and a delayed job is never announced): a
	// queued run starts at most this long after its turn came.
	DefaultPollEvery = 100 * time.Millisecond
	// parkFor is how far ahead a run's recovery ticket is scheduled:
	// past it, a ticket whose run still lives is snoozed again.
	parkFor = 24 * time.Hour
)

// Config configures a Queue.
type Config struct {
	// ID names this process in the leases it holds; unique per process.
	ID string
	// LeaseTTL is how long a lease lasts unrenewed: a process silent
	// that long loses its runs to others. The Manager renews far more
	// often (runs.WithRenewEvery).
	LeaseTTL time.Duration
	// ReapEvery is how often this process looks for expired leases.
	ReapEvery time.Duration
	// Workers caps the runs this process takes over (or starts from
	// the queue) at once.
	Workers int
	// PollEvery is how often this process looks for jobs come due
	// (DefaultPollEvery).
	PollEvery time.Duration
	// Logger receives river's warnings and errors (nil: discarded).
	Logger *slog.Logger
	// OnError receives the reaper's errors (nil: dropped).
	OnError func(error)
	// AddWorkers, PeriodicJobs and Queues let the caller run jobs of its
	// own on this process's river client (the API's crons): AddWorkers
	// registers their workers, the elected leader alone enqueues the
	// PeriodicJobs, and Queues are the river queues they go on.
	AddWorkers   func(*river.Workers) error
	PeriodicJobs []*river.PeriodicJob
	Queues       map[string]river.QueueConfig
}

// Executor runs a run taken over, or a pending run whose turn came:
// runs.Manager.
type Executor interface {
	Takeover(ctx context.Context, run runs.QueuedRun, l runs.Lease) error
	StartQueued(ctx context.Context, run runs.QueuedRun, l runs.Lease) error
}

// Queue is a runs.Queue on Postgres and river.
type Queue struct {
	pool   *pgxpool.Pool
	cfg    Config
	client *river.Client[pgx.Tx]
	exec   Executor

	mu     sync.Mutex
	stop   context.CancelFunc
	reaper sync.WaitGroup
}

var _ runs.Queue = (*Queue)(nil)

// RunArgs is a run's river job: the run is in studio_run_queue.
type RunArgs struct {
	Thread string `json:"thread"`
	RunID  string `json:"run_id"`
}

// Kind names the job kind in river_job.
func (RunArgs) Kind() string { return "superstep.run" }

// InsertOpts puts runs on their own queue. Hand-backs and rescues of
// ghost jobs spend attempts, so there are many.
func (RunArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueName, MaxAttempts: 1000}
}

// QueueName is the river queue runs are on.
const QueueName = "superstep_runs"

// New makes a Queue on pool, whose schema has the migrations applied
// (package migrations, which includes river's). Start it once the
// Manager exists.
func New(pool *pgxpool.Pool, cfg Config) (*Queue, error) {
	if cfg.ID == "" {
		return nil, errors.New("riverq: Config.ID must name this process")
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.ReapEvery <= 0 {
		cfg.ReapEvery = DefaultReapEvery
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = DefaultPollEvery
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg.Logger = slog.New(logfilter.Warnings(cfg.Logger.Handler()))
	q := &Queue{pool: pool, cfg: cfg}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &runWorker{q: q}); err != nil {
		return nil, fmt.Errorf("riverq: %w", err)
	}
	if err := river.AddWorkerSafely(workers, &startWorker{q: q}); err != nil {
		return nil, fmt.Errorf("riverq: %w", err)
	}
	if cfg.AddWorkers != nil {
		if err := cfg.AddWorkers(workers); err != nil {
			return nil, fmt.Errorf("riverq: add the caller's workers: %w", err)
		}
	}
	queues := map[string]river.QueueConfig{QueueName: {MaxWorkers: cfg.Workers}}
	for name, qc := range cfg.Queues {
		if name == QueueName {
			return nil, fmt.Errorf("riverq: queue %q is the runs' own", name)
		}
		queues[name] = qc
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		ID:                cfg.ID,
		Queues:            queues,
		Workers:           workers,
		JobTimeout:        -1, // a run takes as long as it takes
		FetchCooldown:     min(cfg.PollEvery, river.FetchCooldownDefault),
		FetchPollInterval: cfg.PollEvery,
		// River's rescuer passes over jobs without a timeout (runs and
		// starts: our reaper hands their runs on), and retries the others
		// (the caller's: a cron's fire job) this long after their process
		// died working them: a firing is late by minutes, not an hour.
		RescueStuckJobsAfter: 2 * time.Minute,
		Logger:               cfg.Logger,

		PeriodicJobs: cfg.PeriodicJobs,
	})
	if err != nil {
		return nil, fmt.Errorf("riverq: make the river client: %w", err)
	}
	q.client = client
	return q, nil
}

// Start starts taking over runs for exec and reaping expired leases.
func (q *Queue) Start(ctx context.Context, exec Executor) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stop != nil {
		return errors.New("riverq: started twice")
	}
	q.exec = exec
	if err := q.client.Start(ctx); err != nil {
		return fmt.Errorf("riverq: start river: %w", err)
	}
	rctx, stop := context.WithCancel(context.Background())
	q.stop = stop
	q.reaper.Add(1)
	go q.reap(rctx)
	return nil
}

// Stop stops taking over runs and reaping; runs this process is taking
// over get until ctx ends to finish (the Manager hands them back when it
// closes).
func (q *Queue) Stop(ctx context.Context) error {
	q.mu.Lock()
	stop := q.stop
	q.mu.Unlock()
	if stop == nil {
		return nil
	}
	stop()
	q.reaper.Wait()
	return q.client.Stop(ctx)
}

// Stopper is what Shutdown stops: runs.Manager.
type Stopper interface {
	// Drain refuses new runs and waits for the running ones to end, or
	// for ctx to end.
	Drain(ctx context.Context) error
	// Close ends the runs still going (a Manager with a queue hands them
	// back, for other processes to continue at once).
	Close()
}

// Shutdown stops this process: it stops taking runs over, lets the runs
// it executes finish for up to grace, then closes m, which hands the rest
// back, and waits until river has stopped or ctx ends.
func (q *Queue) Shutdown(ctx context.Context, m Stopper, grace time.Duration) error {
	stopped := make(chan error, 1)
	go func() { stopped <- q.Stop(ctx) }()
	if grace > 0 {
		gctx, cancel := context.WithTimeout(ctx, grace)
		_ = m.Drain(gctx) // what has not ended by then is handed back
		cancel()
	}
	m.Close()
	return <-stopped
}

// Claim implements runs.Queue.
func (q *Queue) Claim(ctx context.Context, run runs.QueuedRun) (runs.Lease, error) {
	body, err := runs.EncodeQueuedRun(run)
	if err != nil {
		return runs.Lease{}, err
	}
	var l runs.Lease
	err = pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
		// The thread's lease row, made if new, locked either way (one
		// round trip): claims of one thread in any process serialise here.
		// Pending runs make the thread busy too: a new run does not jump
		// their queue (a change that is not a run may go ahead of them).
		var active *string
		var pending bool
		if err := tx.QueryRow(ctx, `INSERT INTO studio_thread_leases AS l (thread_id) VALUES ($1)
			ON CONFLICT (thread_id) DO UPDATE SET thread_id = l.thread_id
			RETURNING l.run_id, l.pending > 0`,
			run.Thread).Scan(&active, &pending); err != nil {
			return err
		}
		if active != nil {
			return fmt.Errorf("%w: run %s is active on thread %q", runs.ErrThreadBusy, *active, run.Thread)
		}
		if pending && !run.Edit {
			return fmt.Errorf("%w: thread %q has runs queued", runs.ErrThreadBusy, run.Thread)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO studio_run_queue (run_id, thread_id, state, request, attempts) VALUES ($1, $2, 'active', $3, 1)`,
			run.RunID, run.Thread, body); err != nil {
			return err
		}
		job, err := q.client.InsertTx(ctx, tx, RunArgs{Thread: run.Thread, RunID: run.RunID}, &river.InsertOpts{ScheduledAt: time.Now().Add(parkFor)})
		if err != nil {
			return fmt.Errorf("insert the run's job: %w", err)
		}
		l = runs.Lease{Thread: run.Thread, RunID: run.RunID, Attempt: 1}
		return tx.QueryRow(ctx, `UPDATE studio_thread_leases SET run_id = $2, job_id = $3, holder = $4, fence = fence + 1,
			expires_at = now() + $5::interval WHERE thread_id = $1 RETURNING fence`,
			run.Thread, run.RunID, job.Job.ID, q.cfg.ID, q.cfg.LeaseTTL).Scan(&l.Fence)
	})
	if isTaken(err) {
		return runs.Lease{}, fmt.Errorf("%w: run id %q is taken", runs.ErrInvalidInput, run.RunID)
	}
	return l, err
}

// isTaken reports whether err is the insert of a run id the queue holds
// already.
func isTaken(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "studio_run_queue_pkey"
}

// Renew implements runs.Queue.
func (q *Queue) Renew(ctx context.Context, l runs.Lease) (bool, error) {
	var cancel *string
	err := q.pool.QueryRow(ctx, `UPDATE studio_thread_leases SET expires_at = now() + $4::interval
		WHERE thread_id = $1 AND fence = $2 AND holder = $3
		RETURNING (SELECT cancel FROM studio_run_queue WHERE run_id = $5)`,
		l.Thread, l.Fence, q.cfg.ID, q.cfg.LeaseTTL, l.RunID).Scan(&cancel)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, runs.ErrLeaseLost
	}
	if err != nil {
		return false, err
	}
	return cancel != nil && *cancel != "", nil
}

// Finish implements runs.Queue.
func (q *Queue) Finish(ctx context.Context, l runs.Lease) error {
	return pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
		// Released only by its holder at its fence; the run's request goes
		// with it, and the job it had is returned (one round trip).
		// Whether runs are pending comes back too (the count on the
		// locked row, so as of now): the first of them is started next.
		var job *int64
		var pending bool
		err := tx.QueryRow(ctx, `WITH old AS (
			  SELECT job_id FROM studio_thread_leases WHERE thread_id = $1 AND fence = $2 AND holder = $3 FOR UPDATE
			), request AS (
			  DELETE FROM studio_run_queue WHERE run_id = $4 AND EXISTS (SELECT 1 FROM old)
			)
			UPDATE studio_thread_leases l SET run_id = NULL, job_id = NULL, holder = '', expires_at = NULL, redispatch_at = NULL
			FROM old WHERE l.thread_id = $1
			RETURNING old.job_id, l.pending > 0`,
			l.Thread, l.Fence, q.cfg.ID, l.RunID).Scan(&job, &pending)
		if errors.Is(err, pgx.ErrNoRows) {
			return runs.ErrLeaseLost
		}
		if err != nil {
			return err
		}
		if job != nil {
			// A takeover's own job is running (its worker returns next)
			// and river completes it then.
			if _, err := q.client.JobDeleteTx(ctx, tx, *job); err != nil && !errors.Is(err, rivertype.ErrJobRunning) && !errors.Is(err, river.ErrNotFound) {
				return fmt.Errorf("delete the run's job: %w", err)
			}
		}
		if pending {
			return q.dispatchHead(ctx, tx, l.Thread)
		}
		return nil
	})
}

// HandBack implements runs.Queue.
func (q *Queue) HandBack(ctx context.Context, l runs.Lease) error { return q.handBack(ctx, l, 0) }

// handBack hands the run back to be taken over after delay.
func (q *Queue) handBack(ctx context.Context, l runs.Lease, delay time.Duration) error {
	return pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
		var job *int64
		err := tx.QueryRow(ctx, `UPDATE studio_thread_leases SET holder = '', expires_at = NULL, fence = fence + 1
			WHERE thread_id = $1 AND fence = $2 AND holder = $3 RETURNING job_id`, l.Thread, l.Fence, q.cfg.ID).Scan(&job)
		if errors.Is(err, pgx.ErrNoRows) {
			return runs.ErrLeaseLost
		}
		if err != nil {
			return err
		}
		return q.dispatch(ctx, tx, l.Thread, l.RunID, job, delay)
	})
}

// dispatch makes a job for the run available to any process's workers,
// in place of its parked ticket. A new job rather than the ticket made
// available: river's insert wakes the workers at once (on commit), where
// a retried job waits for their next poll. A ticket being worked (by the
// process that gave the run up) is left to end on its own.
func (q *Queue) dispatch(ctx context.Context, tx pgx.Tx, thread, runID string, job *int64, delay time.Duration) error {
	if job != nil {
		_, err := q.client.JobDeleteTx(ctx, tx, *job)
		if err != nil && !errors.Is(err, rivertype.ErrJobRunning) && !errors.Is(err, river.ErrNotFound) {
			return fmt.Errorf("delete the run's parked job: %w", err)
		}
	}
	var opts *river.InsertOpts
	if delay > 0 {
		opts = &river.InsertOpts{ScheduledAt: time.Now().Add(delay)}
	}
	res, err := q.client.InsertTx(ctx, tx, RunArgs{Thread: thread, RunID: runID}, opts)
	if err != nil {
		return fmt.Errorf("insert a job for the run: %w", err)
	}
	// A worker takes the lease within moments of the job coming due; one
	// that has not after a lease's length lost the job with its process.
	_, err = tx.Exec(ctx, `UPDATE studio_thread_leases SET job_id = $2, redispatch_at = now() + $3::interval WHERE thread_id = $1`,
		thread, res.Job.ID, delay+q.cfg.LeaseTTL)
	return err
}

// Cancel implements runs.Queue.
func (q *Queue) Cancel(ctx context.Context, thread, runID string) error {
	tag, err := q.pool.Exec(ctx, `UPDATE studio_run_queue SET cancel = 'cancel' WHERE thread_id = $1 AND state = 'active' AND ($2 = '' OR run_id = $2)`,
		thread, runID)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return runs.ErrNotRunning
	}
	return nil
}

// Active implements runs.Queue.
func (q *Queue) Active(ctx context.Context, thread string) (string, bool, error) {
	var run *string
	err := q.pool.QueryRow(ctx, `SELECT run_id FROM studio_thread_leases WHERE thread_id = $1`, thread).Scan(&run)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && run == nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return *run, true, nil
}

// Stats is how the queue stands, for /healthz.
type Stats struct {
	// Replica is this process's id.
	Replica string `json:"replica"`
	// Active counts the runs going on in every process; Waiting those
	// of them waiting for a worker (handed back, or their process died).
	Active  int `json:"active"`
	Waiting int `json:"waiting"`
	// Queued counts the runs waiting for their thread (enqueued or
	// delayed), in every process.
	Queued int `json:"queued"`
	// Executing counts the runs this process holds; Workers is how many
	// runs it takes over at once.
	Executing int `json:"executing"`
	Workers   int `json:"workers"`
}

// Stats reads how the queue stands.
func (q *Queue) Stats(ctx context.Context) (Stats, error) {
	s := Stats{Replica: q.cfg.ID, Workers: q.cfg.Workers}
	err := q.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE holder = ''), count(*) FILTER (WHERE holder = $1),
		(SELECT count(*) FROM studio_run_queue WHERE state = 'pending')
		FROM studio_thread_leases WHERE run_id IS NOT NULL`, q.cfg.ID).Scan(&s.Active, &s.Waiting, &s.Executing, &s.Queued)
	return s, err
}

// Queued implements runs.Queue.
func (q *Queue) Queued(ctx context.Context, thread string) ([]runs.QueuedRun, error) {
	rows, err := q.pool.Query(ctx, `SELECT request FROM studio_run_queue WHERE thread_id = $1 AND state = 'active' ORDER BY seq`, thread)
	if err != nil {
		return nil, err
	}
	out, err := decodeRequests(rows)
	return slices.DeleteFunc(out, func(r runs.QueuedRun) bool { return r.Edit }), err
}

// reap hands the runs of expired leases on, every ReapEvery (jittered,
// so that processes started together do not reap in step).
func (q *Queue) reap(ctx context.Context) {
	defer q.reaper.Done()
	for {
		wait := q.cfg.ReapEvery/2 + rand.N(q.cfg.ReapEvery)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if _, err := q.ReapOnce(ctx); err != nil && ctx.Err() == nil && q.cfg.OnError != nil {
			q.cfg.OnError(fmt.Errorf("riverq: reap expired leases: %w", err))
		}
	}
}

// ReapOnce hands on the runs whose leases expired and reports how many.
// Reapers in several processes may run at once: the update takes each
// row's lock and re-checks the expiry, so one of them wins each lease.
func (q *Queue) ReapOnce(ctx context.Context) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
		// Expired leases, and runs waiting for a worker whose job was
		// lost (see dispatch).
		rows, err := tx.Query(ctx, `UPDATE studio_thread_leases SET holder = '', expires_at = NULL,
			fence = fence + CASE WHEN holder <> '' THEN 1 ELSE 0 END
			WHERE (holder <> '' AND expires_at < now())
			   OR (holder = '' AND run_id IS NOT NULL AND (redispatch_at < now() OR redispatch_at IS NULL))
			RETURNING thread_id, run_id, job_id`)
		if err != nil {
			return err
		}
		type expired struct {
			thread string
			run    *string
			job    *int64
		}
		var es []expired
		for rows.Next() {
			var e expired
			if err := rows.Scan(&e.thread, &e.run, &e.job); err != nil {
				return err
			}
			es = append(es, e)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, e := range es {
			if e.run == nil {
				continue
			}
			if err := q.dispatch(ctx, tx, e.thread, *e.run, e.job, 0); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	m, err := q.reapPending(ctx)
	return n + m, err
}

// runWorker takes over a run whose job came due.
type runWorker struct {
	river.WorkerDefaults[RunArgs]
	q *Queue
}

// Timeout: a run takes as long as it takes.
func (*runWorker) Timeout(*river.Job[RunArgs]) time.Duration { return -1 }

func (w *runWorker) Work(ctx context.Context, job *river.Job[RunArgs]) error {
	q := w.q
	var (
		l       runs.Lease
		body    []byte
		cancel  string
		snooze  bool
		acquire bool
	)
	err := pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE studio_thread_leases SET holder = $4, fence = fence + 1, expires_at = now() + $5::interval,
			redispatch_at = NULL WHERE thread_id = $1 AND run_id = $2 AND job_id = $3 AND holder = '' RETURNING fence`,
			job.Args.Thread, job.Args.RunID, job.ID, q.cfg.ID, q.cfg.LeaseTTL).Scan(&l.Fence)
		if errors.Is(err, pgx.ErrNoRows) {
			// Either the run's holder lives and its parked ticket came
			// due (snoozed again), or this job is stale: the run ended,
			// or another job carries it now.
			var held bool
			err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM studio_thread_leases
				WHERE thread_id = $1 AND run_id = $2 AND job_id = $3 AND holder <> '')`,
				job.Args.Thread, job.Args.RunID, job.ID).Scan(&held)
			snooze = held
			return err
		}
		if err != nil {
			return err
		}
		acquire = true
		return tx.QueryRow(ctx, `UPDATE studio_run_queue SET attempts = attempts + 1 WHERE run_id = $1 RETURNING request, attempts, cancel`,
			job.Args.RunID).Scan(&body, &l.Attempt, &cancel)
	})
	switch {
	case err != nil:
		return fmt.Errorf("riverq: take over run %s of thread %q: %w", job.Args.RunID, job.Args.Thread, err)
	case snooze:
		return river.JobSnooze(parkFor)
	case !acquire:
		return nil
	}
	l.Thread, l.RunID = job.Args.Thread, job.Args.RunID
	run, err := runs.DecodeQueuedRun(body)
	if err == nil {
		run.Cancel = cancel != ""
		err = q.exec.Takeover(ctx, run, l)
	}
	if err != nil {
		return q.couldNotRun(l, "take over", err)
	}
	return nil
}

// couldNotRun hands back a run this process could not take over or
// start (what, with err saying why: a graph it does not serve, a
// database failure), for another try, later each time (the Manager ends
// it after runs.MaxTakeovers; a start that saved nothing is taken over
// from its input). A new job carries the run then, and the worker's own
// job is done; an error makes river retry it.
func (q *Queue) couldNotRun(l runs.Lease, what string, err error) error {
	hctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if herr := q.handBack(hctx, l, retryAfter(l.Attempt)); herr != nil && !errors.Is(herr, runs.ErrLeaseLost) {
		return errors.Join(err, herr)
	}
	if q.cfg.OnError != nil {
		q.cfg.OnError(fmt.Errorf("riverq: %s run %s of thread %q (attempt %d), handed back: %w", what, l.RunID, l.Thread, l.Attempt, err))
	}
	return nil
}

// retryAfter is how long a run handed back after its attempt-th takeover
// failed waits for the next: 1 s, doubling, at most a minute.
func retryAfter(attempt int) time.Duration {
	return min(time.Second<<min(max(attempt-1, 0), 6), time.Minute)
}
