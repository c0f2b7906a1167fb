package channels

import (
	"reflect"
	"testing"
)

// The batched fold of a step's appends gives exactly what folding them one
// by one gives, and Overwrites (including their JSON map form) still win.
func TestAppendBatchMatchesOneByOne(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		typ    reflect.Type
		values []any
		want   any
	}{
		{"ints", reflect.TypeFor[[]int](), []any{1, []int{2, 3}, 4}, []int{1, 2, 3, 4}},
		{"strings", reflect.TypeFor[[]string](), []any{"a", []string{}, "b", []string{"c"}}, []string{"a", "b", "c"}},
		{"maps", reflect.TypeFor[[]map[string]any](), []any{map[string]any{"x": 1.0}, []map[string]any{{"y": 2.0}}}, []map[string]any{{"x": 1.0}, {"y": 2.0}}},
		{"map overwrite", reflect.TypeFor[[]map[string]any](), []any{map[string]any{"x": 1.0}, map[string]any{"__overwrite__": []map[string]any{{"z": 3.0}}}}, []map[string]any{{"z": 3.0}}},
		{"overwrite", reflect.TypeFor[[]int](), []any{1, Overwrite{Value: []int{9}}, 2}, []int{9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Through FromCheckpoint, as the loop restores its channels.
			restored, err := NewBinaryOperator(tc.typ, AppendReducer).FromCheckpoint(nil)
			if err != nil {
				t.Fatal(err)
			}
			batched := restored.(*BinaryOperator)
			if !batched.appends {
				t.Fatal("a restored append channel lost its batching")
			}
			if _, err := batched.Update(tc.values); err != nil {
				t.Fatal(err)
			}
			got, _ := batched.Get()
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("batched fold = %#v, want %#v", got, tc.want)
			}
			single := NewBinaryOperator(tc.typ, AppendReducer)
			for _, v := range tc.values {
				if _, ok := overwriteOf(v); ok {
					single = NewBinaryOperator(tc.typ, AppendReducer)
					if _, err := single.Update([]any{v}); err != nil {
						t.Fatal(err)
					}
					break
				}
				if _, err := single.Update([]any{v}); err != nil {
					t.Fatal(err)
				}
			}
			one, _ := single.Get()
			if tc.name != "map overwrite" && tc.name != "overwrite" && !reflect.DeepEqual(got, one) {
				t.Fatalf("batched %#v differs from one-by-one %#v", got, one)
			}
		})
	}
}
