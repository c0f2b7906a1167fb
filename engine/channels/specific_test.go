package channels

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The overwrite cases of reference §11 case 12, at channel level, on a
// `messages: list+` channel.
func TestOverwrite(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		steps   [][]any
		want    []string
		wantErr string
	}{
		{
			name:  "sequential a then b overwriting",
			steps: [][]any{{[]string{"a"}}, {Overwrite{Value: []string{"b"}}}},
			want:  []string{"b"},
		},
		{
			name:  "parallel overwrite and plain value, then d",
			steps: [][]any{{Overwrite{Value: []string{"b"}}, []string{"c"}}, {[]string{"d"}}},
			want:  []string{"b", "d"},
		},
		{
			name:  "values before an overwrite are folded then replaced",
			steps: [][]any{{"a", "x", Overwrite{Value: []string{"b"}}, "y"}},
			want:  []string{"b"},
		},
		{
			name:    "two overwrites in one step",
			steps:   [][]any{{"a"}, {Overwrite{Value: []string{"b"}}, Overwrite{Value: []string{"c"}}}},
			want:    []string{"a"},
			wantErr: "can receive only one Overwrite value per superstep",
		},
		{
			name:    "two overwrites with a plain value between",
			steps:   [][]any{{Overwrite{Value: []string{"b"}}, "x", &Overwrite{Value: []string{"c"}}}},
			want:    []string{},
			wantErr: "can receive only one Overwrite value per superstep",
		},
		{
			name:  "JSON form with __overwrite__",
			steps: [][]any{{"a"}, {map[string]any{"__overwrite__": []any{"b"}}}},
			want:  []string{"b"},
		},
		{
			name:  "JSON form with type and value",
			steps: [][]any{{"a"}, {map[string]any{"type": "__overwrite__", "value": []any{"b"}}}, {"c"}},
			want:  []string{"b", "c"},
		},
		{
			name:    "JSON forms count as overwrites for the one-per-step rule",
			steps:   [][]any{{map[string]any{"__overwrite__": []any{"b"}}, map[string]any{"type": "__overwrite__", "value": []any{"c"}}}},
			want:    []string{},
			wantErr: "only one Overwrite",
		},
		{
			name:  "overwrite with nil empties the list",
			steps: [][]any{{"a"}, {Overwrite{}}},
			want:  nil,
		},
		{
			name:    "overwrite value of the wrong type",
			steps:   [][]any{{"a"}, {Overwrite{Value: 5}}},
			want:    []string{"a"},
			wantErr: "got a value of type int, but the channel holds []string",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ch := BinaryOperatorOf[[]string](AppendReducer)
			var err error
			for _, vs := range tc.steps {
				if _, err = ch.Update(vs); err != nil {
					break
				}
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (!errors.Is(err, ErrInvalidUpdate) || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want ErrInvalidUpdate saying %q", err, tc.wantErr)
			}
			got, _ := ch.Get()
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("value = %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestOverwriteShapesThatAreNotOverwrites(t *testing.T) {
	t.Parallel()
	// Maps that merely mention the marker are ordinary elements.
	ch := BinaryOperatorOf[[]map[string]any](AppendReducer)
	plain := []map[string]any{
		{"__overwrite__": 1, "other": 2},
		{"type": "__overwrite__"},
		{"type": "message", "value": 1},
	}
	for _, m := range plain {
		if _, err := ch.Update([]any{m}); err != nil {
			t.Fatalf("Update(%v): %v", m, err)
		}
	}
	if got := mustGet(t, ch); !reflect.DeepEqual(got, plain) {
		t.Fatalf("value = %#v, want the three maps appended", got)
	}
}

func TestLastValueErrorText(t *testing.T) {
	t.Parallel()
	_, err := LastValueOf[string]().Update([]any{"a", "b"})
	if !errors.Is(err, ErrInvalidUpdate) {
		t.Fatalf("error %v does not wrap ErrInvalidUpdate", err)
	}
	// The loop prefixes the key; the result must read as one sentence and
	// still match the sentinel.
	wrapped := fmt.Errorf("at key %q: %w", "answer", err)
	if !errors.Is(wrapped, ErrInvalidUpdate) {
		t.Fatal("the loop's wrapped error no longer matches ErrInvalidUpdate")
	}
	msg := wrapped.Error()
	for _, want := range []string{`at key "answer": `, "can receive only one value per step", "got 2", "declare a reducer for this key"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not contain %q", msg, want)
		}
	}
}

func TestBarrierUnknownNameErrorText(t *testing.T) {
	t.Parallel()
	for _, ch := range []Channel{
		NewNamedBarrierValue([]string{"left", "right"}),
		NewNamedBarrierValueAfterFinish([]string{"right", "left"}),
	} {
		_, err := ch.Update([]any{"middle"})
		if !errors.Is(err, ErrInvalidUpdate) {
			t.Fatalf("%T: error %v, want ErrInvalidUpdate", ch, err)
		}
		for _, want := range []string{`"middle"`, "left, right"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%T: message %q does not contain %q", ch, err, want)
			}
		}
	}
}

func TestTypeMismatchNamesBothTypes(t *testing.T) {
	t.Parallel()
	_, err := LastValueOf[int]().Update([]any{"seven"})
	if !errors.Is(err, ErrInvalidUpdate) || !strings.Contains(err.Error(), "string") || !strings.Contains(err.Error(), "int") {
		t.Fatalf("error %v should wrap ErrInvalidUpdate and name string and int", err)
	}
}

type (
	role    string
	score   float64
	tags    []string
	flagged bool
)

type stringer interface{ String() string }

type named struct{ N string }

func (n named) String() string { return n.N }

func TestConversions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		typ     reflect.Type
		in      any
		want    any
		wantErr string
	}{
		{name: "exact type", typ: reflect.TypeFor[int](), in: 5, want: 5},
		{name: "whole float64 to int", typ: reflect.TypeFor[int](), in: 5.0, want: 5},
		{name: "negative whole float64 to int8", typ: reflect.TypeFor[int8](), in: -128.0, want: int8(-128)},
		{name: "fraction to int", typ: reflect.TypeFor[int](), in: 5.5, wantErr: "5.5 (float64) is not a whole number"},
		{name: "overflowing int8", typ: reflect.TypeFor[int8](), in: 300.0, wantErr: "out of range"},
		{name: "huge float to int64", typ: reflect.TypeFor[int64](), in: 1e20, wantErr: "out of range"},
		{name: "negative to uint", typ: reflect.TypeFor[uint](), in: -1.0, wantErr: "not a non-negative whole number"},
		{name: "float64 to uint16", typ: reflect.TypeFor[uint16](), in: 65535.0, want: uint16(65535)},
		{name: "float64 to float32", typ: reflect.TypeFor[float32](), in: 1.5, want: float32(1.5)},
		{name: "float64 to named float", typ: reflect.TypeFor[score](), in: 2.5, want: score(2.5)},
		{name: "json.Number to int", typ: reflect.TypeFor[int](), in: json.Number("42"), want: 42},
		{name: "json.Number fraction to int", typ: reflect.TypeFor[int](), in: json.Number("4.2"), wantErr: "not a whole number"},
		{name: "json.Number to uint64", typ: reflect.TypeFor[uint64](), in: json.Number("18446744073709551615"), want: uint64(18446744073709551615)},
		{name: "json.Number to float64", typ: reflect.TypeFor[float64](), in: json.Number("0.25"), want: 0.25},
		{name: "float64 to string", typ: reflect.TypeFor[string](), in: 1.0, wantErr: "got a value of type float64, but the channel holds string"},
		{name: "string to named string", typ: reflect.TypeFor[role](), in: "admin", want: role("admin")},
		{name: "bool to named bool", typ: reflect.TypeFor[flagged](), in: true, want: flagged(true)},
		{name: "unnamed slice to named slice", typ: reflect.TypeFor[tags](), in: []string{"a"}, want: tags{"a"}},
		{name: "[]any to []string", typ: reflect.TypeFor[[]string](), in: []any{"a", "b"}, want: []string{"a", "b"}},
		{name: "[]any with a number to []string", typ: reflect.TypeFor[[]string](), in: []any{"a", 1.0}, wantErr: "does not fit the channel's type []string"},
		{name: "map to struct", typ: reflect.TypeFor[point](), in: map[string]any{"x": 1.0}, want: point{X: 1}},
		{name: "map with unknown field to struct", typ: reflect.TypeFor[point](), in: map[string]any{"q": 1.0}, wantErr: "unknown field"},
		{name: "map to pointer to struct", typ: reflect.TypeFor[*point](), in: map[string]any{"y": 2.0}, want: &point{Y: 2}},
		{name: "map to int", typ: reflect.TypeFor[int](), in: map[string]any{}, wantErr: "got a value of type map[string]interface {}"},
		{name: "nil to int is zero", typ: reflect.TypeFor[int](), in: nil, want: 0},
		{name: "nil to slice is a nil slice", typ: reflect.TypeFor[[]string](), in: nil, want: []string(nil)},
		{name: "implementation of a non-empty interface", typ: reflect.TypeFor[stringer](), in: named{"n"}, want: named{"n"}},
		{name: "non-implementation of a non-empty interface", typ: reflect.TypeFor[stringer](), in: 3, wantErr: "got a value of type int"},
		{name: "Overwrite unwraps", typ: reflect.TypeFor[int](), in: Overwrite{Value: 4.0}, want: 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := newValueType(tc.typ).check(tc.in)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrInvalidUpdate) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want ErrInvalidUpdate saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v (%T), want %#v (%T)", got, got, tc.want, tc.want)
			}
		})
	}
}

func TestReducers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		reduce   Reducer
		cur, nxt any
		want     any
		wantErr  string
	}{
		{name: "add ints", reduce: AddReducer, cur: 2, nxt: 3, want: 5},
		{name: "add int64", reduce: AddReducer, cur: int64(2), nxt: int64(3), want: int64(5)},
		{name: "add floats", reduce: AddReducer, cur: 0.5, nxt: 0.25, want: 0.75},
		{name: "concatenate strings", reduce: AddReducer, cur: "ab", nxt: "c", want: "abc"},
		{name: "add named ints", reduce: AddReducer, cur: int8(100), nxt: int8(20), want: int8(120)},
		{name: "add uints", reduce: AddReducer, cur: uint(1), nxt: uint(2), want: uint(3)},
		{name: "add JSON number to int", reduce: AddReducer, cur: 2, nxt: 3.0, want: 5},
		{name: "add named strings", reduce: AddReducer, cur: role("a"), nxt: "b", want: role("ab")},
		{name: "add fraction to int", reduce: AddReducer, cur: 2, nxt: 0.5, wantErr: "AddReducer: invalid update: 0.5 (float64) is not a whole number"},
		{name: "add string to int", reduce: AddReducer, cur: 2, nxt: "3", wantErr: "AddReducer cannot add a value of type string to a int"},
		{name: "add to a slice", reduce: AddReducer, cur: []int{}, nxt: 1, wantErr: "AddReducer works on numbers and strings, but the current value has type []int"},
		{name: "add to nil", reduce: AddReducer, cur: nil, nxt: 1, wantErr: "current value has type <nil>"},
		{name: "add nil", reduce: AddReducer, cur: 1, nxt: nil, wantErr: "cannot add nil"},
		{name: "append element", reduce: AppendReducer, cur: []int{1}, nxt: 2, want: []int{1, 2}},
		{name: "append slice", reduce: AppendReducer, cur: []int{1}, nxt: []int{2, 3}, want: []int{1, 2, 3}},
		{name: "append JSON numbers", reduce: AppendReducer, cur: []int{1}, nxt: []any{2.0, 3.0}, want: []int{1, 2, 3}},
		{name: "append a JSON number", reduce: AppendReducer, cur: []int64{1}, nxt: 2.0, want: []int64{1, 2}},
		{name: "append named slice type", reduce: AppendReducer, cur: tags{"a"}, nxt: tags{"b"}, want: tags{"a", "b"}},
		{name: "append to []any concatenates []any", reduce: AppendReducer, cur: []any{1}, nxt: []any{2, 3}, want: []any{1, 2, 3}},
		{name: "append to []any keeps other slices whole", reduce: AppendReducer, cur: []any{1}, nxt: []string{"x"}, want: []any{1, []string{"x"}}},
		{name: "append nil pointer", reduce: AppendReducer, cur: []*point{}, nxt: nil, want: []*point{nil}},
		{name: "append nil to []int", reduce: AppendReducer, cur: []int{}, nxt: nil, want: []int{0}},
		{name: "append string to []int", reduce: AppendReducer, cur: []int{}, nxt: "x", wantErr: "AppendReducer cannot append a value of type string to a []int; write one int or a []int"},
		{name: "append bad element of a slice", reduce: AppendReducer, cur: []int{}, nxt: []string{"x"}, wantErr: "element 0 of the []string written"},
		{name: "append fraction", reduce: AppendReducer, cur: []int{}, nxt: 1.5, wantErr: "AppendReducer: invalid update: 1.5 (float64) is not a whole number"},
		{name: "append to a non-slice", reduce: AppendReducer, cur: 3, nxt: 1, wantErr: "AppendReducer needs a slice, but the current value has type int"},
		{name: "typed reducer", reduce: ReducerFunc(func(cur map[string]int, next string) map[string]int {
			out := map[string]int{next: cur[next] + 1}
			for k, v := range cur {
				if k != next {
					out[k] = v
				}
			}
			return out
		}), cur: map[string]int{"a": 1}, nxt: "a", want: map[string]int{"a": 2}},
		{name: "typed reducer converts JSON", reduce: ReducerFunc(func(cur, next int) int { return max(cur, next) }), cur: 2, nxt: 7.0, want: 7},
		{name: "typed reducer refuses wrong next", reduce: ReducerFunc(func(cur, next int) int { return cur + next }), cur: 2, nxt: "x", wantErr: "got a value of type string, but the channel holds int"},
		{name: "typed reducer refuses wrong current", reduce: ReducerFunc(func(cur, next int) int { return cur + next }), cur: "2", nxt: 1, wantErr: "got a value of type string, but the channel holds int"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.reduce(tc.cur, tc.nxt)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrInvalidUpdate) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want ErrInvalidUpdate saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v (%T), want %#v (%T)", got, got, tc.want, tc.want)
			}
		})
	}
}

// The saved forms are a contract with the checkpoint savers and the Studio.
func TestCheckpointFormats(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		build func(t *testing.T) Channel
		want  string // "" means nothing is saved
	}{
		{name: "empty LastValue", build: func(*testing.T) Channel { return LastValueOf[int]() }},
		{name: "LastValue", build: func(t *testing.T) Channel { c := LastValueOf[int](); mustUpdate(t, c, 3); return c }, want: `3`},
		{name: "LastValue holding nil", build: func(t *testing.T) Channel { c := NewLastValue(nil); mustUpdate(t, c, nil); return c }, want: `null`},
		{name: "LastValueAfterFinish", build: func(t *testing.T) Channel {
			c := LastValueAfterFinishOf[string]()
			mustUpdate(t, c, "x")
			return c
		}, want: `{"value":"x","finished":false}`},
		{name: "finished LastValueAfterFinish", build: func(t *testing.T) Channel {
			c := LastValueAfterFinishOf[string]()
			mustUpdate(t, c, "x")
			c.Finish()
			return c
		}, want: `{"value":"x","finished":true}`},
		{name: "EphemeralValue", build: func(t *testing.T) Channel { c := EphemeralValueOf[string](true); mustUpdate(t, c, "in"); return c }, want: `"in"`},
		{name: "UntrackedValue", build: func(t *testing.T) Channel { c := UntrackedValueOf[string](true); mustUpdate(t, c, "s"); return c }},
		{name: "AnyValue", build: func(t *testing.T) Channel { c := AnyValueOf[bool](); mustUpdate(t, c, true); return c }, want: `true`},
		{name: "fresh BinaryOperator list", build: func(*testing.T) Channel { return BinaryOperatorOf[[]string](AppendReducer) }, want: `[]`},
		{name: "fresh BinaryOperator map", build: func(*testing.T) Channel { return BinaryOperatorOf[map[string]int](nil) }, want: `{}`},
		{name: "BinaryOperator", build: func(t *testing.T) Channel { c := BinaryOperatorOf[int](AddReducer); mustUpdate(t, c, 2, 3); return c }, want: `5`},
		{name: "Topic", build: func(t *testing.T) Channel { c := TopicOf[point](false); mustUpdate(t, c, point{1, 2}); return c }, want: `[{"x":1,"y":2}]`},
		{name: "empty Topic", build: func(*testing.T) Channel { return TopicOf[int](true) }},
		{name: "NamedBarrierValue", build: func(t *testing.T) Channel {
			c := NewNamedBarrierValue([]string{"c", "a", "b"})
			mustUpdate(t, c, "c", "a")
			return c
		}, want: `["a","c"]`},
		{name: "empty NamedBarrierValue", build: func(*testing.T) Channel { return NewNamedBarrierValue([]string{"a"}) }},
		{name: "NamedBarrierValueAfterFinish", build: func(t *testing.T) Channel {
			c := NewNamedBarrierValueAfterFinish([]string{"b", "a"})
			mustUpdate(t, c, "b", "a")
			c.Finish()
			return c
		}, want: `{"seen":["a","b"],"finished":true}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data, ok, err := tc.build(t).Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			if ok != (tc.want != "") || string(data) != tc.want {
				t.Fatalf("Checkpoint = (%s, %v), want (%s, %v)", data, ok, tc.want, tc.want != "")
			}
		})
	}
}

func TestCheckpointEncodeError(t *testing.T) {
	t.Parallel()
	c := NewLastValue(nil)
	mustUpdate(t, c, func() {})
	if _, ok, err := c.Checkpoint(); err == nil || ok {
		t.Fatalf("Checkpoint of a func = (%v, %v), want an error", ok, err)
	}
}

func TestFromCheckpointRestoresGoTypes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		ch   Channel
		data string
		want any
	}{
		{name: "int", ch: LastValueOf[int](), data: `7`, want: 7},
		{name: "uint8", ch: LastValueOf[uint8](), data: `7`, want: uint8(7)},
		{name: "struct", ch: LastValueOf[point](), data: `{"x":1,"y":2}`, want: point{1, 2}},
		{name: "pointer", ch: LastValueOf[*point](), data: `{"x":1}`, want: &point{X: 1}},
		{name: "named slice", ch: BinaryOperatorOf[tags](AppendReducer), data: `["a"]`, want: tags{"a"}},
		{name: "any keeps JSON types", ch: NewAnyValue(nil), data: `{"n":1}`, want: map[string]any{"n": 1.0}},
		{name: "topic of ints", ch: TopicOf[int](true), data: `[1,2]`, want: []int{1, 2}},
		{name: "after-finish value", ch: LastValueAfterFinishOf[int](), data: `{"value":4,"finished":true}`, want: 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ch, err := tc.ch.FromCheckpoint(json.RawMessage(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if got := mustGet(t, ch); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("restored %#v (%T), want %#v (%T)", got, got, tc.want, tc.want)
			}
			if _, err := ch.Update([]any{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestFromCheckpointWithoutData(t *testing.T) {
	t.Parallel()
	for _, data := range []json.RawMessage{nil, {}, json.RawMessage("  ")} {
		for _, proto := range allKinds() {
			ch, err := proto.FromCheckpoint(data)
			if err != nil {
				t.Fatalf("%T.FromCheckpoint(%q): %v", proto, data, err)
			}
			_, isBinop := ch.(*BinaryOperator)
			if ch.IsAvailable() != isBinop {
				t.Errorf("%T.FromCheckpoint(%q): available = %v, want %v", proto, data, ch.IsAvailable(), isBinop)
			}
		}
	}
	// A typed BinaryOperator restores to its zero value.
	ch, err := BinaryOperatorOf[[]int](AppendReducer).FromCheckpoint(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, ch); !reflect.DeepEqual(got, []int{}) {
		t.Fatalf("restored %#v, want []int{}", got)
	}
}

// allKinds returns one channel of each kind, already holding data, so that
// FromCheckpoint is seen to build a new channel rather than reuse state.
func allKinds() []Channel {
	chans := []Channel{
		LastValueOf[int](),
		LastValueAfterFinishOf[int](),
		EphemeralValueOf[int](true),
		UntrackedValueOf[int](true),
		AnyValueOf[int](),
		BinaryOperatorOf[int](AddReducer),
		TopicOf[int](true),
	}
	for _, c := range chans {
		_, _ = c.Update([]any{1})
	}
	barrier := NewNamedBarrierValue([]string{"a"})
	_, _ = barrier.Update([]any{"a"})
	after := NewNamedBarrierValueAfterFinish([]string{"a"})
	_, _ = after.Update([]any{"a"})
	after.Finish()
	return append(chans, barrier, after)
}

func TestFromCheckpointMalformed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		ch   Channel
		data string
	}{
		{name: "LastValue truncated", ch: LastValueOf[int](), data: `{`},
		{name: "LastValue wrong type", ch: LastValueOf[int](), data: `"seven"`},
		{name: "LastValue fraction for int", ch: LastValueOf[int](), data: `1.5`},
		{name: "LastValue trailing garbage", ch: LastValueOf[int](), data: `1 2`},
		{name: "LastValue struct from array", ch: LastValueOf[point](), data: `[1]`},
		{name: "LastValueAfterFinish not an object", ch: LastValueAfterFinishOf[int](), data: `5`},
		{name: "LastValueAfterFinish without value", ch: LastValueAfterFinishOf[int](), data: `{"finished":true}`},
		{name: "LastValueAfterFinish bad value", ch: LastValueAfterFinishOf[int](), data: `{"value":"x","finished":true}`},
		{name: "LastValueAfterFinish bad finished", ch: LastValueAfterFinishOf[int](), data: `{"value":1,"finished":"yes"}`},
		{name: "EphemeralValue bad", ch: EphemeralValueOf[bool](true), data: `tru`},
		{name: "AnyValue bad", ch: NewAnyValue(nil), data: `{"a":}`},
		{name: "BinaryOperator bad", ch: BinaryOperatorOf[[]string](AppendReducer), data: `[1,2]`},
		{name: "Topic not an array", ch: TopicOf[int](false), data: `{"a":1}`},
		{name: "Topic bad element", ch: TopicOf[int](false), data: `[1,"x"]`},
		{name: "Topic truncated", ch: TopicOf[int](false), data: `[1,`},
		{name: "barrier not an array", ch: NewNamedBarrierValue([]string{"a"}), data: `"a"`},
		{name: "barrier non-string name", ch: NewNamedBarrierValue([]string{"a"}), data: `[1]`},
		{name: "barrier unknown name", ch: NewNamedBarrierValue([]string{"a"}), data: `["a","zz"]`},
		{name: "after-finish barrier as list", ch: NewNamedBarrierValueAfterFinish([]string{"a"}), data: `["a"]`},
		{name: "after-finish barrier unknown name", ch: NewNamedBarrierValueAfterFinish([]string{"a"}), data: `{"seen":["b"],"finished":false}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ch, err := tc.ch.FromCheckpoint(json.RawMessage(tc.data))
			if !errors.Is(err, ErrInvalidCheckpoint) || ch != nil {
				t.Fatalf("FromCheckpoint(%s) = (%v, %v), want nil and an error wrapping ErrInvalidCheckpoint", tc.data, ch, err)
			}
		})
	}
}

func TestUntrackedValueIgnoresSavedData(t *testing.T) {
	t.Parallel()
	ch, err := UntrackedValueOf[int](true).FromCheckpoint(json.RawMessage(`not even json`))
	if err != nil || ch.IsAvailable() {
		t.Fatalf("FromCheckpoint = (available %v, %v), want an empty channel", ch != nil && ch.IsAvailable(), err)
	}
}

// StateGraph's join channels: c runs once after a and b, however their
// writes are spread over steps.
func TestBarrierJoinsAcrossSteps(t *testing.T) {
	t.Parallel()
	ch := NewNamedBarrierValue([]string{"a", "b2"})
	mustUpdate(t, ch, "a") // step 1: a and b1 ran, only a writes the join
	if ch.IsAvailable() {
		t.Fatal("available after one of two names")
	}
	// Save and restore mid-way, as a run interrupted here would.
	data, _, err := ch.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	restored, err := ch.FromCheckpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	mustUpdate(t, restored, "b2")
	if !restored.IsAvailable() {
		t.Fatal("not available after both names")
	}
	if !restored.Consume() || restored.IsAvailable() {
		t.Fatal("consume did not reset the barrier")
	}
}

// celsius saves itself as "21C" through pointer-receiver methods, which
// encoding/json only uses on addressable values.
type celsius struct{ deg int }

func (c *celsius) MarshalJSON() ([]byte, error) { return json.Marshal(fmt.Sprintf("%dC", c.deg)) }

func (c *celsius) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	_, err := fmt.Sscanf(s, "%dC", &c.deg)
	return err
}

func TestCheckpointUsesPointerReceiverMarshalers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		ch    Channel
		write any
		saved string
		want  any
	}{
		{name: "LastValue", ch: LastValueOf[celsius](), write: celsius{21}, saved: `"21C"`, want: celsius{21}},
		{name: "BinaryOperator", ch: BinaryOperatorOf[celsius](ReducerFunc(func(_, n celsius) celsius { return n })), write: celsius{5}, saved: `"5C"`, want: celsius{5}},
		{name: "Topic", ch: TopicOf[celsius](true), write: celsius{3}, saved: `["3C"]`, want: []celsius{{3}}},
		{name: "LastValueAfterFinish", ch: LastValueAfterFinishOf[celsius](), write: celsius{7}, saved: `{"value":"7C","finished":false}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mustUpdate(t, tc.ch, tc.write)
			data, _, err := tc.ch.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != tc.saved {
				t.Fatalf("saved %s, want %s", data, tc.saved)
			}
			restored, err := tc.ch.FromCheckpoint(data)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				return
			}
			if got := mustGet(t, restored); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("restored %#v, want %#v", got, tc.want)
			}
		})
	}
}

// Empty leaves a channel as FromCheckpoint(nil) on it returns a new one:
// empty, saving nothing, and taking writes as a new channel does.
func TestEmptyIsFromCheckpointWithoutData(t *testing.T) {
	t.Parallel()
	for _, proto := range allKinds() {
		e, ok := proto.(Emptier)
		if !ok {
			continue
		}
		want, err := proto.FromCheckpoint(nil)
		if err != nil {
			t.Fatal(err)
		}
		e.Empty()
		got := proto
		if got.IsAvailable() != want.IsAvailable() {
			t.Errorf("%T: available after Empty = %v, want %v", got, got.IsAvailable(), want.IsAvailable())
		}
		gv, gok := got.Get()
		wv, wok := want.Get()
		if gok != wok || !reflect.DeepEqual(gv, wv) {
			t.Errorf("%T: Get after Empty = %v, %v; want %v, %v", got, gv, gok, wv, wok)
		}
		gd, gsave, _ := got.Checkpoint()
		wd, wsave, _ := want.Checkpoint()
		if gsave != wsave || string(gd) != string(wd) {
			t.Errorf("%T: Checkpoint after Empty = %s, %v; want %s, %v", got, gd, gsave, wd, wsave)
		}
		// Both take the same writes the same way.
		var write []any
		if _, barrier := got.(*NamedBarrierValue); barrier {
			write = []any{"a"}
		} else {
			write = []any{2}
		}
		gc, gerr := got.Update(write)
		wc, werr := want.Update(write)
		gv, _ = got.Get()
		wv, _ = want.Get()
		if gc != wc || (gerr == nil) != (werr == nil) || !reflect.DeepEqual(gv, wv) {
			t.Errorf("%T: Update after Empty = %v, %v (value %v); want %v, %v (value %v)", got, gc, gerr, gv, wc, werr, wv)
		}
	}
}
