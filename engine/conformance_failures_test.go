package engine_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/engine/channels"
)

type valueState struct {
	Value int `json:"value" reduce:"add"`
}

// pendingByTask gives a checkpoint's pending writes as (channel, decoded
// value) pairs grouped by task, the order within a task kept.
func pendingByTask(t *testing.T, tup *checkpoints.Tuple) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, pw := range tup.PendingWrites {
		out[pw.TaskID] = append(out[pw.TaskID], fmt.Sprintf("%s=%v", pw.Channel, decoded(t, pw.Value)))
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// Case 14 (tp::test_pending_writes_resume): START→one and START→two in one
// step; one succeeds, two fails (retried once). The step's checkpoint is
// not advanced, one's write is kept as a pending write, and resuming with
// a nil input runs only two again. Run for each durability, as upstream.
func TestConformancePendingWritesResume(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		durability engine.Durability
	}{
		{"sync", engine.DurabilitySync},
		{"async", engine.DurabilityAsync},
		{"exit", engine.DurabilityExit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			exit := tc.durability == engine.DurabilityExit
			var oneCalls, twoCalls atomic.Int32
			var fixed atomic.Bool
			g := engine.NewStateGraph[valueState]()
			g.AddNode("one", func(context.Context, valueState) (engine.Output, error) {
				oneCalls.Add(1)
				return engine.Update{"value": 2}, nil
			})
			g.AddNode("two", func(context.Context, valueState) (engine.Output, error) {
				twoCalls.Add(1)
				if !fixed.Load() {
					return nil, errors.New("I'm not good")
				}
				return engine.Update{"value": 3}, nil
			}, engine.WithRetry(engine.RetryPolicy{MaxAttempts: 2}))
			g.AddEdge(engine.Start, "one").AddEdge(engine.Start, "two")
			saver := checkpoints.NewMemory()
			graph := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver})
			opts := &engine.RunOptions{ThreadID: "1", Durability: tc.durability}

			_, err := graph.Invoke(ctx, engine.Update{"value": 1}, opts)
			if err == nil || !strings.Contains(err.Error(), "I'm not good") {
				t.Fatalf("first run: err = %v, want two's error", err)
			}
			if o, w := oneCalls.Load(), twoCalls.Load(); o != 1 || w != 2 {
				t.Fatalf("first run: one ran %d times, two %d; want 1 and 2 (two attempts)", o, w)
			}
			failed := latest(t, saver, "1")
			if want := (checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: 0, Parents: map[string]string{}}); !reflect.DeepEqual(failed.Metadata, want) {
				t.Fatalf("latest checkpoint metadata = %+v, want %+v", failed.Metadata, want)
			}
			// The checkpoint is the start of the failed step: one's write
			// is pending, not applied.
			if v := decoded(t, failed.Checkpoint.ChannelValues["value"]); v != 1.0 {
				t.Fatalf("latest checkpoint value = %v, want 1", v)
			}
			pending := pendingByTask(t, failed)
			if len(pending) != 2 {
				t.Fatalf("pending writes by task = %v, want one task with value=2 and another with the error", pending)
			}
			var oneTask, twoTask string
			for id, ws := range pending {
				switch {
				case slices.Equal(ws, []string{"value=2"}):
					oneTask = id
				case len(ws) == 1 && strings.HasPrefix(ws[0], checkpoints.ErrorChannel+"=") && strings.Contains(ws[0], "I'm not good"):
					twoTask = id
				}
			}
			if oneTask == "" || twoTask == "" {
				t.Fatalf("pending writes by task = %v, want one task with value=2 and another with __error__ holding two's error", pending)
			}
			before := len(history(t, saver, "1"))
			if want := map[bool]int{false: 2, true: 1}[exit]; before != want {
				t.Fatalf("%d checkpoints after the failed run, want %d", before, want)
			}

			// Resume: one's pending write is reused, two fails again.
			if _, err := graph.Invoke(ctx, nil, opts); err == nil || !strings.Contains(err.Error(), "I'm not good") {
				t.Fatalf("resume: err = %v, want two's error again", err)
			}
			if o, w := oneCalls.Load(), twoCalls.Load(); o != 1 || w != 4 {
				t.Fatalf("after resume: one ran %d times, two %d; want 1 and 4", o, w)
			}
			if again := latest(t, saver, "1"); again.Config.CheckpointID != failed.Config.CheckpointID || len(history(t, saver, "1")) != before {
				t.Fatalf("a failed resume saved a new checkpoint (latest %s, was %s)", again.Config.CheckpointID, failed.Config.CheckpointID)
			}

			// Fixed: 1 + 2 (one's pending write) + 3 = 6.
			fixed.Store(true)
			got, err := graph.Invoke(ctx, nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got.Value != 6 || oneCalls.Load() != 1 {
				t.Fatalf("after the fix: value %d, one ran %d times; want 6 and 1", got.Value, oneCalls.Load())
			}
			hist := history(t, saver, "1")
			if want := map[bool]int{false: 3, true: 2}[exit]; len(hist) != want {
				t.Fatalf("%d checkpoints at the end, want %d", len(hist), want)
			}

			final, mid := hist[0], hist[1]
			if want := (checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: 1, Parents: map[string]string{}}); !reflect.DeepEqual(final.Metadata, want) {
				t.Fatalf("final metadata = %+v, want %+v", final.Metadata, want)
			}
			if final.ParentConfig == nil || final.ParentConfig.CheckpointID != mid.Config.CheckpointID {
				t.Fatalf("final parent = %+v, want the step-0 checkpoint %s", final.ParentConfig, mid.Config.CheckpointID)
			}
			if vals := decodedValues(t, final); !reflect.DeepEqual(vals, map[string]any{"value": 6.0}) {
				t.Errorf("final channel values = %v, want {value: 6}", vals)
			}
			if !slices.Equal(final.Checkpoint.UpdatedChannels, []string{"value"}) {
				t.Errorf("final updated channels = %v, want [value]", final.Checkpoint.UpdatedChannels)
			}
			// __interrupt__ records the resume's acknowledgement (§1.6).
			if keys, want := sortedKeys(final.Checkpoint.VersionsSeen), []string{"__input__", "__interrupt__", "__start__", "one", "two"}; !slices.Equal(keys, want) {
				t.Errorf("final versions_seen keys = %v, want %v", keys, want)
			}
			if len(final.PendingWrites) != 0 {
				t.Errorf("final checkpoint has pending writes %v, want none", pendingByTask(t, final))
			}

			if mid.Config.CheckpointID != failed.Config.CheckpointID {
				t.Fatalf("the step-0 checkpoint changed id: %s, was %s", mid.Config.CheckpointID, failed.Config.CheckpointID)
			}
			wantVals := map[string]any{"value": 1.0, "branch:to:one": nil, "branch:to:two": nil}
			if vals := decodedValues(t, mid); !reflect.DeepEqual(vals, wantVals) {
				t.Errorf("step-0 channel values = %v, want %v", vals, wantVals)
			}
			if want := []string{"branch:to:one", "branch:to:two", "value"}; !slices.Equal(mid.Checkpoint.UpdatedChannels, want) {
				t.Errorf("step-0 updated channels = %v, want %v", mid.Checkpoint.UpdatedChannels, want)
			}
			if keys, want := sortedKeys(mid.Checkpoint.VersionsSeen), []string{"__input__", "__start__"}; !slices.Equal(keys, want) {
				t.Errorf("step-0 versions_seen keys = %v, want %v", keys, want)
			}
			// The original error stays, and two's successful write joins
			// it, except in exit durability, where the last run saves only
			// its final checkpoint.
			midWrites := pendingByTask(t, mid)
			wantTwo := 1
			if !exit {
				wantTwo = 2
			}
			if !slices.Equal(midWrites[oneTask], []string{"value=2"}) || len(midWrites[twoTask]) != wantTwo ||
				(!exit && !slices.Contains(midWrites[twoTask], "value=3")) || len(midWrites) != 2 {
				t.Errorf("step-0 pending writes = %v, want one: [value=2], two: the error%s", midWrites, map[bool]string{false: " and value=3", true: ""}[exit])
			}
			if exit {
				if mid.ParentConfig != nil {
					t.Errorf("exit durability: step-0 parent = %+v, want none (the input checkpoint was never saved)", mid.ParentConfig)
				}
				return
			}

			input := hist[2]
			if want := (checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1, Parents: map[string]string{}}); !reflect.DeepEqual(input.Metadata, want) {
				t.Fatalf("input metadata = %+v, want %+v", input.Metadata, want)
			}
			if input.ParentConfig != nil || mid.ParentConfig == nil || mid.ParentConfig.CheckpointID != input.Config.CheckpointID {
				t.Fatalf("parents: input %+v, step 0 %+v; want none, then the input checkpoint", input.ParentConfig, mid.ParentConfig)
			}
			if vals := decodedValues(t, input); !reflect.DeepEqual(vals, map[string]any{"__start__": map[string]any{"value": 1.0}}) {
				t.Errorf("input channel values = %v, want {__start__: {value: 1}}", vals)
			}
			if !slices.Equal(input.Checkpoint.UpdatedChannels, []string{"__start__"}) {
				t.Errorf("input updated channels = %v, want [__start__]", input.Checkpoint.UpdatedChannels)
			}
			if keys := sortedKeys(input.Checkpoint.VersionsSeen); !slices.Equal(keys, []string{"__input__"}) {
				t.Errorf("input versions_seen keys = %v, want [__input__]", keys)
			}
			var startWrites []string
			for _, ws := range pendingByTask(t, input) {
				startWrites = append(startWrites, ws...)
			}
			slices.Sort(startWrites)
			if want := []string{"branch:to:one=<nil>", "branch:to:two=<nil>", "value=1"}; !slices.Equal(startWrites, want) {
				t.Errorf("input pending writes = %v, want START's %v", startWrites, want)
			}
		})
	}
}

func decodedValues(t *testing.T, tup *checkpoints.Tuple) map[string]any {
	t.Helper()
	out := map[string]any{}
	for k, raw := range tup.Checkpoint.ChannelValues {
		out[k] = decoded(t, raw)
	}
	return out
}

// Case 15 (tp::test_invoke_checkpoint_two): the default classifier retries
// a transient error (upstream: ConnectionError) and not a permanent one
// (upstream: ValueError, here an error marked engine.Permanent); the
// failure leaves the checkpoint where it was with the error as its only
// pending write. Upstream stores repr(exc); we store the error's message.
func TestConformanceDefaultRetryOnAndErrorRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var calls atomic.Int32
	var erroredOnce atomic.Bool
	one := mustNode(t, "one", engine.NewNode().SubscribeTo(true, "input").ReadFrom("total").Do(func(_ context.Context, in any) (any, error) {
		calls.Add(1)
		m := in.(map[string]any)
		sum := m["total"].(int) + m["input"].(int)
		if sum > 4 && !erroredOnce.Swap(true) {
			return nil, errors.New("I will be retried")
		}
		if sum > 10 {
			return nil, engine.Permanent(errors.New("Input is too large"))
		}
		return sum, nil
	}).WriteTo("output", "total"))
	saver := checkpoints.NewMemory()
	p := mustPregel(t, engine.PregelConfig{
		Channels: map[string]channels.Channel{
			"total":  channels.NewBinaryOperator(reflect.TypeFor[int](), channels.AddReducer),
			"input":  channels.NewLastValue(reflect.TypeFor[int]()),
			"output": channels.NewLastValue(reflect.TypeFor[int]()),
		},
		Nodes:          []*engine.Node{one},
		InputChannels:  []string{"input"},
		OutputChannels: []string{"output"},
		Checkpointer:   saver,
		// Upstream's RetryPolicy() defaults, without the waits.
		Retry: []engine.RetryPolicy{{MaxAttempts: 3}},
	})
	total := func(thread string) any {
		return decoded(t, latest(t, saver, thread).Checkpoint.ChannelValues["total"])
	}
	run := func(thread string, in int) (any, error) {
		return p.Invoke(ctx, in, &engine.RunOptions{ThreadID: thread, Durability: engine.DurabilitySync})
	}

	if out, err := run("1", 2); err != nil || out != 2 || total("1") != 2.0 {
		t.Fatalf("invoke(2) = %v, %v, total %v; want 2 and total 2", out, err, total("1"))
	}
	if out, err := run("1", 3); err != nil || out != 5 || total("1") != 7.0 {
		t.Fatalf("invoke(3) = %v, %v, total %v; want 5 (after one retry) and total 7", out, err, total("1"))
	}
	if !erroredOnce.Load() || calls.Load() != 3 {
		t.Fatalf("after invoke(3): errored %v, %d calls; want the transient error retried (3 calls)", erroredOnce.Load(), calls.Load())
	}
	if _, err := run("1", 4); err == nil || !strings.Contains(err.Error(), "Input is too large") {
		t.Fatalf("invoke(4): err = %v, want the permanent error", err)
	}
	if n := calls.Load(); n != 4 {
		t.Fatalf("the permanent error was retried: %d calls, want 4", n)
	}
	tup := latest(t, saver, "1")
	if v := decoded(t, tup.Checkpoint.ChannelValues["total"]); v != 7.0 {
		t.Fatalf("after the failure total = %v, want 7", v)
	}
	if len(tup.PendingWrites) != 1 || tup.PendingWrites[0].Channel != checkpoints.ErrorChannel ||
		decoded(t, tup.PendingWrites[0].Value) != "Input is too large" || tup.PendingWrites[0].TaskID == "" {
		t.Fatalf("pending writes = %+v, want exactly [(task, __error__, \"Input is too large\")]", tup.PendingWrites)
	}
	if out, err := run("2", 5); err != nil || out != 5 {
		t.Fatalf("invoke(5) on thread 2 = %v, %v; want 5", out, err)
	}
	if total("1") != 7.0 || total("2") != 5.0 {
		t.Fatalf("totals: thread 1 %v, thread 2 %v; want 7 and 5", total("1"), total("2"))
	}
}

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

// Case 36 (tp::test_checkpoint_metadata): the run's metadata keys are
// copied into every checkpoint it writes; checkpoints written when a
// thread is resumed take the resuming call's keys. Upstream resumes after
// an interrupt; here the resume follows a failed step.
func TestConformanceCheckpointMetadata(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var fail atomic.Bool
	fail.Store(true)
	g := engine.NewStateGraph[itemsState]()
	g.AddNode("a", appendName("a"))
	g.AddNode("b", func(context.Context, itemsState) (engine.Output, error) {
		if fail.Load() {
			return nil, engine.Permanent(errors.New("b is down"))
		}
		return engine.Update{"items": "b"}, nil
	})
	g.AddEdge(engine.Start, "a").AddEdge("a", "b")
	saver := checkpoints.NewMemory()
	graph := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver})

	first := map[string]any{"test_config_1": "foo", "test_config_2": "bar"}
	if _, err := graph.Invoke(ctx, engine.Update{"items": []string{"in"}}, &engine.RunOptions{ThreadID: "1", Durability: engine.DurabilitySync, Metadata: first}); err == nil {
		t.Fatal("first run succeeded, want b's error")
	}
	firstRun := history(t, saver, "1")
	if len(firstRun) != 3 {
		t.Fatalf("%d checkpoints after the failed run, want 3 (input, START, a)", len(firstRun))
	}
	fail.Store(false)
	second := map[string]any{"test_config_1": "foo", "test_config_3": "baz"}
	if _, err := graph.Invoke(ctx, nil, &engine.RunOptions{ThreadID: "1", Durability: engine.DurabilitySync, Metadata: second}); err != nil {
		t.Fatal(err)
	}
	all := history(t, saver, "1")
	if len(all) != 4 {
		t.Fatalf("%d checkpoints in the end, want 4", len(all))
	}
	for i, tup := range all {
		want := first
		if i == 0 {
			want = second
		}
		if !reflect.DeepEqual(tup.Metadata.Extra, want) {
			t.Fatalf("checkpoint %d (%s, step %d): extra metadata %v, want %v", i, tup.Metadata.Source, tup.Metadata.Step, tup.Metadata.Extra, want)
		}
	}
	filtered, err := saver.List(ctx, checkpoints.ListQuery{ThreadID: "1"}, checkpoints.ListOptions{Filter: map[string]any{"test_config_1": "foo"}})
	if err != nil || len(filtered) != 4 {
		t.Fatalf("filter on test_config_1: %d checkpoints, %v; want all 4", len(filtered), err)
	}
}
