package engine

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"time"
)

// RetryPolicy says how a failing node is retried. Attempts are counted per
// task across all of a node's policies; the first policy whose RetryOn
// accepts the error decides whether and how long to wait.
type RetryPolicy struct {
	// InitialInterval is the wait before the second attempt. Zero retries
	// immediately (DefaultRetryPolicy uses upstream's 500ms).
	InitialInterval time.Duration
	// BackoffFactor multiplies the wait after each attempt (0 means 2).
	BackoffFactor float64
	// MaxInterval caps the wait (0 means 128s).
	MaxInterval time.Duration
	// MaxAttempts counts the first try (0 means 3).
	MaxAttempts int
	// Jitter adds a uniform random wait in [0, 1s), as upstream.
	Jitter bool
	// RetryOn decides which errors are retried (nil means DefaultRetryOn).
	RetryOn func(error) bool
}

// DefaultRetryPolicy returns upstream LangGraph's defaults: 500ms initial
// wait doubling up to 128s, 3 attempts, jitter, DefaultRetryOn.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{InitialInterval: 500 * time.Millisecond, BackoffFactor: 2, MaxInterval: 128 * time.Second, MaxAttempts: 3, Jitter: true}
}

func (p RetryPolicy) maxAttempts() int {
	if p.MaxAttempts <= 0 {
		return 3
	}
	return p.MaxAttempts
}

func (p RetryPolicy) accepts(err error) bool {
	if p.RetryOn != nil {
		return p.RetryOn(err)
	}
	return DefaultRetryOn(err)
}

// backoff is the wait after the given (1-based) failed attempt.
func (p RetryPolicy) backoff(attempt int) time.Duration {
	factor := p.BackoffFactor
	if factor == 0 {
		factor = 2
	}
	maxI := p.MaxInterval
	if maxI == 0 {
		maxI = 128 * time.Second
	}
	d := float64(p.InitialInterval)
	for i := 1; i < attempt; i++ {
		d *= factor
		if d > float64(maxI) {
			break
		}
	}
	wait := time.Duration(min(d, float64(maxI)))
	if p.Jitter {
		wait += time.Duration(rand.Int64N(int64(time.Second)))
	}
	return wait
}

// DefaultRetryOn retries every error except those a retry cannot fix:
// errors marked Permanent, cancellation, invalid updates, JSON type and
// syntax errors, and recovered panics (programming errors).
func DefaultRetryOn(err error) bool {
	var (
		typeErr  *json.UnmarshalTypeError
		syntaxEr *json.SyntaxError
		panicErr *PanicError
	)
	switch {
	case IsPermanent(err),
		errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, ErrInvalidUpdate),
		errors.As(err, &typeErr),
		errors.As(err, &syntaxEr),
		errors.As(err, &panicErr):
		return false
	}
	return true
}

// PanicError is a panic recovered from a node, returned as the node's
// error with the stack at the point of the panic.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return "node panicked: " + fmtAny(e.Value) }

// policyFor returns the first policy accepting err.
func policyFor(policies []RetryPolicy, err error) (RetryPolicy, bool) {
	for _, p := range policies {
		if p.accepts(err) {
			return p, true
		}
	}
	return RetryPolicy{}, false
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
