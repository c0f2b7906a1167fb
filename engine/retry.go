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

// wait is the wait after the given (1-based) failed attempt that failed
// with err: the error's own Retry-After when it has one (capped by
// MaxInterval), else the backoff.
func (p RetryPolicy) wait(attempt int, err error) time.Duration {
	if d, ok := retryAfter(err); ok {
		return min(d, p.maxInterval())
	}
	return p.backoff(attempt)
}

// maxInterval is MaxInterval with its default.
func (p RetryPolicy) maxInterval() time.Duration {
	if p.MaxInterval == 0 {
		return 128 * time.Second
	}
	return p.MaxInterval
}

// backoff is the wait after the given (1-based) failed attempt.
func (p RetryPolicy) backoff(attempt int) time.Duration {
	factor := p.BackoffFactor
	if factor == 0 {
		factor = 2
	}
	maxI := p.maxInterval()
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
// syntax errors, recovered panics (programming errors), and HTTP errors
// whose status says the request itself is wrong.
//
// An error carrying an HTTP status (it, or an error it wraps, has an
// HTTPStatus() int or StatusCode() int method, as API clients' errors do)
// is classified by that status, as upstream's default_retry_on does for
// httpx and requests errors, with the transient client errors added:
//   - 5xx (500–599, including 529 "overloaded"): retried;
//   - 408 Request Timeout and 429 Too Many Requests: retried;
//   - any other 4xx (400 bad request, 401/403 auth, 404, 409 conflict,
//     413, 422, …): not retried. Sending the same request again cannot
//     fix it; 409 is included here because a conflict needs a changed
//     request or state, not the same request again.
//
// An error that also has a RetryAfter() time.Duration method (a
// Retry-After header) sets the wait before the next attempt, capped by
// the policy's MaxInterval, instead of the policy's backoff.
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
	if code, ok := HTTPStatus(err); ok {
		return retryableStatus(code)
	}
	return true
}

// retryableStatus says whether a request answered with HTTP status code
// is worth sending again (see DefaultRetryOn).
func retryableStatus(code int) bool {
	switch {
	case code >= 500 && code <= 599, code == 408, code == 429:
		return true
	case code >= 400 && code <= 499:
		return false
	}
	return true // not an error status: the status says nothing
}

// HTTPStatus returns the HTTP status an error carries: that of the first
// error in its chain with an HTTPStatus() int or StatusCode() int method.
func HTTPStatus(err error) (int, bool) {
	var h interface{ HTTPStatus() int }
	if errors.As(err, &h) {
		return h.HTTPStatus(), true
	}
	var s interface{ StatusCode() int }
	if errors.As(err, &s) {
		return s.StatusCode(), true
	}
	return 0, false
}

// retryAfter is the wait an error asks for (a Retry-After header), if any.
func retryAfter(err error) (time.Duration, bool) {
	var r interface{ RetryAfter() time.Duration }
	if errors.As(err, &r) {
		if d := r.RetryAfter(); d > 0 {
			return d, true
		}
	}
	return 0, false
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
