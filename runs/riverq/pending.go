package riverq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/superstep-dev/superstep/runs"
)

// Pending runs (the Agent Server API's enqueued and delayed runs) are
// rows of studio_run_queue in state 'pending', in their thread's order
// (seq). Only the head of a free thread's queue ever has a job to start
// it (StartArgs): the finish of the thread's active run makes it, in the
// same transaction (Finish), as do an enqueue onto a free thread, the end
// of a hold and the reaper when a head's job was lost (its worker died
// between fetching it and starting the run). The job's worker starts the
// run under a new lease, in one transaction that checks it is still the
// head of a free thread.

// StartArgs is the river job that starts a pending run.
type StartArgs struct {
	Thread string `json:"thread"`
	RunID  string `json:"run_id"`
}

// Kind names the job kind in river_job.
func (StartArgs) Kind() string { return "superstep.start" }

// InsertOpts puts starts on the runs' queue: a started run goes on in
// its start job's worker, as a taken-over run does in its job's.
func (StartArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueName, MaxAttempts: 1000}
}

// Enqueue implements runs.Queue.
func (q *Queue) Enqueue(ctx context.Context, run runs.QueuedRun, limits runs.QueueLimits) error {
	body, err := runs.EncodeQueuedRun(run)
	if err != nil {
		return err
	}
	var notBefore *time.Time
	if !run.NotBefore.IsZero() {
		notBefore = &run.NotBefore
	}
	err = pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
		// The lease row, locked (enqueues, claims, starts and finishes
		// of the thread serialise here), counts one more pending run.
		var active *string
		var ofThread int
		if err := tx.QueryRow(ctx, `INSERT INTO studio_thread_leases AS l (thread_id, pending) VALUES ($1, 1)
			ON CONFLICT (thread_id) DO UPDATE SET pending = l.pending + 1
			RETURNING l.run_id, l.pending - 1`, run.Thread).Scan(&active, &ofThread); err != nil {
			return err
		}
		// Read after the lock, so as of now.
		var total int
		var held bool
		if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM studio_run_queue WHERE state = 'pending'), `+sqlHeld,
			run.Thread).Scan(&total, &held); err != nil {
			return err
		}
		if limits.PerThread > 0 && ofThread >= limits.PerThread || limits.Total > 0 && total >= limits.Total {
			return fmt.Errorf("%w (at most %d per thread, %d in all); wait for some to finish", runs.ErrQueueFull, limits.PerThread, limits.Total)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO studio_run_queue (run_id, thread_id, state, request, not_before) VALUES ($1, $2, 'pending', $3, $4)`,
			run.RunID, run.Thread, body, notBefore); err != nil {
			return err
		}
		if active == nil && !held && ofThread == 0 {
			// The thread went free since the caller found it busy (or
			// the run is delayed): nothing else would start it.
			return q.dispatchHead(ctx, tx, run.Thread)
		}
		return nil
	})
	if isTaken(err) {
		return fmt.Errorf("%w: run id %q is taken", runs.ErrInvalidInput, run.RunID)
	}
	return err
}

// sqlHeld says whether thread $1's pending runs are held (Hold).
const sqlHeld = `EXISTS (SELECT 1 FROM studio_queue_holds WHERE thread_id = $1 AND until > now())`

// dispatchHead gives the first pending run of a free thread a job that
// starts it (when its not_before comes), in place of any it had. tx
// holds the thread's lease row.
func (q *Queue) dispatchHead(ctx context.Context, tx pgx.Tx, thread string) error {
	var runID string
	var notBefore *time.Time
	var job *int64
	err := tx.QueryRow(ctx, `SELECT run_id, not_before, job_id FROM studio_run_queue
		WHERE thread_id = $1 AND state = 'pending' AND NOT `+sqlHeld+`
		ORDER BY seq LIMIT 1`, thread).Scan(&runID, &notBefore, &job)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // none, or held: the hold's end dispatches
	}
	if err != nil {
		return err
	}
	if job != nil {
		if _, err := q.client.JobDeleteTx(ctx, tx, *job); err != nil && !errors.Is(err, rivertype.ErrJobRunning) && !errors.Is(err, river.ErrNotFound) {
			return fmt.Errorf("delete the pending run's old job: %w", err)
		}
	}
	var opts *river.InsertOpts
	if notBefore != nil && time.Until(*notBefore) > 0 {
		opts = &river.InsertOpts{ScheduledAt: *notBefore}
	}
	res, err := q.client.InsertTx(ctx, tx, StartArgs{Thread: thread, RunID: runID}, opts)
	if err != nil {
		return fmt.Errorf("insert the job that starts run %s: %w", runID, err)
	}
	_, err = tx.Exec(ctx, `UPDATE studio_run_queue SET job_id = $2, dispatched_at = greatest(now(), not_before) WHERE run_id = $1`,
		runID, res.Job.ID)
	return err
}

// reapPending gives a new job to the head of every free thread's queue
// whose job was made (or came due) a lease's length ago and has not
// started it: the worker that fetched it died. A job still waiting for a
// worker (they are all busy) is left where it is in river's queue. Each
// thread is handled as every other path does, its lease row locked first
// and then its queue, and looked at again under that lock: one reaper
// wins it.
func (q *Queue) reapPending(ctx context.Context) (int, error) {
	rows, err := q.pool.Query(ctx, `SELECT r.thread_id FROM studio_run_queue r JOIN studio_thread_leases l USING (thread_id)
		WHERE r.state = 'pending' AND l.run_id IS NULL
		  AND r.seq = (SELECT min(seq) FROM studio_run_queue WHERE thread_id = r.thread_id AND state = 'pending')
		  AND (r.dispatched_at IS NULL OR r.dispatched_at < now() - $1::interval)
		  AND (r.not_before IS NULL OR r.not_before <= now())`, q.cfg.LeaseTTL)
	if err != nil {
		return 0, err
	}
	threads, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	n := 0
	for _, th := range threads {
		err := pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
			// A thread locked now is being started, enqueued onto or
			// finished: it is looked at again next round.
			var free bool
			if err := tx.QueryRow(ctx, `SELECT run_id IS NULL FROM studio_thread_leases WHERE thread_id = $1 FOR UPDATE SKIP LOCKED`, th).Scan(&free); err != nil || !free {
				if errors.Is(err, pgx.ErrNoRows) {
					return nil
				}
				return err
			}
			var head string
			var job *int64
			var waiting bool
			err := tx.QueryRow(ctx, `SELECT h.run_id, h.job_id,
				  EXISTS (SELECT 1 FROM river_job j WHERE j.id = h.job_id AND j.state IN ('available', 'scheduled', 'retryable'))
				FROM (SELECT run_id, job_id, dispatched_at, not_before FROM studio_run_queue
				      WHERE thread_id = $1 AND state = 'pending' ORDER BY seq LIMIT 1) h
				WHERE (h.dispatched_at IS NULL OR h.dispatched_at < now() - $2::interval)
				  AND (h.not_before IS NULL OR h.not_before <= now()) AND NOT `+sqlHeld,
				th, q.cfg.LeaseTTL).Scan(&head, &job, &waiting)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			if waiting {
				// Busy workers, not a lost job: it keeps its place.
				_, err := tx.Exec(ctx, `UPDATE studio_run_queue SET dispatched_at = now() WHERE run_id = $1`, head)
				return err
			}
			n++
			return q.dispatchHead(ctx, tx, th)
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Pending implements runs.Queue.
func (q *Queue) Pending(ctx context.Context, thread string) ([]runs.QueuedRun, error) {
	rows, err := q.pool.Query(ctx, `SELECT request FROM studio_run_queue WHERE ($1 = '' OR thread_id = $1) AND state = 'pending' ORDER BY seq`, thread)
	if err != nil {
		return nil, err
	}
	return decodeRequests(rows)
}

// PendingThreads implements runs.Queue: the counts their lease rows
// keep, read in one query.
func (q *Queue) PendingThreads(ctx context.Context, threads []string) (map[string]bool, error) {
	return q.idSet(ctx, `SELECT thread_id FROM studio_thread_leases WHERE thread_id = ANY($1) AND pending > 0`, threads)
}

// idSet runs a query of one text column over ids and returns the set of
// what it found.
func (q *Queue) idSet(ctx context.Context, sql string, ids []string) (map[string]bool, error) {
	rows, err := q.pool.Query(ctx, sql, ids)
	if err != nil {
		return nil, err
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(found))
	for _, id := range found {
		out[id] = true
	}
	return out, nil
}

// PendingRun implements runs.Queue.
func (q *Queue) PendingRun(ctx context.Context, runID string) (runs.QueuedRun, bool, error) {
	rows, err := q.pool.Query(ctx, `SELECT request FROM studio_run_queue WHERE run_id = $1 AND state = 'pending'`, runID)
	if err != nil {
		return runs.QueuedRun{}, false, err
	}
	out, err := decodeRequests(rows)
	if err != nil || len(out) == 0 {
		return runs.QueuedRun{}, false, err
	}
	return out[0], true, nil
}

// StillPending implements runs.Queue.
func (q *Queue) StillPending(ctx context.Context, runIDs []string) (map[string]bool, error) {
	return q.idSet(ctx, `SELECT run_id FROM studio_run_queue WHERE run_id = ANY($1) AND state = 'pending'`, runIDs)
}

// Unqueue implements runs.Queue.
func (q *Queue) Unqueue(ctx context.Context, thread, runID string) ([]runs.QueuedRun, error) {
	var out []runs.QueuedRun
	err := pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
		out = nil
		var active *string
		err := tx.QueryRow(ctx, `SELECT run_id FROM studio_thread_leases WHERE thread_id = $1 FOR UPDATE`, thread).Scan(&active)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // never had a run queued
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `DELETE FROM studio_run_queue WHERE thread_id = $1 AND state = 'pending' AND ($2 = '' OR run_id = $2)
			RETURNING request, job_id`, thread, runID)
		if err != nil {
			return err
		}
		var jobs []int64
		for rows.Next() {
			var body []byte
			var job *int64
			if err := rows.Scan(&body, &job); err != nil {
				rows.Close()
				return err
			}
			r, err := runs.DecodeQueuedRun(body)
			if err != nil {
				rows.Close()
				return err
			}
			out = append(out, r)
			if job != nil {
				jobs = append(jobs, *job)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(out) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE studio_thread_leases SET pending = pending - $2 WHERE thread_id = $1`,
				thread, len(out)); err != nil {
				return err
			}
		}
		for _, j := range jobs {
			if _, err := q.client.JobDeleteTx(ctx, tx, j); err != nil && !errors.Is(err, rivertype.ErrJobRunning) && !errors.Is(err, river.ErrNotFound) {
				return fmt.Errorf("delete a pending run's job: %w", err)
			}
		}
		if len(jobs) > 0 && active == nil {
			// The head went: the next one is the head now.
			return q.dispatchHead(ctx, tx, thread)
		}
		return nil
	})
	return out, err
}

// Hold implements runs.Queue. The hold is renewed every third of d until
// released; should this process die, it lapses d after its last renewal.
func (q *Queue) Hold(ctx context.Context, thread string, d time.Duration) (func(context.Context) error, error) {
	id := uuid.NewString()
	err := pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
		// Taken under the lease row's lock, as the start of a pending run
		// checks holds under it.
		if _, err := tx.Exec(ctx, `INSERT INTO studio_thread_leases AS l (thread_id) VALUES ($1)
			ON CONFLICT (thread_id) DO UPDATE SET thread_id = l.thread_id`, thread); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO studio_queue_holds (thread_id, hold_id, until) VALUES ($1, $2, now() + $3::interval)`, thread, id, d)
		return err
	})
	if err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	renewed := make(chan struct{})
	var lost atomic.Bool
	go func() {
		defer close(renewed)
		tick := time.NewTicker(d / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			// Renewed only while it holds: one that lapsed (this process
			// stalled past it) may have let a run start, and must not
			// come back.
			rctx, cancel := context.WithTimeout(context.Background(), d/3)
			tag, err := q.pool.Exec(rctx, `UPDATE studio_queue_holds SET until = now() + $3::interval
				WHERE thread_id = $1 AND hold_id = $2 AND until > now()`, thread, id, d)
			cancel()
			if err == nil && tag.RowsAffected() == 0 {
				lost.Store(true)
				return
			}
			if err != nil && q.cfg.OnError != nil {
				q.cfg.OnError(fmt.Errorf("riverq: renew the hold on thread %q: %w", thread, err))
			}
		}
	}()
	var once sync.Once
	return func(ctx context.Context) error {
		once.Do(func() {
			close(stop)
			<-renewed
		})
		err := pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
			var active *string
			if err := tx.QueryRow(ctx, `SELECT run_id FROM studio_thread_leases WHERE thread_id = $1 FOR UPDATE`, thread).Scan(&active); err != nil {
				return err
			}
			// Lapsed holds of processes that died go too.
			if _, err := tx.Exec(ctx, `DELETE FROM studio_queue_holds WHERE thread_id = $1 AND (hold_id = $2 OR until <= now())`, thread, id); err != nil {
				return err
			}
			if active == nil {
				return q.dispatchHead(ctx, tx, thread) // unless another hold remains
			}
			return nil
		})
		if err == nil && lost.Load() {
			return runs.ErrHoldLost
		}
		return err
	}, nil
}

// startWorker starts a pending run whose turn came.
type startWorker struct {
	river.WorkerDefaults[StartArgs]
	q *Queue
}

// Timeout: the run goes on in this worker, as long as it takes.
func (*startWorker) Timeout(*river.Job[StartArgs]) time.Duration { return -1 }

func (w *startWorker) Work(ctx context.Context, job *river.Job[StartArgs]) error {
	q := w.q
	var (
		l     runs.Lease
		body  []byte
		wait  time.Duration
		start bool
	)
	err := pgx.BeginFunc(ctx, q.pool, func(tx pgx.Tx) error {
		var active *string
		err := tx.QueryRow(ctx, `SELECT run_id FROM studio_thread_leases WHERE thread_id = $1 FOR UPDATE`,
			job.Args.Thread).Scan(&active)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil || active != nil {
			// Busy: that run's end dispatches the head again.
			return err
		}
		// Read after the lock, so as of now. Held, the hold's end
		// dispatches the head again.
		var head string
		var notBefore *time.Time
		var now time.Time
		err = tx.QueryRow(ctx, `SELECT run_id, not_before, now() FROM studio_run_queue
			WHERE thread_id = $1 AND state = 'pending' AND NOT `+sqlHeld+` ORDER BY seq LIMIT 1`,
			job.Args.Thread).Scan(&head, &notBefore, &now)
		if errors.Is(err, pgx.ErrNoRows) || err == nil && head != job.Args.RunID {
			return nil // a stale job: cancelled, or started by another
		}
		if err != nil {
			return err
		}
		if notBefore != nil && notBefore.After(now) {
			wait = notBefore.Sub(now)
			return nil
		}
		if err := tx.QueryRow(ctx, `UPDATE studio_run_queue SET state = 'active', attempts = 1, job_id = NULL WHERE run_id = $1 RETURNING request`,
			head).Scan(&body); err != nil {
			return err
		}
		l = runs.Lease{Thread: job.Args.Thread, RunID: head, Attempt: 1}
		start = true
		return tx.QueryRow(ctx, `UPDATE studio_thread_leases SET run_id = $2, job_id = $3, holder = $4, fence = fence + 1,
			expires_at = now() + $5::interval, redispatch_at = NULL, pending = pending - 1 WHERE thread_id = $1 RETURNING fence`,
			job.Args.Thread, head, job.ID, q.cfg.ID, q.cfg.LeaseTTL).Scan(&l.Fence)
	})
	switch {
	case err != nil:
		return fmt.Errorf("riverq: start pending run %s of thread %q: %w", job.Args.RunID, job.Args.Thread, err)
	case wait > 0:
		return river.JobSnooze(wait)
	case !start:
		return nil
	}
	run, err := runs.DecodeQueuedRun(body)
	if err == nil {
		err = q.exec.StartQueued(ctx, run, l)
	}
	if err != nil {
		return q.couldNotRun(l, "start pending", err)
	}
	return nil
}

// decodeRequests reads rows of one request column.
func decodeRequests(rows pgx.Rows) ([]runs.QueuedRun, error) {
	bodies, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, err
	}
	out := make([]runs.QueuedRun, 0, len(bodies))
	for _, b := range bodies {
		r, err := runs.DecodeQueuedRun(b)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
