package pgevents

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/superstep-dev/superstep/internal/pgretry"
)

// WriterOptions tune a Writer; the zero value (or nil) is the default.
type WriterOptions struct {
	// OnError, if set, is called once, from the writer's goroutine, with
	// the error that stopped the writer: errors.Is(err, ErrFenced) when
	// another replica took the run over. Every event added afterwards
	// is dropped.
	OnError func(error)
	// FlushAfter is how long an event waits for others to share its
	// append (default 2 ms).
	FlushAfter time.Duration
	// MaxBatch is how many events make an append at once, without waiting
	// FlushAfter (default 64).
	MaxBatch int
	// Timeout bounds one append, retries included (default 10 s).
	Timeout time.Duration
	// Append, if set, writes a batch instead of Append to studio_events
	// (another Source's table), in one transaction, refusing it with an
	// error wrapping ErrFenced when the fence no longer holds; Landed
	// then says whether a batch whose append's outcome is unknown (the
	// connection broke as it committed) is in the table. Without Landed
	// such a batch stops the writer.
	Append func(ctx context.Context, db Batcher, batch [][]byte) error
	Landed func(ctx context.Context, db Batcher, batch [][]byte) (bool, error)
}

// Writer appends one run's events in order, batching them so that a run
// emitting many events costs one round trip per batch rather than one per
// event. Add never waits on the database.
type Writer struct {
	db     Batcher
	thread string
	run    string
	fence  int64
	opts   WriterOptions

	mu      sync.Mutex
	pending [][]byte
	closing bool
	err     error // the first error; set, it stops the writer
	kick    chan struct{}
	full    chan struct{}
	done    chan struct{}
}

// NewWriter starts a writer of run's events to thread, checking fence on
// every append (0: unfenced). Close must be called to flush and stop it.
func NewWriter(db Batcher, thread, runID string, fence int64, opts *WriterOptions) *Writer {
	w := &Writer{db: db, thread: thread, run: runID, fence: fence,
		kick: make(chan struct{}, 1), full: make(chan struct{}, 1), done: make(chan struct{})}
	if opts != nil {
		w.opts = *opts
	}
	if w.opts.FlushAfter <= 0 {
		w.opts.FlushAfter = 2 * time.Millisecond
	}
	if w.opts.MaxBatch <= 0 {
		w.opts.MaxBatch = 64
	}
	if w.opts.Timeout <= 0 {
		w.opts.Timeout = 10 * time.Second
	}
	go w.loop()
	return w
}

// Add queues body (a JSON document) as the run's next event. It never
// blocks on the database; after the writer has failed, or after Close,
// the event is dropped.
func (w *Writer) Add(body []byte) {
	w.mu.Lock()
	if w.closing || w.err != nil {
		w.mu.Unlock()
		return
	}
	w.pending = append(w.pending, body)
	n := len(w.pending)
	w.mu.Unlock()
	signal(w.kick)
	if n >= w.opts.MaxBatch {
		signal(w.full)
	}
}

// Close appends every event added so far, stops the writer and returns
// the first error it met (wrapping ErrFenced when fenced out), if any.
func (w *Writer) Close() error {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	signal(w.kick)
	signal(w.full)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (w *Writer) loop() {
	defer close(w.done)
	for {
		<-w.kick
		w.mu.Lock()
		n, closing := len(w.pending), w.closing
		w.mu.Unlock()
		if n > 0 && n < w.opts.MaxBatch && !closing {
			// Let the run add more before paying a round trip.
			timer := time.NewTimer(w.opts.FlushAfter)
			select {
			case <-timer.C:
			case <-w.full:
				timer.Stop()
			}
		}
		for {
			w.mu.Lock()
			if w.err != nil {
				w.pending = nil
			}
			batch := w.pending[:min(len(w.pending), w.opts.MaxBatch)]
			w.pending = w.pending[len(batch):]
			closing = w.closing
			w.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			if err := w.append(batch); err != nil {
				w.mu.Lock()
				w.err, w.pending = err, nil
				w.mu.Unlock()
				if w.opts.OnError != nil {
					w.opts.OnError(err)
				}
			}
		}
		if closing {
			return
		}
	}
}

// append writes one batch, riding out a database restart as the
// runtime's own writes do (pgretry): a batch whose append may have
// committed is appended again only once Landed found it missing, so no
// event is written twice, and none is dropped while the database comes
// back within the writer's Timeout.
func (w *Writer) append(batch [][]byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), w.opts.Timeout)
	defer cancel()
	run := func(ctx context.Context) error {
		if w.opts.Append != nil {
			return w.opts.Append(ctx, w.db, batch)
		}
		_, _, err := Append(ctx, w.db, w.thread, w.run, w.fence, batch)
		return err
	}
	landed := w.opts.Landed
	if landed == nil && w.opts.Append == nil {
		landed = w.landed
	}
	if landed == nil {
		// No way to tell: retried only while it cannot have reached
		// Postgres.
		wait := 5 * time.Millisecond
		for {
			err := run(ctx)
			var connect *pgconn.ConnectError
			if err == nil || errors.Is(err, ErrFenced) || !(pgconn.SafeToRetry(err) || errors.As(err, &connect)) {
				return err
			}
			select {
			case <-ctx.Done():
				return err
			case <-time.After(wait):
			}
			wait = min(2*wait, time.Second)
		}
	}
	return pgretry.Do(ctx, w.opts.Timeout, pgretry.Op{Run: run, Landed: func(ctx context.Context) (bool, error) { return landed(ctx, w.db, batch) }})
}

// landed says whether a batch of this run's events is in studio_events:
// its first event is (an event's body carries its time to the
// nanosecond, so no other event of the run has the same).
func (w *Writer) landed(ctx context.Context, db Batcher, batch [][]byte) (bool, error) {
	var ok bool
	var b pgx.Batch
	b.Queue(`SELECT EXISTS (SELECT 1 FROM studio_events WHERE thread_id = $1 AND run_id = $2 AND body = $3::jsonb)`,
		w.thread, w.run, string(batch[0])).QueryRow(func(r pgx.Row) error { return r.Scan(&ok) })
	err := db.SendBatch(ctx, &b).Close()
	return ok, err
}
