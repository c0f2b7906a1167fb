package pgevents

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TailerOptions tune a Tailer; the zero value (or nil) is the default.
type TailerOptions struct {
	// OnError, if set, is told of every failure the tailer recovers from
	// by itself: a lost or refused LISTEN connection, a failed read. It
	// must not block.
	OnError func(error)
	// MinBackoff and MaxBackoff bound the wait before reconnecting or
	// reading again after a failure (defaults 10 ms and 2 s).
	MinBackoff, MaxBackoff time.Duration
	// ReadLimit is how many rows one read fetches (default 1000).
	ReadLimit int
	// Source is what the tailer follows; nil: the threads' events in
	// studio_events.
	Source *Source
}

// Source is a log a Tailer can follow: rows numbered per key (a thread,
// a run) in the order they commit, whose appends NOTIFY "key seq" on
// ChannelSQL(Channel). The rows of a key any reader sees must always be
// a prefix of its log (appends of one key commit in seq order), so that
// reading `seq > cursor` never steps over one that commits later.
type Source struct {
	// Channel is the channel's name within the schema (see ChannelSQL).
	Channel string
	// Read returns up to limit rows of key with seq > after, in seq order.
	Read func(ctx context.Context, db Querier, key string, after int64, limit int) ([]Row, error)
}

// events is the Source of studio_events.
var events = Source{Channel: "studio_events", Read: Read}

// Tailer delivers the events other processes append to the threads this
// process follows. It holds one connection of its own, outside the pool,
// that LISTENs on the schema's channel; a notification says only which
// thread grew, and the thread's rows are then read through the pool from
// the followers' cursors. A process needs one Tailer.
//
// Each followed thread has a goroutine of its own that reads and calls
// the thread's followers in turn: a slow follower delays the other
// followers of its thread, never other threads.
type Tailer struct {
	pool *pgxpool.Pool
	opts TailerOptions

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	threads map[string]*followed
}

// followed is the state of one thread with followers.
type followed struct {
	wake      chan struct{}
	followers map[*follower]struct{}
}

type follower struct {
	cursor  int64 // the last seq delivered
	fn      func([]Row)
	stopped bool
}

// NewTailer starts a tailer on pool's database and schema. Close stops it.
func NewTailer(pool *pgxpool.Pool, opts *TailerOptions) *Tailer {
	t := &Tailer{pool: pool, threads: map[string]*followed{}}
	if opts != nil {
		t.opts = *opts
	}
	if t.opts.MinBackoff <= 0 {
		t.opts.MinBackoff = 10 * time.Millisecond
	}
	if t.opts.MaxBackoff < t.opts.MinBackoff {
		t.opts.MaxBackoff = max(2*time.Second, t.opts.MinBackoff)
	}
	if t.opts.ReadLimit <= 0 {
		t.opts.ReadLimit = 1000
	}
	if t.opts.Source == nil {
		t.opts.Source = &events
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.wg.Add(1)
	go t.listen()
	return t
}

// Close stops the tailer and waits for its goroutines, including any
// follower call under way; no follower is called afterwards.
func (t *Tailer) Close() {
	t.mu.Lock() // so that no Follow starts a goroutine during Wait
	t.cancel()
	t.mu.Unlock()
	t.wg.Wait()
}

// Follow calls fn with every event of thread whose seq is above after,
// in seq order, each exactly once, as they are appended, until stop is
// called. Stop may be called from fn; called elsewhere, it does not wait
// for a call of fn already begun. Calls of fn are sequential; the
// rows passed are shared with the thread's other followers and must not
// be modified. Events appended at any time after Follow is called are
// delivered, even before the tailer's LISTEN is active or while it
// reconnects.
func (t *Tailer) Follow(thread string, after int64, fn func([]Row)) (stop func()) {
	f := &follower{cursor: after, fn: fn}
	t.mu.Lock()
	if t.ctx.Err() != nil {
		t.mu.Unlock()
		return func() {}
	}
	th := t.threads[thread]
	if th == nil {
		th = &followed{wake: make(chan struct{}, 1), followers: map[*follower]struct{}{}}
		t.threads[thread] = th
		t.wg.Add(1)
		go t.deliver(thread, th)
	}
	th.followers[f] = struct{}{}
	t.mu.Unlock()
	// The first read happens after registration: a row committed before
	// it is read now, and one committed after it is either read now too
	// or notified (or caught up on the next LISTEN) later.
	signal(th.wake)
	return func() {
		t.mu.Lock()
		f.stopped = true
		delete(th.followers, f)
		t.mu.Unlock()
		signal(th.wake) // lets the thread's goroutine end when it was the last
	}
}

func (t *Tailer) report(err error) {
	if t.opts.OnError != nil && t.ctx.Err() == nil {
		t.opts.OnError(err)
	}
}

// sleep waits d, or less when the tailer closes; it reports whether the
// tailer is still open.
func (t *Tailer) sleep(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-t.ctx.Done():
		return false
	}
}

// listen keeps a LISTEN connection open, reconnecting with backoff.
func (t *Tailer) listen() {
	defer t.wg.Done()
	wait := t.opts.MinBackoff
	for t.ctx.Err() == nil {
		listened, err := t.session()
		if t.ctx.Err() != nil {
			return
		}
		t.report(fmt.Errorf("pgevents: tailer connection: %w", err))
		if listened {
			wait = t.opts.MinBackoff
		}
		if !t.sleep(wait) {
			return
		}
		wait = min(2*wait, t.opts.MaxBackoff)
	}
}

// session runs one connection: LISTEN, catch every followed thread up,
// then wake threads as notifications arrive, until the connection fails.
func (t *Tailer) session() (listened bool, err error) {
	conn, err := pgx.ConnectConfig(t.ctx, t.pool.Config().ConnConfig.Copy())
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	var channel string
	if err := conn.QueryRow(t.ctx, "SELECT "+ChannelSQL(t.opts.Source.Channel)).Scan(&channel); err != nil {
		return false, err
	}
	if _, err := conn.Exec(t.ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return false, err
	}
	// Notifications sent while no LISTEN was active are lost: every
	// followed thread reads from its cursor now that one is.
	t.mu.Lock()
	for _, th := range t.threads {
		signal(th.wake)
	}
	t.mu.Unlock()
	for {
		n, err := conn.WaitForNotification(t.ctx)
		if err != nil {
			return true, err
		}
		i := strings.LastIndexByte(n.Payload, ' ')
		if i < 0 {
			continue
		}
		last, err := strconv.ParseInt(n.Payload[i+1:], 10, 64)
		if err != nil {
			continue
		}
		t.mu.Lock()
		if th := t.threads[n.Payload[:i]]; th != nil {
			for f := range th.followers {
				if f.cursor < last {
					signal(th.wake)
					break
				}
			}
		}
		t.mu.Unlock()
	}
}

// deliver is the goroutine of one followed thread: on each wake it reads
// the rows after its followers' lowest cursor, in pages, and gives each
// follower those after its own. It ends when the thread has no followers.
func (t *Tailer) deliver(thread string, th *followed) {
	defer t.wg.Done()
	wait := t.opts.MinBackoff
	for {
		select {
		case <-th.wake:
		case <-t.ctx.Done():
			return
		}
		for {
			t.mu.Lock()
			if len(th.followers) == 0 {
				delete(t.threads, thread)
				t.mu.Unlock()
				return
			}
			from, seen := int64(0), false
			for f := range th.followers {
				if !seen || f.cursor < from {
					from, seen = f.cursor, true
				}
			}
			t.mu.Unlock()
			rows, err := t.opts.Source.Read(t.ctx, t.pool, thread, from, t.opts.ReadLimit)
			if err != nil {
				if t.ctx.Err() != nil {
					return
				}
				t.report(err)
				if !t.sleep(wait) {
					return
				}
				wait = min(2*wait, t.opts.MaxBackoff)
				continue
			}
			wait = t.opts.MinBackoff
			if len(rows) == 0 {
				break
			}
			t.give(th, rows)
			if len(rows) < t.opts.ReadLimit {
				break
			}
		}
	}
}

// give calls each follower with the rows after its cursor.
func (t *Tailer) give(th *followed, rows []Row) {
	t.mu.Lock()
	fs := make([]*follower, 0, len(th.followers))
	for f := range th.followers {
		fs = append(fs, f)
	}
	t.mu.Unlock()
	last := rows[len(rows)-1].Seq
	for _, f := range fs {
		if t.ctx.Err() != nil {
			return
		}
		t.mu.Lock()
		cursor, stopped := f.cursor, f.stopped
		t.mu.Unlock()
		if stopped || cursor >= last {
			continue
		}
		i := 0
		for i < len(rows) && rows[i].Seq <= cursor {
			i++
		}
		f.fn(rows[i:])
		t.mu.Lock()
		f.cursor = last
		t.mu.Unlock()
	}
}
