package channels

import (
	"reflect"
	"testing"
)

// Channels that grow slices append in place when they have spare capacity
// (that keeps long lists linear). These tests check that neither a Copy nor
// a value returned by Get can ever observe or disturb that.

func mustUpdate(t *testing.T, ch Channel, values ...any) {
	t.Helper()
	if _, err := ch.Update(values); err != nil {
		t.Fatalf("Update(%v): %v", values, err)
	}
}

func mustGet(t *testing.T, ch Channel) any {
	t.Helper()
	v, ok := ch.Get()
	if !ok {
		t.Fatal("Get: channel is empty")
	}
	return v
}

func TestCopiesAndReadsStayIndependent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		new  func() Channel
		// fill brings the channel to a state with spare capacity.
		fill [][]any
		// then: the original gets origWrite, the copy copyWrite.
		origWrite, copyWrite []any
		wantOrig, wantCopy   any
	}{
		{
			name:      "append reducer, both sides append",
			new:       func() Channel { return BinaryOperatorOf[[]string](AppendReducer) },
			fill:      [][]any{{"a"}, {"b"}, {"c"}}, // cap 4 after three appends
			origWrite: u("orig"), copyWrite: u("copy"),
			wantOrig: []string{"a", "b", "c", "orig"}, wantCopy: []string{"a", "b", "c", "copy"},
		},
		{
			name:      "append reducer on []any",
			new:       func() Channel { return BinaryOperatorOf[[]any](AppendReducer) },
			fill:      [][]any{{"a"}, {"b"}, {"c"}},
			origWrite: u("orig"), copyWrite: u("copy"),
			wantOrig: []any{"a", "b", "c", "orig"}, wantCopy: []any{"a", "b", "c", "copy"},
		},
		{
			name:      "append reducer on a reflect-handled type",
			new:       func() Channel { return BinaryOperatorOf[[]point](AppendReducer) },
			fill:      [][]any{{point{1, 1}}, {point{2, 2}}, {point{3, 3}}},
			origWrite: u(point{8, 8}), copyWrite: u(point{9, 9}),
			wantOrig: []point{{1, 1}, {2, 2}, {3, 3}, {8, 8}}, wantCopy: []point{{1, 1}, {2, 2}, {3, 3}, {9, 9}},
		},
		{
			name:      "accumulating topic",
			new:       func() Channel { return TopicOf[int](true) },
			fill:      [][]any{{1}, {2}, {3}},
			origWrite: u(8), copyWrite: u(9),
			wantOrig: []int{1, 2, 3, 8}, wantCopy: []int{1, 2, 3, 9},
		},
		{
			name:      "resetting topic reuses its array only when unshared",
			new:       func() Channel { return NewTopic(nil, false) },
			fill:      [][]any{{"a", "b", "c"}},
			origWrite: u("orig"), copyWrite: u("copy"),
			wantOrig: []any{"orig"}, wantCopy: []any{"copy"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name+" (copy)", func(t *testing.T) {
			t.Parallel()
			orig := tc.new()
			for _, vs := range tc.fill {
				mustUpdate(t, orig, vs...)
			}
			cp := orig.Copy()
			before := deepCopy(mustGet(t, cp))
			mustUpdate(t, orig, tc.origWrite...)
			if got := mustGet(t, cp); !reflect.DeepEqual(got, before) {
				t.Fatalf("updating the original changed the copy: %#v, want %#v", got, before)
			}
			mustUpdate(t, cp, tc.copyWrite...)
			if got := mustGet(t, orig); !reflect.DeepEqual(got, tc.wantOrig) {
				t.Errorf("original = %#v, want %#v", got, tc.wantOrig)
			}
			if got := mustGet(t, cp); !reflect.DeepEqual(got, tc.wantCopy) {
				t.Errorf("copy = %#v, want %#v", got, tc.wantCopy)
			}
		})
		t.Run(tc.name+" (read)", func(t *testing.T) {
			t.Parallel()
			ch := tc.new()
			for _, vs := range tc.fill {
				mustUpdate(t, ch, vs...)
			}
			read := mustGet(t, ch)
			want := deepCopy(read)
			// A reader appending to what it got must not write into the
			// channel, and the channel's next update must not show up in
			// what the reader holds.
			grown := reflect.Append(reflect.ValueOf(read), reflect.Zero(reflect.TypeOf(read).Elem()))
			mustUpdate(t, ch, tc.origWrite...)
			if !reflect.DeepEqual(read, want) {
				t.Errorf("value read before the update changed: %#v, want %#v", read, want)
			}
			if got := mustGet(t, ch); !reflect.DeepEqual(got, tc.wantOrig) {
				t.Errorf("channel = %#v after a reader appended to its copy, want %#v", got, tc.wantOrig)
			}
			if last := grown.Index(grown.Len() - 1); !last.IsZero() {
				t.Errorf("the channel's update wrote %v into the slice a reader had appended to", last)
			}
		})
	}
}

// deepCopy copies a slice value's elements into a new slice.
func deepCopy(v any) any {
	rv := reflect.ValueOf(v)
	out := reflect.MakeSlice(rv.Type(), rv.Len(), rv.Len())
	reflect.Copy(out, rv)
	return out.Interface()
}
