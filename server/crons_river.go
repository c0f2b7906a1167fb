package server

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
)

// CronQueue is the river queue of the crons' jobs.
const CronQueue = "superstep_crons"

// CronJobs fires the API's crons from river, once across every replica
// on one database. The elected leader enqueues a tick every second; the
// tick, on whichever replica works it, takes the due crons (their
// next_run_date moved on) and inserts one fire job per due time in the
// same transaction, unique by cron and time. The fire job starts the run
// through the API (fireCron), which finds a run it already started when
// the job is retried.
//
// Give its AddWorkers, PeriodicJobs and Queues to riverq.Config, and the
// CronJobs to server.Config (with a pgthreads.Crons on the same pool);
// the river client may start before the API exists: fire jobs wait for
// it.
type CronJobs struct {
	pool   *pgxpool.Pool
	insert *river.Client[pgx.Tx]
	api    atomic.Pointer[API]
}

// NewCronJobs makes the crons' river jobs on pool, whose schema has the
// migrations applied.
func NewCronJobs(pool *pgxpool.Pool) (*CronJobs, error) {
	// An insert-only client: the tick inserts fire jobs with it, in its
	// own transaction, wherever it runs.
	insert, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		return nil, fmt.Errorf("server: crons' river client: %w", err)
	}
	return &CronJobs{pool: pool, insert: insert}, nil
}

// bind makes a the API the fire jobs start runs through.
func (c *CronJobs) bind(a *API) { c.api.Store(a) }

// AddWorkers registers the tick's and the fire jobs' workers.
func (c *CronJobs) AddWorkers(w *river.Workers) error {
	if err := river.AddWorkerSafely(w, &cronTickWorker{c: c}); err != nil {
		return err
	}
	return river.AddWorkerSafely(w, &cronFireWorker{c: c})
}

// PeriodicJobs is the tick, every second.
func (c *CronJobs) PeriodicJobs() []*river.PeriodicJob {
	return []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(CronTick),
		func() (river.JobArgs, *river.InsertOpts) { return CronTickArgs{}, nil },
		&river.PeriodicJobOpts{ID: "superstep.cron_tick", RunOnStart: true})}
}

// Queues is the crons' queue.
func (c *CronJobs) Queues() map[string]river.QueueConfig {
	return map[string]river.QueueConfig{CronQueue: {MaxWorkers: 8}}
}

// CronTickArgs is the periodic job that looks for due crons.
type CronTickArgs struct{}

// Kind names the job kind in river_job.
func (CronTickArgs) Kind() string { return "superstep.cron_tick" }

// InsertOpts: a tick that failed is not retried, the next one comes in
// a second.
func (CronTickArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: CronQueue, MaxAttempts: 1}
}

// CronFireArgs is one due time of one cron.
type CronFireArgs struct {
	CronID string    `json:"cron_id"`
	At     time.Time `json:"at"`
}

// Kind names the job kind in river_job.
func (CronFireArgs) Kind() string { return "superstep.cron_fire" }

// InsertOpts: one job per cron and due time, for as long as river keeps
// finished jobs.
func (CronFireArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: CronQueue, MaxAttempts: 5, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// Tick takes the crons due at now and inserts their fire jobs, in one
// transaction, and says how many it took. Ticks may run at once in
// several processes: the due rows are locked, so each due time is taken
// by one of them.
func (c *CronJobs) Tick(ctx context.Context, now time.Time) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		due, err := pgthreads.DueTx(ctx, tx, now)
		if err != nil {
			return err
		}
		for _, f := range due {
			if _, err := c.insert.InsertTx(ctx, tx, CronFireArgs{CronID: f.Cron.ID, At: f.At.UTC()}, nil); err != nil {
				return fmt.Errorf("insert the fire job of cron %s: %w", f.Cron.ID, err)
			}
		}
		n = len(due)
		return nil
	})
	return n, err
}

type cronTickWorker struct {
	river.WorkerDefaults[CronTickArgs]
	c *CronJobs
}

func (*cronTickWorker) Timeout(*river.Job[CronTickArgs]) time.Duration { return 30 * time.Second }

func (w *cronTickWorker) Work(ctx context.Context, _ *river.Job[CronTickArgs]) error {
	a := w.c.api.Load()
	if a == nil {
		return nil // no API here yet: the next tick
	}
	if _, err := w.c.Tick(ctx, a.now()); err != nil {
		return err
	}
	// A tick a second would leave 86,400 finished jobs a day in
	// river_job until river's cleaner comes for them; they mean nothing
	// once done (fire jobs stay: they keep each firing unique).
	_, err := w.c.insert.JobDeleteMany(ctx, river.NewJobDeleteManyParams().Kinds(CronTickArgs{}.Kind()).
		States(rivertype.JobStateCompleted).First(1000))
	return err
}

type cronFireWorker struct {
	river.WorkerDefaults[CronFireArgs]
	c *CronJobs
}

func (*cronFireWorker) Timeout(*river.Job[CronFireArgs]) time.Duration { return time.Minute }

func (w *cronFireWorker) Work(ctx context.Context, job *river.Job[CronFireArgs]) error {
	a := w.c.api.Load()
	if a == nil || a.closed() {
		return river.JobSnooze(time.Second) // any process with an API takes it
	}
	cr, err := a.crons.GetCron(ctx, job.Args.CronID)
	if errors.Is(err, runs.ErrUnknownCron) {
		return nil // deleted since it came due
	}
	if err != nil {
		return err
	}
	if !cr.Enabled {
		return nil // disabled since it came due
	}
	return a.fireCron(ctx, runs.CronFiring{Cron: cr, At: job.Args.At})
}

// closed says whether Close was called.
func (a *API) closed() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}
