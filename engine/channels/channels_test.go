package channels

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// step is one operation on a channel and what it must do.
type step struct {
	op     string // "update" (default), "consume" or "finish"
	values []any
	// changed is the expected result of the operation.
	changed bool
	// err, when set, is the sentinel the error must wrap; the channel must
	// then be unchanged.
	err error
	// avail is the expected IsAvailable after the step; value is what Get
	// must then return (compared with its Go type).
	avail bool
	value any
}

// ruleCase is a sequence of steps on a fresh channel.
type ruleCase struct {
	name  string
	new   func() Channel
	steps []step
	// mutate is written to a copy after every step to check that the
	// original does not change.
	mutate []any
	// untracked: a restored channel is always empty.
	untracked bool
}

func u(values ...any) []any { return values }

func runRuleCases(t *testing.T, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ch := tc.new()
			checkInvariants(t, tc, ch, "fresh")
			for i, s := range tc.steps {
				where := fmt.Sprintf("step %d (%s %v)", i, opName(s.op), s.values)
				before := snapshot(t, ch)
				changed, err := apply(ch, s)
				switch {
				case s.err != nil:
					if !errors.Is(err, s.err) {
						t.Fatalf("%s: error %v, want one wrapping %v", where, err, s.err)
					}
					if after := snapshot(t, ch); after != before {
						t.Fatalf("%s: a failed update changed the channel:\nbefore %s\nafter  %s", where, before, after)
					}
				case err != nil:
					t.Fatalf("%s: unexpected error %v", where, err)
				case changed != s.changed:
					t.Fatalf("%s: changed = %v, want %v", where, changed, s.changed)
				}
				if s.err == nil {
					checkValue(t, where, ch, s.avail, s.value)
				}
				checkInvariants(t, tc, ch, where)
			}
		})
	}
}

func opName(op string) string {
	if op == "" {
		return "update"
	}
	return op
}

func apply(ch Channel, s step) (bool, error) {
	switch s.op {
	case "consume":
		return ch.Consume(), nil
	case "finish":
		return ch.Finish(), nil
	default:
		return ch.Update(s.values)
	}
}

// checkValue asserts availability and the value Get returns, including its
// dynamic Go type.
func checkValue(t *testing.T, where string, ch Channel, avail bool, want any) {
	t.Helper()
	if got := ch.IsAvailable(); got != avail {
		t.Fatalf("%s: IsAvailable = %v, want %v", where, got, avail)
	}
	got, ok := ch.Get()
	if ok != avail {
		t.Fatalf("%s: Get ok = %v, want %v", where, ok, avail)
	}
	if !avail {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: Get = %#v (%T), want %#v (%T)", where, got, got, want, want)
	}
}

// snapshot renders everything observable about a channel, detached from
// its memory, so that later aliasing cannot change a taken snapshot.
func snapshot(t *testing.T, ch Channel) string {
	t.Helper()
	v, ok := ch.Get()
	data, saved, err := ch.Checkpoint()
	if err != nil {
		t.Fatalf("Checkpoint: %v", err)
	}
	return fmt.Sprintf("avail=%v get=(%#v %T, %v) checkpoint=(%s, %v)", ch.IsAvailable(), v, v, ok, data, saved)
}

// checkInvariants checks, in any state, that a checkpoint restores to an
// equivalent channel with the same Go types, and that a copy is
// independent of the original.
func checkInvariants(t *testing.T, tc ruleCase, ch Channel, where string) {
	t.Helper()
	before := snapshot(t, ch)

	data, saved, err := ch.Checkpoint()
	if err != nil {
		t.Fatalf("%s: Checkpoint: %v", where, err)
	}
	if !saved {
		data = nil
	}
	restored, err := ch.FromCheckpoint(data)
	if err != nil {
		t.Fatalf("%s: FromCheckpoint(%s): %v", where, data, err)
	}
	if tc.untracked {
		if saved || restored.IsAvailable() {
			t.Fatalf("%s: untracked channel saved %s (%v) or restored available", where, data, saved)
		}
	} else if got := snapshot(t, restored); got != before {
		t.Fatalf("%s: checkpoint round trip differs:\noriginal %s\nrestored %s", where, before, got)
	}

	cp := ch.Copy()
	if got := snapshot(t, cp); got != before {
		t.Fatalf("%s: copy differs:\noriginal %s\ncopy     %s", where, before, got)
	}
	// Errors are irrelevant here: only the original's state matters.
	_, _ = cp.Update(tc.mutate)
	cp.Finish()
	cp.Consume()
	_, _ = cp.Update(tc.mutate)
	_, _ = cp.Update(nil)
	if got := snapshot(t, ch); got != before {
		t.Fatalf("%s: updating a copy changed the original:\nbefore %s\nafter  %s", where, before, got)
	}
}

func TestLastValueRules(t *testing.T) {
	t.Parallel()
	newInt := func() Channel { return LastValueOf[int]() }
	runRuleCases(t, []ruleCase{
		{name: "fresh channel is empty", new: newInt, mutate: u(9), steps: []step{
			{values: nil, changed: false, avail: false},
			{op: "consume", changed: false, avail: false},
			{op: "finish", changed: false, avail: false},
		}},
		{name: "one value per step", new: newInt, mutate: u(9), steps: []step{
			{values: u(1), changed: true, avail: true, value: 1},
			{values: nil, changed: false, avail: true, value: 1},
			{values: u(2), changed: true, avail: true, value: 2},
			{op: "consume", changed: false, avail: true, value: 2},
			{op: "finish", changed: false, avail: true, value: 2},
		}},
		{name: "two values in one step fail", new: newInt, mutate: u(9), steps: []step{
			{values: u(1), changed: true, avail: true, value: 1},
			{values: u(2, 3), err: ErrInvalidUpdate},
		}},
		{name: "wrong type fails", new: newInt, mutate: u(9), steps: []step{
			{values: u("one"), err: ErrInvalidUpdate},
			{values: u(int64(1)), err: ErrInvalidUpdate},
		}},
		{name: "JSON numbers become ints when whole", new: newInt, mutate: u(9), steps: []step{
			{values: u(3.0), changed: true, avail: true, value: 3},
			{values: u(json.Number("4")), changed: true, avail: true, value: 4},
			{values: u(3.5), err: ErrInvalidUpdate},
		}},
		{name: "nil is the zero value", new: newInt, mutate: u(9), steps: []step{
			{values: u(nil), changed: true, avail: true, value: 0},
		}},
		{name: "any holds everything, nil included", new: func() Channel { return NewLastValue(nil) }, mutate: u("m"), steps: []step{
			{values: u(nil), changed: true, avail: true, value: nil},
			{values: u(map[string]any{"k": "v"}), changed: true, avail: true, value: map[string]any{"k": "v"}},
		}},
		{name: "struct values", new: func() Channel { return LastValueOf[point]() }, mutate: u(point{9, 9}), steps: []step{
			{values: u(point{1, 2}), changed: true, avail: true, value: point{1, 2}},
			{values: u(map[string]any{"x": 3.0, "y": 4.0}), changed: true, avail: true, value: point{3, 4}},
			{values: u(map[string]any{"z": 1.0}), err: ErrInvalidUpdate},
		}},
		{name: "Overwrite just sets", new: newInt, mutate: u(9), steps: []step{
			{values: u(Overwrite{Value: 7}), changed: true, avail: true, value: 7},
		}},
	})
}

type point struct {
	X int `json:"x"`
	Y int `json:"y"`
}

func TestLastValueAfterFinishRules(t *testing.T) {
	t.Parallel()
	newStr := func() Channel { return LastValueAfterFinishOf[string]() }
	runRuleCases(t, []ruleCase{
		{name: "empty channel neither finishes nor consumes", new: newStr, mutate: u("m"), steps: []step{
			{op: "finish", changed: false, avail: false},
			{op: "consume", changed: false, avail: false},
			{values: nil, changed: false, avail: false},
		}},
		{name: "value is held until finish, then consumed once", new: newStr, mutate: u("m"), steps: []step{
			{values: u("a"), changed: true, avail: false},
			{op: "consume", changed: false, avail: false},
			{values: nil, changed: false, avail: false},
			{op: "finish", changed: true, avail: true, value: "a"},
			{op: "finish", changed: false, avail: true, value: "a"},
			{op: "consume", changed: true, avail: false},
			{op: "consume", changed: false, avail: false},
			{op: "finish", changed: false, avail: false},
		}},
		{name: "several values keep the last", new: newStr, mutate: u("m"), steps: []step{
			{values: u("a", "b"), changed: true, avail: false},
			{op: "finish", changed: true, avail: true, value: "b"},
		}},
		{name: "a write after finish withdraws it", new: newStr, mutate: u("m"), steps: []step{
			{values: u("a"), changed: true, avail: false},
			{op: "finish", changed: true, avail: true, value: "a"},
			{values: u("c"), changed: true, avail: false},
			{op: "finish", changed: true, avail: true, value: "c"},
		}},
		{name: "wrong type fails", new: newStr, mutate: u("m"), steps: []step{
			{values: u("a", 1), err: ErrInvalidUpdate},
		}},
	})
}

func TestEphemeralValueRules(t *testing.T) {
	t.Parallel()
	guarded := func() Channel { return EphemeralValueOf[int](true) }
	unguarded := func() Channel { return NewEphemeralValue(nil, false) }
	runRuleCases(t, []ruleCase{
		{name: "value lasts one step", new: guarded, mutate: u(9), steps: []step{
			{values: nil, changed: false, avail: false},
			{values: u(1), changed: true, avail: true, value: 1},
			{op: "consume", changed: false, avail: true, value: 1},
			{op: "finish", changed: false, avail: true, value: 1},
			{values: nil, changed: true, avail: false},
			{values: nil, changed: false, avail: false},
		}},
		{name: "guard refuses two values", new: guarded, mutate: u(9), steps: []step{
			{values: u(1), changed: true, avail: true, value: 1},
			{values: u(2, 3), err: ErrInvalidUpdate},
		}},
		{name: "unguarded keeps the last", new: unguarded, mutate: u("m"), steps: []step{
			{values: u("__start__", "x"), changed: true, avail: true, value: "x"},
			{values: nil, changed: true, avail: false},
		}},
		{name: "wrong type fails", new: guarded, mutate: u(9), steps: []step{
			{values: u("x"), err: ErrInvalidUpdate},
		}},
	})
}

func TestUntrackedValueRules(t *testing.T) {
	t.Parallel()
	guarded := func() Channel { return UntrackedValueOf[string](true) }
	unguarded := func() Channel { return UntrackedValueOf[string](false) }
	runRuleCases(t, []ruleCase{
		{name: "value is kept but never saved", new: guarded, mutate: u("m"), untracked: true, steps: []step{
			{values: nil, changed: false, avail: false},
			{values: u("secret"), changed: true, avail: true, value: "secret"},
			{values: nil, changed: false, avail: true, value: "secret"},
			{op: "consume", changed: false, avail: true, value: "secret"},
			{op: "finish", changed: false, avail: true, value: "secret"},
		}},
		{name: "guard refuses two values", new: guarded, mutate: u("m"), untracked: true, steps: []step{
			{values: u("a", "b"), err: ErrInvalidUpdate},
		}},
		{name: "unguarded keeps the last", new: unguarded, mutate: u("m"), untracked: true, steps: []step{
			{values: u("a", "b"), changed: true, avail: true, value: "b"},
		}},
	})
}

func TestAnyValueRules(t *testing.T) {
	t.Parallel()
	newInt := func() Channel { return AnyValueOf[int]() }
	runRuleCases(t, []ruleCase{
		{name: "several values keep the last; an empty step clears", new: newInt, mutate: u(9), steps: []step{
			{values: nil, changed: false, avail: false},
			{values: u(1, 1), changed: true, avail: true, value: 1},
			{op: "consume", changed: false, avail: true, value: 1},
			{op: "finish", changed: false, avail: true, value: 1},
			{values: nil, changed: true, avail: false},
			{values: nil, changed: false, avail: false},
		}},
		{name: "wrong type fails", new: newInt, mutate: u(9), steps: []step{
			{values: u(1, "x"), err: ErrInvalidUpdate},
		}},
	})
}

func TestBinaryOperatorRules(t *testing.T) {
	t.Parallel()
	counter := func() Channel { return BinaryOperatorOf[int](AddReducer) }
	list := func() Channel { return BinaryOperatorOf[[]string](AppendReducer) }
	runRuleCases(t, []ruleCase{
		{name: "starts available with the zero value", new: counter, mutate: u(100), steps: []step{
			{values: nil, changed: false, avail: true, value: 0},
			{op: "consume", changed: false, avail: true, value: 0},
			{op: "finish", changed: false, avail: true, value: 0},
		}},
		{name: "folds values in order", new: counter, mutate: u(100), steps: []step{
			{values: u(1), changed: true, avail: true, value: 1},
			{values: u(2, 3), changed: true, avail: true, value: 6},
			{values: nil, changed: false, avail: true, value: 6},
			{values: u(4.0), changed: true, avail: true, value: 10},
		}},
		{name: "reducer type errors leave the value", new: counter, mutate: u(100), steps: []step{
			{values: u(1), changed: true, avail: true, value: 1},
			{values: u(2, "x"), err: ErrInvalidUpdate},
			{values: u(2.5), err: ErrInvalidUpdate},
		}},
		{name: "Overwrite replaces the value", new: counter, mutate: u(100), steps: []step{
			{values: u(5), changed: true, avail: true, value: 5},
			{values: u(Overwrite{Value: 1}), changed: true, avail: true, value: 1},
			{values: u(1, Overwrite{Value: 10}, 7), changed: true, avail: true, value: 10},
			{values: u(Overwrite{Value: "x"}), err: ErrInvalidUpdate},
		}},
		{name: "slice starts empty, not nil", new: list, mutate: u("m"), steps: []step{
			{values: nil, changed: false, avail: true, value: []string{}},
			{values: u("a"), changed: true, avail: true, value: []string{"a"}},
			{values: u([]string{"b", "c"}, "d"), changed: true, avail: true, value: []string{"a", "b", "c", "d"}},
			{values: u([]any{"e"}), changed: true, avail: true, value: []string{"a", "b", "c", "d", "e"}},
			{values: u(5), err: ErrInvalidUpdate},
			{values: u([]int{1}), err: ErrInvalidUpdate},
		}},
		{name: "interface type starts empty and takes the first value raw",
			new:    func() Channel { return NewBinaryOperator(nil, AppendReducer) },
			mutate: u("m"),
			steps: []step{
				{values: nil, changed: false, avail: false},
				{values: u([]any{"a"}, "b"), changed: true, avail: true, value: []any{"a", "b"}},
			}},
		{name: "no reducer is an error, not a panic",
			new:    func() Channel { return NewBinaryOperator(reflect.TypeFor[int](), nil) },
			mutate: u(1),
			steps: []step{
				{values: u(1), err: ErrInvalidUpdate},
			}},
	})
}

func TestTopicRules(t *testing.T) {
	t.Parallel()
	fresh := func() Channel { return TopicOf[int](false) }
	accumulating := func() Channel { return TopicOf[int](true) }
	runRuleCases(t, []ruleCase{
		{name: "values last one step", new: fresh, mutate: u(9, []int{8}), steps: []step{
			{values: nil, changed: false, avail: false},
			{values: u(1, []int{2, 3}), changed: true, avail: true, value: []int{1, 2, 3}},
			{op: "consume", changed: false, avail: true, value: []int{1, 2, 3}},
			{op: "finish", changed: false, avail: true, value: []int{1, 2, 3}},
			{values: u(4), changed: true, avail: true, value: []int{4}},
			{values: nil, changed: true, avail: false},
			{values: nil, changed: false, avail: false},
			{values: u([]int{}), changed: false, avail: false},
			{values: u([]any{5.0, 6}), changed: true, avail: true, value: []int{5, 6}},
		}},
		{name: "accumulate keeps growing", new: accumulating, mutate: u(9, []int{8}), steps: []step{
			{values: u(1), changed: true, avail: true, value: []int{1}},
			{values: nil, changed: false, avail: true, value: []int{1}},
			{values: u([]int{2, 3}), changed: true, avail: true, value: []int{1, 2, 3}},
			{values: u([]int{}), changed: false, avail: true, value: []int{1, 2, 3}},
			{op: "consume", changed: false, avail: true, value: []int{1, 2, 3}},
		}},
		{name: "a bad element leaves the topic unchanged", new: fresh, mutate: u(9), steps: []step{
			{values: u(1, 2), changed: true, avail: true, value: []int{1, 2}},
			{values: u(3, []any{4, "x"}), err: ErrInvalidUpdate},
			{values: u("x"), err: ErrInvalidUpdate},
		}},
		{name: "any elements flatten every slice",
			new:    func() Channel { return NewTopic(nil, true) },
			mutate: u("m"),
			steps: []step{
				{values: u("a", []any{"b", 1.0}, []int{2}), changed: true, avail: true, value: []any{"a", "b", 1.0, 2}},
			}},
		{name: "slice elements are not flattened",
			new:    func() Channel { return TopicOf[[]string](true) },
			mutate: u([]string{"m"}),
			steps: []step{
				{values: u([]string{"a", "b"}, [][]string{{"c"}}), changed: true, avail: true, value: [][]string{{"a", "b"}, {"c"}}},
			}},
	})
}

func TestNamedBarrierValueRules(t *testing.T) {
	t.Parallel()
	barrier := func() Channel { return NewNamedBarrierValue([]string{"b", "a", "a"}) }
	runRuleCases(t, []ruleCase{
		{name: "available once all names are seen, reset by consume", new: barrier, mutate: u("a", "b"), steps: []step{
			{values: nil, changed: false, avail: false},
			{values: u("a"), changed: true, avail: false},
			{op: "consume", changed: false, avail: false},
			{values: u("a"), changed: false, avail: false},
			{op: "finish", changed: false, avail: false},
			{values: u("b"), changed: true, avail: true, value: nil},
			{op: "finish", changed: false, avail: true, value: nil},
			{op: "consume", changed: true, avail: false},
			{op: "consume", changed: false, avail: false},
			{values: u("b", "a"), changed: true, avail: true, value: nil},
		}},
		{name: "unknown names and non-strings fail", new: barrier, mutate: u("a"), steps: []step{
			{values: u("a"), changed: true, avail: false},
			{values: u("b", "c"), err: ErrInvalidUpdate},
			{values: u(1), err: ErrInvalidUpdate},
		}},
	})
}

func TestNamedBarrierValueAfterFinishRules(t *testing.T) {
	t.Parallel()
	barrier := func() Channel { return NewNamedBarrierValueAfterFinish([]string{"a", "b"}) }
	runRuleCases(t, []ruleCase{
		{name: "complete barrier waits for finish, then consumes", new: barrier, mutate: u("a", "b"), steps: []step{
			{op: "finish", changed: false, avail: false},
			{values: u("a"), changed: true, avail: false},
			{op: "finish", changed: false, avail: false},
			{values: u("b"), changed: true, avail: false},
			{op: "consume", changed: false, avail: false},
			{values: nil, changed: false, avail: false},
			{op: "finish", changed: true, avail: true, value: nil},
			{op: "finish", changed: false, avail: true, value: nil},
			{op: "consume", changed: true, avail: false},
			{op: "consume", changed: false, avail: false},
			{op: "finish", changed: false, avail: false},
		}},
		{name: "unknown name fails", new: barrier, mutate: u("a"), steps: []step{
			{values: u("z"), err: ErrInvalidUpdate},
		}},
	})
}
