package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// apiError is an API client's error: an HTTP status, and a Retry-After
// when the server sent one.
type apiError struct {
	status int
	after  time.Duration
}

func (e *apiError) Error() string             { return fmt.Sprintf("api: status %d", e.status) }
func (e *apiError) StatusCode() int           { return e.status }
func (e *apiError) RetryAfter() time.Duration { return e.after }

// sdkError carries its status with the other method name SDKs use.
type sdkError struct{ code int }

func (e sdkError) Error() string   { return "sdk error" }
func (e sdkError) HTTPStatus() int { return e.code }

func TestDefaultRetryOnClassifiesHTTPStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&apiError{status: 400}, false},
		{&apiError{status: 401}, false},
		{&apiError{status: 403}, false},
		{&apiError{status: 404}, false},
		{&apiError{status: 409}, false},
		{&apiError{status: 422}, false},
		{&apiError{status: 408}, true},
		{&apiError{status: 429}, true},
		{&apiError{status: 500}, true},
		{&apiError{status: 503}, true},
		{&apiError{status: 529}, true},
		{fmt.Errorf("call model: %w", &apiError{status: 400}), false},
		{fmt.Errorf("call model: %w", sdkError{code: 502}), true},
		{sdkError{code: 413}, false},
		{errors.New("connection reset"), true},
	} {
		if got := engine.DefaultRetryOn(tc.err); got != tc.want {
			t.Errorf("DefaultRetryOn(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

type callState struct {
	N int `json:"n"`
}

// A node whose API call fails with a 400 runs once; with a 429 it is
// retried, waiting what the server's Retry-After says (capped by the
// policy's MaxInterval), not the policy's backoff.
func TestHTTPErrorsRetryAsTheirStatusSays(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		err       error
		calls     int32
		backoff   time.Duration
		maxWait   time.Duration
		succeeded bool
	}{
		{"400 is permanent", &apiError{status: 400}, 1, 0, 0, false},
		{"503 is retried with the backoff", &apiError{status: 503}, 2, time.Millisecond, 0, true},
		{"429 waits its Retry-After", &apiError{status: 429, after: 7 * time.Millisecond}, 2, 7 * time.Millisecond, 0, true},
		{"a Retry-After is capped", &apiError{status: 429, after: time.Hour}, 2, 3 * time.Millisecond, 3 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			g := engine.NewStateGraph[callState]()
			g.AddNode("call", func(context.Context, callState) (engine.Output, error) {
				if calls.Add(1) == 1 {
					return nil, tc.err
				}
				return engine.Update{"n": 1}, nil
			}, engine.WithRetry(engine.RetryPolicy{InitialInterval: time.Millisecond, MaxAttempts: 3, MaxInterval: tc.maxWait}))
			g.AddEdge(engine.Start, "call")
			cg, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
			if err != nil {
				t.Fatal(err)
			}
			var waits []time.Duration
			_, err = cg.Invoke(context.Background(), engine.Update{}, &engine.RunOptions{ThreadID: "t", Listener: func(ev engine.Event) {
				if r, ok := ev.(engine.TaskRetried); ok {
					waits = append(waits, r.Backoff)
				}
			}})
			if (err == nil) != tc.succeeded || calls.Load() != tc.calls {
				t.Fatalf("err %v after %d calls; want success %v after %d", err, calls.Load(), tc.succeeded, tc.calls)
			}
			if tc.backoff > 0 && (len(waits) != 1 || waits[0] != tc.backoff) {
				t.Fatalf("waits %v, want one of %v", waits, tc.backoff)
			}
		})
	}
}
