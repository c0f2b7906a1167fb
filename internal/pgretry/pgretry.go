// Package pgretry rides out transient Postgres faults: a dropped
// connection, a server restarting, a serialization failure. The Postgres
// backends (checkpoints, the thread registry) run each round trip through
// Do, so a run that outlives a short database restart still ends well
// instead of failing at the first refused connection.
//
// The rule for writes: an error raised before anything reached the server
// (pgconn.SafeToRetry) is retried as it is. An error after the statement
// may have reached the server leaves its outcome unknown: the write may
// have committed. Such a write is retried only after its Landed check has
// looked at what the database holds and found it missing; when the check
// finds it, the write is done.
package pgretry

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// DefaultWindow is how long Do keeps retrying a transient fault before it
// gives up with the last error.
const DefaultWindow = 30 * time.Second

// Backoff bounds: the first wait, and the longest.
const (
	firstWait = 50 * time.Millisecond
	maxWait   = 2 * time.Second
)

// Op is one round trip: a statement, a batch or a transaction.
type Op struct {
	// Run does the round trip.
	Run func(ctx context.Context) error
	// Landed, for a write, reports whether the write is in the database.
	// Do calls it before retrying a write whose outcome is unknown; nil
	// marks a read, which is always safe to run again.
	Landed func(ctx context.Context) (bool, error)
}

// Do runs op, retrying transient faults with exponential backoff (50 ms
// doubling to 2 s, jittered) for up to window (0: DefaultWindow; negative:
// no retry). It returns nil when op succeeded or its write was found to
// have landed, ctx's error when ctx ended, and otherwise op's last error.
// Errors that are not transient (a constraint, bad SQL, a value too large)
// are returned at once.
func Do(ctx context.Context, window time.Duration, op Op) error {
	if window == 0 {
		window = DefaultWindow
	}
	err := op.Run(ctx)
	if err == nil || window < 0 || !Transient(err) {
		return err
	}
	deadline := time.Now().Add(window)
	wait := firstWait
	unknown := op.Landed != nil && outcomeUnknown(err)
	for {
		if ctx.Err() != nil {
			return err
		}
		d := wait/2 + rand.N(wait/2+1)
		if time.Now().Add(d).After(deadline) {
			return err
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(wait*2, maxWait)
		if unknown {
			var ok bool
			lerr := attempt(ctx, deadline, func(ctx context.Context) (err error) {
				ok, err = op.Landed(ctx)
				return err
			})
			if lerr != nil {
				if Transient(lerr) {
					continue // cannot look yet: still unknown
				}
				return errors.Join(err, lerr)
			}
			if ok {
				return nil
			}
		}
		err = attempt(ctx, deadline, op.Run)
		if err == nil || !Transient(err) {
			return err
		}
		unknown = op.Landed != nil && outcomeUnknown(err)
	}
}

// outcomeUnknown reports whether a write that failed with err may have
// been applied: not when nothing was sent (pgconn.SafeToRetry), and not
// when the server answered with an error (a serialization failure, a
// deadlock, a shutdown): the server rolled the transaction back.
func outcomeUnknown(err error) bool {
	var pgErr *pgconn.PgError
	return !pgconn.SafeToRetry(err) && !errors.As(err, &pgErr)
}

// attempt runs a retry within the window: a server that stopped
// answering (a dropped route, a host that is gone) must not hold a retry
// past the window waiting for TCP to give up. The first try is never
// bounded this way; a slow statement is not a fault.
func attempt(ctx context.Context, deadline time.Time, run func(context.Context) error) error {
	// A retry late in the window still gets time for a healthy but slow
	// statement.
	ctx, cancel := context.WithDeadline(ctx, later(deadline, time.Now().Add(minAttempt)))
	defer cancel()
	return run(ctx)
}

// minAttempt is the least time a retry gets.
const minAttempt = 5 * time.Second

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Transient reports whether err is a fault that goes away on its own: the
// connection refused, reset or closed; the server shutting down, starting
// up or out of connections; a serialization failure or a deadlock. A
// cancelled or expired context is not transient, nor is a write refused by
// its fence (SQLSTATE SSF01, checkpoints.ErrFenced): the lease it needs
// has passed to another replica for good.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "40001", // serialization_failure
			"40P01", // deadlock_detected
			"57P01", // admin_shutdown
			"57P02", // crash_shutdown
			"57P03", // cannot_connect_now
			"53300": // too_many_connections
			return true
		}
		// Class 08: connection exception.
		return len(pgErr.Code) == 5 && pgErr.Code[:2] == "08"
	}
	if pgconn.SafeToRetry(err) {
		return true
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, pgconn.ErrConnClosed) {
		return true
	}
	// A dial or read that failed on the network (refused, reset,
	// unreachable, timed out) comes wrapped in a *net.OpError.
	var netErr *net.OpError
	return errors.As(err, &netErr)
}
