package pgretry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestTransient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{"connection reset", fmt.Errorf("write: %w", syscall.ECONNRESET), true},
		{"unexpected EOF", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{"conn closed", fmt.Errorf("query: %w", pgconn.ErrConnClosed), true},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"cannot connect now", &pgconn.PgError{Code: "57P03"}, true},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, true},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"bad password", &pgconn.PgError{Code: "28P01"}, false},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false},
		{"cancelled", context.Canceled, false},
		{"deadline", fmt.Errorf("q: %w", context.DeadlineExceeded), false},
		{"plain", errors.New("value too large"), false},
		{"nil", nil, false},
	} {
		if got := Transient(tc.err); got != tc.want {
			t.Errorf("%s: Transient = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// errUnknownOutcome is a transient fault after the statement was sent.
var errUnknownOutcome = fmt.Errorf("commit: %w", io.ErrUnexpectedEOF)

func TestDoChecksWhatLandedBeforeRetryingAWrite(t *testing.T) {
	t.Parallel()
	for _, landed := range []bool{true, false} {
		runs, checks := 0, 0
		err := Do(context.Background(), 5*time.Second, Op{
			Run: func(context.Context) error {
				runs++
				if runs == 1 {
					return errUnknownOutcome
				}
				return nil
			},
			Landed: func(context.Context) (bool, error) { checks++; return landed, nil },
		})
		if err != nil || checks != 1 {
			t.Fatalf("landed=%v: err %v, %d checks", landed, err, checks)
		}
		if want := map[bool]int{true: 1, false: 2}[landed]; runs != want {
			t.Errorf("landed=%v: the write ran %d times, want %d", landed, runs, want)
		}
	}
}

func TestDoRetriesReadsAndStopsOnPermanentErrors(t *testing.T) {
	t.Parallel()
	runs := 0
	err := Do(context.Background(), 5*time.Second, Op{Run: func(context.Context) error {
		runs++
		if runs < 3 {
			return &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}
		}
		return nil
	}})
	if err != nil || runs != 3 {
		t.Fatalf("read: err %v after %d runs, want success on the third", err, runs)
	}
	runs = 0
	perm := &pgconn.PgError{Code: "23505"}
	if err := Do(context.Background(), 5*time.Second, Op{Run: func(context.Context) error { runs++; return perm }}); !errors.Is(err, perm) || runs != 1 {
		t.Fatalf("permanent: err %v after %d runs, want it at once", err, runs)
	}
	runs = 0
	if err := Do(context.Background(), -1, Op{Run: func(context.Context) error { runs++; return errUnknownOutcome }}); err == nil || runs != 1 {
		t.Fatalf("no window: err %v after %d runs", err, runs)
	}
}

func TestDoGivesUpAfterTheWindowAndOnCancel(t *testing.T) {
	t.Parallel()
	start := time.Now()
	err := Do(context.Background(), 300*time.Millisecond, Op{Run: func(context.Context) error { return errUnknownOutcome }})
	if !errors.Is(err, io.ErrUnexpectedEOF) || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v, want the fault within the window", err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	runs := 0
	err = Do(ctx, time.Minute, Op{Run: func(context.Context) error {
		runs++
		cancel()
		return errUnknownOutcome
	}})
	if err == nil || runs != 1 {
		t.Fatalf("cancelled: err %v after %d runs", err, runs)
	}
}

// An error the server answered with (a deadlock, a serialization failure)
// means the transaction was rolled back: the write is simply run again,
// without asking whether it landed.
func TestDoRerunsAWriteTheServerRolledBack(t *testing.T) {
	t.Parallel()
	runs, checks := 0, 0
	err := Do(context.Background(), 5*time.Second, Op{
		Run: func(context.Context) error {
			runs++
			if runs == 1 {
				return &pgconn.PgError{Code: "40P01"}
			}
			return nil
		},
		Landed: func(context.Context) (bool, error) { checks++; return false, errors.New("must not be asked") },
	})
	if err != nil || runs != 2 || checks != 0 {
		t.Fatalf("err %v after %d runs and %d landed checks; want success on the second run, no check", err, runs, checks)
	}
}

// A fenced-out write (studio_fence's SQLSTATE SSF01: another replica took
// the thread over) can never succeed: it is returned at once, also when it
// is what the rerun of a write of unknown outcome meets.
func TestDoNeverRetriesAFencedWrite(t *testing.T) {
	t.Parallel()
	fenced := &pgconn.PgError{Code: "SSF01", Message: "fenced out: thread t is not at fence 3"}
	if Transient(fenced) {
		t.Fatal("SSF01 is transient; a fenced-out replica would keep writing")
	}
	runs, checks := 0, 0
	err := Do(context.Background(), 5*time.Second, Op{
		Run: func(context.Context) error {
			runs++
			if runs == 1 {
				return errUnknownOutcome
			}
			return fenced
		},
		Landed: func(context.Context) (bool, error) { checks++; return false, nil },
	})
	if !errors.Is(err, fenced) || runs != 2 || checks != 1 {
		t.Fatalf("err %v after %d runs and %d landed checks; want SSF01 on the second run, after one check", err, runs, checks)
	}
}
