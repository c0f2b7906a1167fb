package enginetest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/engine/channels"
)

func init() {
	registerDurabilities("14 partial success survives a failure: checkpoints", pendingWritesResume)
	registerDurabilities("14 partial success survives a failure: GetState", getStateAfterPartialFailure)
	register("15 default retry-on and error record", defaultRetryOnAndErrorRecord)
	register("36 config keys become checkpoint metadata", checkpointMetadata)
	register("38 a step with every write saved but no checkpoint is pending, not finished", writesPendingSnapshot)
}

// partialFailure is the graph of case 14: START→one and START→two in one
// step, value: int+. one writes 2; two fails (retried once) until fixed,
// then writes 3.
type partialFailure struct {
	graph              *engine.Graph[addState]
	oneCalls, twoCalls atomic.Int32
	fixed              atomic.Bool
}

func newPartialFailure(t *testing.T, s checkpoints.Saver) *partialFailure {
	pf := &partialFailure{}
	g := engine.NewStateGraph[addState]()
	g.AddNode("one", func(context.Context, addState) (engine.Output, error) {
		pf.oneCalls.Add(1)
		return engine.Update{"value": 2}, nil
	})
	g.AddNode("two", func(context.Context, addState) (engine.Output, error) {
		pf.twoCalls.Add(1)
		if !pf.fixed.Load() {
			//lint:ignore ST1005 upstream's message, which the case compares verbatim
			return nil, errors.New("I'm not good")
		}
		return engine.Update{"value": 3}, nil
	}, engine.WithRetry(engine.RetryPolicy{MaxAttempts: 2}))
	g.AddEdge(engine.Start, "one").AddEdge(engine.Start, "two")
	pf.graph = mustCompile(t, g, engine.CompileOptions{Checkpointer: s})
	return pf
}

// Case 14 (tp::test_pending_writes_resume): START→one and START→two in one
// step; one succeeds, two fails (retried once). The step's checkpoint is
// not advanced, one's write is kept as a pending write, and resuming with
// a nil input runs only two again. Run for each durability, as upstream.
func pendingWritesResume(t *testing.T, saver checkpoints.Saver, durability engine.Durability) {
	exit := durability == engine.DurabilityExit
	pf := newPartialFailure(t, saver)
	th := thread(t, "1")
	opts := &engine.RunOptions{ThreadID: th, Durability: durability}

	_, err := pf.graph.Invoke(ctx(), engine.Update{"value": 1}, opts)
	if err == nil || !strings.Contains(err.Error(), "I'm not good") {
		t.Fatalf("first run: err = %v, want two's error", err)
	}
	if o, w := pf.oneCalls.Load(), pf.twoCalls.Load(); o != 1 || w != 2 {
		t.Fatalf("first run: one ran %d times, two %d; want 1 and 2 (two attempts)", o, w)
	}
	failed := latest(t, saver, th)
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
	before := len(history(t, saver, th))
	if want := map[bool]int{false: 2, true: 1}[exit]; before != want {
		t.Fatalf("%d checkpoints after the failed run, want %d", before, want)
	}

	// Resume: one's pending write is reused, two fails again.
	if _, err := pf.graph.Invoke(ctx(), nil, opts); err == nil || !strings.Contains(err.Error(), "I'm not good") {
		t.Fatalf("resume: err = %v, want two's error again", err)
	}
	if o, w := pf.oneCalls.Load(), pf.twoCalls.Load(); o != 1 || w != 4 {
		t.Fatalf("after resume: one ran %d times, two %d; want 1 and 4", o, w)
	}
	if again := latest(t, saver, th); again.Config.CheckpointID != failed.Config.CheckpointID || len(history(t, saver, th)) != before {
		t.Fatalf("a failed resume saved a new checkpoint (latest %s, was %s)", again.Config.CheckpointID, failed.Config.CheckpointID)
	}

	// Fixed: 1 + 2 (one's pending write) + 3 = 6.
	pf.fixed.Store(true)
	got, err := pf.graph.Invoke(ctx(), nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got.Value != 6 || pf.oneCalls.Load() != 1 {
		t.Fatalf("after the fix: value %d, one ran %d times; want 6 and 1", got.Value, pf.oneCalls.Load())
	}
	hist := history(t, saver, th)
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
}

// Reference §11 case 14 through GetState: the latest state applies the
// successful task's write and lists only the failed task as next; the
// explicit checkpoint shows the step's start; resuming runs only the
// failed task.
func getStateAfterPartialFailure(t *testing.T, saver checkpoints.Saver, d engine.Durability) {
	pf := newPartialFailure(t, saver)
	cg := pf.graph
	th := thread(t, "1")
	opts := &engine.RunOptions{ThreadID: th, Durability: d}
	if _, err := cg.Invoke(ctx(), engine.Update{"value": 1}, opts); err == nil || pf.oneCalls.Load() != 1 || pf.twoCalls.Load() != 2 {
		t.Fatalf("first run err=%v one=%d two=%d", err, pf.oneCalls.Load(), pf.twoCalls.Load())
	}
	st, err := cg.GetState(ctx(), checkpoints.Config{ThreadID: th})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st.Values, map[string]any{"value": 3}) || !reflect.DeepEqual(st.Next, []string{"two"}) ||
		st.Metadata.Source != checkpoints.SourceLoop || st.Metadata.Step != 0 {
		t.Fatalf("latest state = %+v", st)
	}
	if len(st.Tasks) != 2 || !reflect.DeepEqual(st.Tasks[0].Result, map[string]any{"value": 2}) || st.Tasks[1].Error != "I'm not good" || st.Tasks[1].Result != nil {
		t.Fatalf("tasks = %+v", st.Tasks)
	}
	at, err := cg.GetState(ctx(), st.Config)
	if err != nil || !reflect.DeepEqual(at.Values, map[string]any{"value": 1}) || !reflect.DeepEqual(at.Next, []string{"one", "two"}) {
		t.Fatalf("explicit checkpoint = %+v, %v", at, err)
	}
	if _, err := cg.Invoke(ctx(), nil, opts); err == nil || pf.oneCalls.Load() != 1 || pf.twoCalls.Load() != 4 {
		t.Fatalf("second run err=%v one=%d two=%d", err, pf.oneCalls.Load(), pf.twoCalls.Load())
	}
	pf.fixed.Store(true)
	out, err := cg.Invoke(ctx(), nil, opts)
	if err != nil || out.Value != 6 || pf.oneCalls.Load() != 1 {
		t.Fatalf("final = %+v, %v, one=%d", out, err, pf.oneCalls.Load())
	}
	hist, err := cg.GetStateHistory(ctx(), checkpoints.Config{ThreadID: th}, engine.HistoryOptions{})
	wantLen := 3
	if d == engine.DurabilityExit {
		wantLen = 2
	}
	if err != nil || len(hist) != wantLen {
		t.Fatalf("history has %d checkpoints (%v), want %d", len(hist), err, wantLen)
	}
}

// Case 15 (tp::test_invoke_checkpoint_two): the default classifier retries
// a transient error (upstream: ConnectionError) and not a permanent one
// (upstream: ValueError, here an error marked engine.Permanent); the
// failure leaves the checkpoint where it was with the error as its only
// pending write. Upstream stores repr(exc); we store the error's message.
func defaultRetryOnAndErrorRecord(t *testing.T, saver checkpoints.Saver) {
	var calls atomic.Int32
	var erroredOnce atomic.Bool
	nb := engine.NewNode().SubscribeTo(true, "input").ReadFrom("total").Do(func(_ context.Context, in any) (any, error) {
		calls.Add(1)
		m := in.(map[string]any)
		sum := m["total"].(int) + m["input"].(int)
		if sum > 4 && !erroredOnce.Swap(true) {
			//lint:ignore ST1005 upstream's message
			return nil, errors.New("I will be retried")
		}
		if sum > 10 {
			//lint:ignore ST1005 upstream's message, which the case compares verbatim
			return nil, engine.Permanent(errors.New("Input is too large"))
		}
		return sum, nil
	}).WriteTo("output", "total")
	one, err := nb.Build()
	if err != nil {
		t.Fatalf("build node: %v", err)
	}
	one.Name = "one"
	p, err := engine.NewPregel(engine.PregelConfig{
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
	if err != nil {
		t.Fatalf("NewPregel: %v", err)
	}
	th1, th2 := thread(t, "1"), thread(t, "2")
	total := func(thread string) any {
		return decoded(t, latest(t, saver, thread).Checkpoint.ChannelValues["total"])
	}
	run := func(thread string, in int) (any, error) {
		return p.Invoke(ctx(), in, &engine.RunOptions{ThreadID: thread, Durability: engine.DurabilitySync})
	}

	if out, err := run(th1, 2); err != nil || out != 2 || total(th1) != 2.0 {
		t.Fatalf("invoke(2) = %v, %v, total %v; want 2 and total 2", out, err, total(th1))
	}
	if out, err := run(th1, 3); err != nil || out != 5 || total(th1) != 7.0 {
		t.Fatalf("invoke(3) = %v, %v, total %v; want 5 (after one retry) and total 7", out, err, total(th1))
	}
	if !erroredOnce.Load() || calls.Load() != 3 {
		t.Fatalf("after invoke(3): errored %v, %d calls; want the transient error retried (3 calls)", erroredOnce.Load(), calls.Load())
	}
	if _, err := run(th1, 4); err == nil || !strings.Contains(err.Error(), "Input is too large") {
		t.Fatalf("invoke(4): err = %v, want the permanent error", err)
	}
	if n := calls.Load(); n != 4 {
		t.Fatalf("the permanent error was retried: %d calls, want 4", n)
	}
	tup := latest(t, saver, th1)
	if v := decoded(t, tup.Checkpoint.ChannelValues["total"]); v != 7.0 {
		t.Fatalf("after the failure total = %v, want 7", v)
	}
	if len(tup.PendingWrites) != 1 || tup.PendingWrites[0].Channel != checkpoints.ErrorChannel ||
		decoded(t, tup.PendingWrites[0].Value) != "Input is too large" || tup.PendingWrites[0].TaskID == "" {
		t.Fatalf("pending writes = %+v, want exactly [(task, __error__, \"Input is too large\")]", tup.PendingWrites)
	}
	if out, err := run(th2, 5); err != nil || out != 5 {
		t.Fatalf("invoke(5) on thread 2 = %v, %v; want 5", out, err)
	}
	if total(th1) != 7.0 || total(th2) != 5.0 {
		t.Fatalf("totals: thread 1 %v, thread 2 %v; want 7 and 5", total(th1), total(th2))
	}
}

// Case 36 (tp::test_checkpoint_metadata): the run's metadata keys are
// copied into every checkpoint it writes; checkpoints written when a
// thread is resumed take the resuming call's keys. Upstream resumes after
// an interrupt; here the resume follows a failed step.
func checkpointMetadata(t *testing.T, saver checkpoints.Saver) {
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
	graph := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver})
	th := thread(t, "1")

	first := map[string]any{"test_config_1": "foo", "test_config_2": "bar"}
	if _, err := graph.Invoke(ctx(), engine.Update{"items": []string{"in"}}, &engine.RunOptions{ThreadID: th, Durability: engine.DurabilitySync, Metadata: first}); err == nil {
		t.Fatal("first run succeeded, want b's error")
	}
	firstRun := history(t, saver, th)
	if len(firstRun) != 3 {
		t.Fatalf("%d checkpoints after the failed run, want 3 (input, START, a)", len(firstRun))
	}
	fail.Store(false)
	second := map[string]any{"test_config_1": "foo", "test_config_3": "baz"}
	if _, err := graph.Invoke(ctx(), nil, &engine.RunOptions{ThreadID: th, Durability: engine.DurabilitySync, Metadata: second}); err != nil {
		t.Fatal(err)
	}
	all := history(t, saver, th)
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
	filtered, err := saver.List(ctx(), checkpoints.ListQuery{ThreadID: th}, checkpoints.ListOptions{Filter: map[string]any{"test_config_1": "foo"}})
	if err != nil || len(filtered) != 4 {
		t.Fatalf("filter on test_config_1: %d checkpoints, %v; want all 4", len(filtered), err)
	}
}

// stopBeforeCheckpoint is a saver that fails the Put of the checkpoint
// of one step, as a process killed after the step's tasks saved their
// writes and before the step's checkpoint was written. Only the Saver
// methods are exposed, so the engine saves writes one task at a time.
type stopBeforeCheckpoint struct {
	checkpoints.Saver
	step int
}

var errStopped = errors.New("the process stopped before the step's checkpoint")

func (s stopBeforeCheckpoint) Put(ctx context.Context, cfg checkpoints.Config, cp *checkpoints.Checkpoint, md checkpoints.Metadata, nv map[string]int64) (checkpoints.Config, error) {
	if md.Step == s.step && md.Source == checkpoints.SourceLoop {
		return checkpoints.Config{}, errStopped
	}
	return s.Saver.Put(ctx, cfg, cp, md, nv)
}

// A thread whose step saved every task's writes but not its checkpoint
// looks finished to a client that stops on an empty Next (upstream's
// snapshot lists only tasks without writes). The head snapshot says
// WritesPending and names the tasks the writes lead to; a nil-input run
// applies the writes without running the step again and goes on.
func writesPendingSnapshot(t *testing.T, saver checkpoints.Saver) {
	var calls [3]atomic.Int32
	node := func(i int, name string) func(context.Context, logState) (engine.Output, error) {
		return func(context.Context, logState) (engine.Output, error) {
			calls[i].Add(1)
			return engine.Update{"log": []string{name}}, nil
		}
	}
	build := func(s checkpoints.Saver) *engine.Graph[logState] {
		g := engine.NewStateGraph[logState]()
		g.AddNode("a", node(0, "a")).AddNode("b", node(1, "b")).AddNode("c", node(2, "c"))
		g.AddEdge(engine.Start, "a").AddEdge(engine.Start, "b").AddEdge("a", "c").AddEdge("b", "c")
		return mustCompile(t, g, engine.CompileOptions{Checkpointer: s})
	}
	th := thread(t, "1")
	opts := &engine.RunOptions{ThreadID: th, Durability: engine.DurabilitySync}
	// Step 0 runs a and b; its checkpoint (step 1) is never written.
	if _, err := build(stopBeforeCheckpoint{Saver: saver, step: 1}).Invoke(ctx(), engine.Update{"log": []string{"in"}}, opts); !errors.Is(err, errStopped) {
		t.Fatalf("first run err = %v, want the stop", err)
	}
	g := build(saver)
	st, err := g.GetState(ctx(), checkpoints.Config{ThreadID: th})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Next) != 0 || !st.WritesPending || !reflect.DeepEqual(st.NextAfterWrites, []string{"c"}) {
		t.Fatalf("head: next %v, writes pending %v, next after writes %v; want [], true, [c]", st.Next, st.WritesPending, st.NextAfterWrites)
	}
	if got := st.Values["log"]; !reflect.DeepEqual(got, []any{"in", "a", "b"}) && !reflect.DeepEqual(got, []string{"in", "a", "b"}) {
		t.Fatalf("head values = %v, want the saved writes applied", st.Values)
	}
	// An explicit checkpoint is the step's start: nothing pending there.
	if at, err := g.GetState(ctx(), st.Config); err != nil || at.WritesPending || len(at.NextAfterWrites) != 0 {
		t.Fatalf("explicit checkpoint: %+v, %v", at, err)
	}
	out, err := g.Invoke(ctx(), nil, opts)
	if err != nil || !reflect.DeepEqual(out.Log, []string{"in", "a", "b", "c"}) {
		t.Fatalf("resumed run = %+v, %v", out, err)
	}
	if a, b, c := calls[0].Load(), calls[1].Load(), calls[2].Load(); a != 1 || b != 1 || c != 1 {
		t.Fatalf("calls a=%d b=%d c=%d, want each once", a, b, c)
	}
	if st, err := g.GetState(ctx(), checkpoints.Config{ThreadID: th}); err != nil || st.WritesPending || len(st.Next) != 0 {
		t.Fatalf("finished thread: %+v, %v", st, err)
	}
}
