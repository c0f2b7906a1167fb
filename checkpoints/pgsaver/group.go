package pgsaver

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// committer runs the saver's writes, each a batch of statements that
// commit together (one implicit transaction), with at most limit of
// those transactions in flight. A write that arrives while limit are in
// flight waits, and the writes waiting when a transaction ends are sent
// together as the next one: one round trip and one commit for all of
// them (group commit). Under light load every write is its own
// transaction, sent at once by its caller, exactly as without a
// committer; under load, many threads' saves share commits instead of
// queueing for connections one by one.
//
// A write in a group keeps its meaning: its statements run in order, as
// they would alone, and it is all or nothing. A statement that fails
// fails its own write; the others of its group were rolled back with it
// (or never ran) and are sent again without it.
type committer struct {
	pool batchSender
	// limit is the most transactions in flight; 0 or less means no
	// grouping (every write its own transaction, whatever the load).
	limit int
	// encode says the pool's connections may run the statements of
	// encodedStatement with parameters the saver encodes (encodes).
	encode bool

	mu       sync.Mutex
	inflight int
	pending  []*groupJob
}

// batchSender is what the committer needs of the pool.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Acquire(ctx context.Context) (*pgxpool.Conn, error)
}

// maxGroup caps the writes sent in one transaction.
const maxGroup = 32

// groupJob is one write waiting for, or in, a transaction.
type groupJob struct {
	ctx context.Context
	// lock is the write's thread's advisory lock key (threadLock): a
	// group's writes are sent in its order, the order maintenance locks
	// threads in, so a group and a Prune never deadlock.
	lock  int32
	batch *pgx.Batch
	read  func(pgx.BatchResults) error
	err   error
	done  chan struct{} // closed once err is final
	gone  atomic.Bool   // the caller stopped waiting (its context ended)
}

// do runs b as one transaction and reads its results with read, which
// must read every statement's result in order and return the first
// error. A nil read is for statements that return no rows: it executes
// them, and a single one goes as a plain Exec when it goes alone.
func (c *committer) do(ctx context.Context, thread string, b *pgx.Batch, read func(pgx.BatchResults) error) error {
	if read == nil && len(b.QueuedQueries) > 1 {
		read = execAll(len(b.QueuedQueries))
	}
	if c.limit <= 0 {
		return c.solo(ctx, b, read)
	}
	c.mu.Lock()
	if c.inflight < c.limit && len(c.pending) == 0 {
		// Nothing waits: this write goes now, alone, on the caller's
		// context, as it would without a committer.
		c.inflight++
		c.mu.Unlock()
		err := c.solo(ctx, b, read)
		c.finish()
		return err
	}
	j := &groupJob{ctx: ctx, lock: threadLock(thread), batch: b, read: read, done: make(chan struct{})}
	c.pending = append(c.pending, j)
	lead := c.inflight < c.limit
	if lead {
		c.inflight++
	}
	c.mu.Unlock()
	if lead {
		// The group goes on a goroutine of its own: its leader, like
		// every other member, stops waiting when its context ends.
		go c.lead()
	}
	select {
	case <-j.done:
		return j.err
	case <-ctx.Done():
		select {
		case <-j.done:
			return j.err
		default:
		}
		j.gone.Store(true)
		c.mu.Lock()
		for i, p := range c.pending {
			if p == j {
				c.pending = append(c.pending[:i], c.pending[i+1:]...)
				break
			}
		}
		c.mu.Unlock()
		// Still waiting, or in a transaction whose outcome it will not
		// learn: either way the caller's context ended first.
		return ctx.Err()
	}
}

// solo runs one write as its own transaction. A single statement
// returning no rows (read nil) goes as a plain Exec: the same round trip
// as a batch of one, without pgx's pipeline bookkeeping.
func (c *committer) solo(ctx context.Context, b *pgx.Batch, read func(pgx.BatchResults) error) error {
	if read == nil {
		q := b.QueuedQueries[0]
		if name, ok := encodedStatement(q.SQL); ok && c.encode {
			return execEncoded(ctx, c.pool, name, q)
		}
		_, err := c.pool.Exec(ctx, q.SQL, q.Arguments...)
		return err
	}
	br := c.pool.SendBatch(ctx, b)
	err := read(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// lead sends the first waiting group, and the rest of it again while one
// of its writes is refused, then hands what waits meanwhile to the next
// lead (finish). It runs on a goroutine of its own, never a caller's, so
// every caller waits for its write the same way, and leaves when its
// context ends.
func (c *committer) lead() {
	jobs := c.take()
	for len(jobs) > 0 {
		jobs = c.run(jobs)
	}
	c.finish()
}

// take removes up to maxGroup waiting writes whose callers still wait.
func (c *committer) take() []*groupJob {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := min(len(c.pending), maxGroup)
	jobs := make([]*groupJob, 0, n)
	for _, j := range c.pending[:n] {
		if !j.gone.Load() {
			jobs = append(jobs, j)
		}
	}
	c.pending = append(c.pending[:0], c.pending[n:]...)
	return jobs
}

// finish ends a transaction slot: the writes that waited meanwhile go
// together on a new goroutine, or the slot is given back.
func (c *committer) finish() {
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.inflight--
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	go c.lead()
}

// run sends jobs as one transaction, settles the jobs whose outcome it
// knows, and returns those to send again: the rest of a group in which
// one write failed.
func (c *committer) run(jobs []*groupJob) []*groupJob {
	if len(jobs) == 1 {
		j := jobs[0]
		c.settle(j, c.solo(j.ctx, unsent(j.batch), j.read))
		return nil
	}
	slices.SortStableFunc(jobs, func(a, b *groupJob) int { return cmp.Compare(a.lock, b.lock) })
	b := &pgx.Batch{}
	for _, j := range jobs {
		b.QueuedQueries = append(b.QueuedQueries, unsent(j.batch).QueuedQueries...)
	}
	// The group outlives any one caller's context: a caller whose context
	// ends stops waiting (do), and the others' writes go on.
	br := c.pool.SendBatch(context.WithoutCancel(jobs[0].ctx), b)
	failed := -1
	var err error
	for i, j := range jobs {
		read := j.read
		if read == nil {
			read = execAll(1)
		}
		if err = read(br); err != nil {
			failed = i
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		for _, j := range jobs {
			c.settle(j, nil)
		}
		return nil
	}
	var pgErr *pgconn.PgError
	if failed < 0 || !errors.As(err, &pgErr) {
		// The connection failed or the commit's outcome is unknown: it is
		// every write's error, for each to retry or check as it would
		// alone.
		for _, j := range jobs {
			c.settle(j, err)
		}
		return nil
	}
	// The server refused one write's statement: that write fails, and the
	// others, rolled back with it or never run, go again.
	c.settle(jobs[failed], err)
	again := make([]*groupJob, 0, len(jobs)-1)
	for i, j := range jobs {
		if i != failed && !j.gone.Load() {
			again = append(again, j)
		}
	}
	return again
}

// unsent returns a batch of b's statements that pgx has not seen: pgx
// keeps a sent statement's prepared-statement name in it, which a failed
// batch invalidates, so a statement is never sent twice.
func unsent(b *pgx.Batch) *pgx.Batch {
	out := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, len(b.QueuedQueries))}
	for i, q := range b.QueuedQueries {
		out.QueuedQueries[i] = &pgx.QueuedQuery{SQL: q.SQL, Arguments: q.Arguments}
	}
	return out
}

func (c *committer) settle(j *groupJob, err error) {
	j.err = err
	close(j.done)
}
