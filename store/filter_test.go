package store_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/superstep-dev/superstep/store"
)

func TestParseFilterCanonical(t *testing.T) {
	t.Parallel()
	f, err := store.ParseFilter(map[string]any{
		"a": 1, "user": map[string]any{"age": map[string]any{"$gte": 18, "$lt": 65}}, `x\.y`: "s",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := store.Filter{
		{Path: []string{"a"}, Op: store.OpEq, Value: 1.0},
		{Path: []string{"user", "age"}, Op: store.OpGte, Value: 18.0},
		{Path: []string{"user", "age"}, Op: store.OpLt, Value: 65.0},
		{Path: []string{"x.y"}, Op: store.OpEq, Value: "s"},
	}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("parsed = %+v, want %+v", f, want)
	}
	wantMap := map[string]any{
		"a": map[string]any{"$eq": 1.0}, "user.age": map[string]any{"$gte": 18.0, "$lt": 65.0}, `x\.y`: map[string]any{"$eq": "s"},
	}
	if got := f.Map(); !reflect.DeepEqual(got, wantMap) {
		t.Errorf("Map() = %v, want %v", got, wantMap)
	}
}

func TestFilterLimits(t *testing.T) {
	t.Parallel()
	m := map[string]any{}
	for i := range store.MaxFilterConditions + 1 {
		m[string(rune('a'+i%26))+string(rune('a'+i/26))] = i
	}
	if _, err := store.ParseFilter(m); !errors.Is(err, store.ErrInvalidFilter) {
		t.Errorf("%d conditions: %v, want ErrInvalidFilter", len(m), err)
	}
	deep := map[string]any{"v": 1}
	for range store.MaxFilterDepth {
		deep = map[string]any{"n": deep}
	}
	if _, err := store.ParseFilter(deep); !errors.Is(err, store.ErrInvalidFilter) {
		t.Errorf("nesting past the limit: %v, want ErrInvalidFilter", err)
	}
}

// FuzzParseFilter feeds arbitrary JSON documents as filters: parsing never
// panics, errors wrap ErrInvalidFilter, the canonical print parses back to
// the same filter, and matching is deterministic.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{
		`{"a":1}`, `{"a":{"$gt":1,"$lt":"x"}}`, `{"a.b":{"$ne":null}}`, `{"a":{"b":{"c":[1,2]}}}`,
		`{"$or":[]}`, `{"a":{"$regex":"x"}}`, `{"a\\.b":true}`, `{"":1}`, `{"a":{"$eq":{"$gt":1}}}`,
	} {
		f.Add(s)
	}
	doc := map[string]any{"a": 1.0, "b": map[string]any{"c": "x"}, "a.b": true}
	f.Fuzz(func(t *testing.T, s string) {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) != nil {
			return
		}
		flt, err := store.ParseFilter(m)
		if err != nil {
			if !errors.Is(err, store.ErrInvalidFilter) {
				t.Fatalf("%s: error %v does not wrap ErrInvalidFilter", s, err)
			}
			return
		}
		again, err := store.ParseFilter(flt.Map())
		if err != nil {
			t.Fatalf("%s: canonical form %v does not parse: %v", s, flt.Map(), err)
		}
		if !reflect.DeepEqual(flt, again) {
			t.Fatalf("%s: round trip changed the filter: %+v vs %+v", s, flt, again)
		}
		if flt.Match(doc) != again.Match(doc) {
			t.Fatalf("%s: round trip changed the match", s)
		}
	})
}
