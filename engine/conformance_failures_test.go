package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/engine"
)

// retryGraph is upstream's test_retry.py graph: START→failing_node→
// other_node, where failing_node fails its first failures attempts.
func retryGraph(t *testing.T, failures int, failWith func(attempt int) error, attempts *[]int, policies ...engine.RetryPolicy) *engine.Graph[fooState] {
	t.Helper()
	var calls atomic.Int32
	g := engine.NewStateGraph[fooState]()
	g.AddNode("failing_node", func(ctx context.Context, _ fooState) (engine.Output, error) {
		n := int(calls.Add(1))
		if attempts != nil {
			*attempts = append(*attempts, engine.Attempt(ctx))
		}
		if n <= failures {
			return nil, failWith(n)
		}
		return engine.Update{"foo": "success"}, nil
	}, engine.WithRetry(policies...))
	g.AddNode("other_node", func(context.Context, fooState) (engine.Output, error) {
		return engine.Update{"foo": "other_node"}, nil
	})
	g.AddEdge(engine.Start, "failing_node").AddEdge("failing_node", "other_node")
	return mustCompile(t, g, engine.CompileOptions{})
}

var (
	errValue = errors.New("value error")
	errKey   = errors.New("key error")
)

func retryOn(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

// Case 16 (tr::test_graph_with_single_retry_policy): a node failing twice
// with max 3 attempts, 10ms initial wait, factor 2 and no jitter waits
// 10ms then 20ms and runs attempts 1, 2, 3. Upstream patches time.sleep;
// here the waits are read from TaskRetried events. With max 2 attempts
// (tr::test_graph_with_max_attempts_exceeded) the run fails after one
// 10ms wait. A zero initial interval retries at once.
func TestConformanceRetryBackoff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		maxAttempts int
		initial     time.Duration
		wantErr     bool
		wantBackoff []time.Duration
	}{
		{"succeeds on the third of 3 attempts", 3, 10 * time.Millisecond, false, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}},
		{"fails after 2 attempts", 2, 10 * time.Millisecond, true, []time.Duration{10 * time.Millisecond}},
		{"zero interval, 3 attempts", 3, 0, false, []time.Duration{0, 0}},
		{"zero interval, 2 attempts", 2, 0, true, []time.Duration{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var attempts []int
			policy := engine.RetryPolicy{MaxAttempts: tc.maxAttempts, InitialInterval: tc.initial, BackoffFactor: 2, RetryOn: retryOn(errValue)}
			graph := retryGraph(t, 2, func(int) error { return fmt.Errorf("intentional failure: %w", errValue) }, &attempts, policy)
			var rec recorder
			got, err := graph.Invoke(context.Background(), engine.Update{"foo": ""}, &engine.RunOptions{Listener: rec.listen})
			wantAttempts := []int{1, 2, 3}[:tc.maxAttempts]
			if !slices.Equal(attempts, wantAttempts) {
				t.Fatalf("attempts seen by the node = %v, want %v", attempts, wantAttempts)
			}
			var backoffs []time.Duration
			var retried []int
			for _, r := range eventsOf[engine.TaskRetried](&rec) {
				if r.Task.Name != "failing_node" || !errors.Is(r.Err, errValue) {
					t.Fatalf("unexpected retry event %+v", r)
				}
				backoffs = append(backoffs, r.Backoff)
				retried = append(retried, r.Attempt)
			}
			if !slices.Equal(backoffs, tc.wantBackoff) || !slices.Equal(retried, wantAttempts[:len(wantAttempts)-1]) {
				t.Fatalf("retry events: backoffs %v after attempts %v, want %v after %v", backoffs, retried, tc.wantBackoff, wantAttempts[:len(wantAttempts)-1])
			}
			var started []int
			for _, s := range startedOf(&rec, "failing_node") {
				started = append(started, s.Attempt)
			}
			if !slices.Equal(started, wantAttempts) {
				t.Fatalf("TaskStarted attempts = %v, want %v", started, wantAttempts)
			}
			if tc.wantErr {
				if !errors.Is(err, errValue) {
					t.Fatalf("err = %v, want the node's error", err)
				}
				failed := eventsOf[engine.TaskFailed](&rec)
				if len(failed) != 1 || failed[0].Attempts != tc.maxAttempts || !errors.Is(failed[0].Err, errValue) {
					t.Fatalf("TaskFailed events = %+v, want one after %d attempts", failed, tc.maxAttempts)
				}
				return
			}
			if err != nil || got.Foo != "other_node" {
				t.Fatalf("result = %+v, %v; want foo other_node", got, err)
			}
			fin := finishedOf(&rec, "failing_node")
			if len(fin) != 1 || fin[0].Attempts != 3 {
				t.Fatalf("failing_node TaskFinished = %+v, want one after 3 attempts", fin)
			}
		})
	}
}

// Case 17 (tr::test_graph_with_multiple_retry_policies): with several
// policies the first one whose RetryOn accepts the error decides, and the
// attempt count is shared by all policies.
func TestConformanceMultipleRetryPolicies(t *testing.T) {
	t.Parallel()
	valuePolicy := engine.RetryPolicy{MaxAttempts: 2, RetryOn: retryOn(errValue)}
	keyPolicy := engine.RetryPolicy{MaxAttempts: 3, RetryOn: retryOn(errKey)}
	anyPolicy := engine.RetryPolicy{MaxAttempts: 5, RetryOn: func(error) bool { return true }}
	always := func(err error) func(int) error { return func(int) error { return err } }
	for _, tc := range []struct {
		name      string
		policies  []engine.RetryPolicy
		failures  int
		failWith  func(attempt int) error
		wantCalls int
		wantErr   error
	}{
		{"value error recovers on attempt 2", []engine.RetryPolicy{valuePolicy, keyPolicy}, 1, always(errValue), 2, nil},
		{"key error recovers on attempt 3", []engine.RetryPolicy{valuePolicy, keyPolicy}, 2, always(errKey), 3, nil},
		{"value error gives up after 2", []engine.RetryPolicy{valuePolicy, keyPolicy}, 10, always(errValue), 2, errValue},
		{"key error gives up after 3", []engine.RetryPolicy{valuePolicy, keyPolicy}, 10, always(errKey), 3, errKey},
		// A key error then value errors: the value policy sees attempt 2
		// (shared count) and stops there.
		{"attempts are shared across policies", []engine.RetryPolicy{valuePolicy, keyPolicy}, 10, func(n int) error {
			if n == 1 {
				return errKey
			}
			return errValue
		}, 2, errValue},
		// The value policy is listed first, so it decides even though the
		// catch-all would allow 5 attempts.
		{"first matching policy decides", []engine.RetryPolicy{valuePolicy, anyPolicy}, 10, always(errValue), 2, errValue},
		{"no policy matches: no retry", []engine.RetryPolicy{valuePolicy, keyPolicy}, 10, always(errors.New("other")), 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var attempts []int
			graph := retryGraph(t, tc.failures, tc.failWith, &attempts, tc.policies...)
			got, err := graph.Invoke(context.Background(), engine.Update{"foo": ""}, nil)
			if len(attempts) != tc.wantCalls {
				t.Fatalf("node ran %d times, want %d", len(attempts), tc.wantCalls)
			}
			switch {
			case tc.failures < tc.wantCalls:
				if err != nil || got.Foo != "other_node" {
					t.Fatalf("result = %+v, %v; want a recovered run", got, err)
				}
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
			default:
				if err == nil {
					t.Fatal("the run succeeded, want the node's error")
				}
			}
		})
	}
}
