package storetest

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/store"
)

func testSearchPrefixBoundaries(t *testing.T, open Opener) {
	e := setup(t, open, nil)
	all := [][]string{
		{"foo"}, {"foobar"}, {"foo", "bar"}, {"user_1"}, {"userX1"}, {"a%b"}, {"axxb"},
		{"alice\n"}, {"alice"}, {"a\\b"}, {"a\\\\b"}, {"用户", "データ"}, {"用户x"},
	}
	for _, ns := range all {
		e.put(ns, "k", map[string]any{"ns": store.JoinNamespace(ns)})
	}
	for _, tc := range []struct {
		prefix []string
		want   []string // joined namespaces, sorted
	}{
		{[]string{"foo"}, []string{"foo", "foo.bar"}},
		{[]string{"foo", "bar"}, []string{"foo.bar"}},
		{[]string{"user_1"}, []string{"user_1"}},
		{[]string{"a%b"}, []string{"a%b"}},
		{[]string{"alice"}, []string{"alice"}},
		{[]string{"alice\n"}, []string{"alice\n"}},
		{[]string{"a\\b"}, []string{"a\\b"}},
		{[]string{"用户"}, []string{"用户.データ"}},
		{[]string{"fo"}, nil},
	} {
		got := []string{}
		for _, it := range e.search(store.SearchOp{NamespacePrefix: tc.prefix, Limit: 100}) {
			got = append(got, store.JoinNamespace(it.Namespace))
		}
		slices.Sort(got)
		if tc.want == nil {
			tc.want = []string{}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("prefix %q: got %q, want %q", tc.prefix, got, tc.want)
		}
	}
	if got := e.search(store.SearchOp{Limit: 100}); len(got) != len(all) {
		t.Errorf("empty prefix returned %d items, want all %d", len(got), len(all))
	}
}

func testSearchOrderAndPaging(t *testing.T, open Opener) {
	e := setup(t, open, nil)
	// Items 0..11 put one minute apart, plus two with the same timestamp
	// to check the namespace/key tie-break.
	var want []string
	for i := range 12 {
		k := string(rune('a' + i))
		e.put([]string{"p", "q"}, k, map[string]any{"i": i})
		want = append([]string{k}, want...)
		e.clock.Advance(time.Minute)
	}
	_, err := e.s.Batch(ctx, []store.Op{
		store.PutOp{Namespace: []string{"p"}, Key: "z", Value: map[string]any{}},
		store.PutOp{Namespace: []string{"p"}, Key: "y", Value: map[string]any{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want = append([]string{"y", "z"}, want...)

	first := e.search(store.SearchOp{NamespacePrefix: []string{"p"}})
	if got := keys(first); !reflect.DeepEqual(got, want[:store.DefaultSearchLimit]) {
		t.Errorf("default page = %v, want %v", got, want[:store.DefaultSearchLimit])
	}
	for _, it := range first {
		if it.Score != nil {
			t.Errorf("%s has score %v without a query, want nil", it.Key, *it.Score)
		}
	}
	var paged []string
	for off := 0; ; off += 3 {
		page := e.search(store.SearchOp{NamespacePrefix: []string{"p"}, Limit: 3, Offset: off})
		if len(page) == 0 {
			break
		}
		paged = append(paged, keys(page)...)
	}
	if !reflect.DeepEqual(paged, want) {
		t.Errorf("pages of 3 = %v, want %v", paged, want)
	}
	if got := e.search(store.SearchOp{NamespacePrefix: []string{"p"}, Offset: 100}); len(got) != 0 {
		t.Errorf("offset past the end = %v, want empty", keys(got))
	}
}

// filterDocs are the documents testFilters searches.
var filterDocs = map[string]map[string]any{
	"k1": {"n": 9, "s": "9", "tag": "a", "user": map[string]any{"age": 30, "name": "ann"}, "a.b": 1, "score": nil, "flag": true, "list": []any{1, 2}, "lang": "日本語"},
	"k2": {"n": 10, "s": "10", "tag": "b", "user": map[string]any{"age": 17}, "score": 0.5, "flag": false, "a": map[string]any{"b": 2}},
	"k3": {"n": "11", "tag": "a", "user": "bob", "lang": "русский"},
	"k4": {"n": -2.5, "tag": "A", "user-level": "x", "123abc": true, "a\\b": "back"},
}

func testFilters(t *testing.T, open Opener) {
	e := setup(t, open, nil)
	for k, v := range filterDocs {
		e.put([]string{"f"}, k, v)
	}
	for _, tc := range []struct {
		filter map[string]any
		want   []string
	}{
		{map[string]any{"n": map[string]any{"$gt": 9.5}}, []string{"k2"}},
		{map[string]any{"n": map[string]any{"$gte": 9}}, []string{"k1", "k2"}},
		{map[string]any{"n": map[string]any{"$lt": 10}}, []string{"k1", "k4"}},
		{map[string]any{"n": map[string]any{"$lte": -2.5}}, []string{"k4"}},
		{map[string]any{"n": map[string]any{"$gt": 8, "$lt": 10}}, []string{"k1"}},
		// Strings compare as strings, bytewise: "10" < "9".
		{map[string]any{"s": map[string]any{"$lt": "9"}}, []string{"k2"}},
		{map[string]any{"s": map[string]any{"$gte": "9"}}, []string{"k1"}},
		{map[string]any{"n": map[string]any{"$gt": "1"}}, []string{"k3"}},
		{map[string]any{"tag": map[string]any{"$lt": "a"}}, []string{"k4"}},
		{map[string]any{"lang": map[string]any{"$gt": "z"}}, []string{"k1", "k3"}},
		{map[string]any{"n": 9}, []string{"k1"}},
		{map[string]any{"n": 9.0}, []string{"k1"}},
		{map[string]any{"n": "9"}, nil},
		{map[string]any{"tag": "a"}, []string{"k1", "k3"}},
		{map[string]any{"tag": map[string]any{"$eq": "a"}}, []string{"k1", "k3"}},
		{map[string]any{"tag": map[string]any{"$ne": "a"}}, []string{"k2", "k4"}},
		{map[string]any{"missing": map[string]any{"$ne": 1}}, []string{"k1", "k2", "k3", "k4"}},
		{map[string]any{"missing": map[string]any{"$lt": 1}}, nil},
		{map[string]any{"user.age": map[string]any{"$gte": 18}}, []string{"k1"}},
		{map[string]any{"user": map[string]any{"age": 17}}, []string{"k2"}},
		{map[string]any{"user": "bob"}, []string{"k3"}},
		{map[string]any{"user": map[string]any{"$eq": map[string]any{"age": 17}}}, []string{"k2"}},
		{map[string]any{`a\.b`: 1}, []string{"k1"}},
		{map[string]any{"a.b": 2}, []string{"k2"}},
		{map[string]any{`a\\b`: "back"}, []string{"k4"}},
		{map[string]any{"user-level": "x"}, []string{"k4"}},
		{map[string]any{"123abc": true}, []string{"k4"}},
		{map[string]any{"score": nil}, []string{"k1"}},
		{map[string]any{"score": map[string]any{"$ne": nil}}, []string{"k2", "k3", "k4"}},
		{map[string]any{"flag": false}, []string{"k2"}},
		{map[string]any{"list": []any{1, 2}}, []string{"k1"}},
		{map[string]any{"list": []any{2, 1}}, nil},
		{map[string]any{"lang": "русский"}, []string{"k3"}},
		{map[string]any{"tag": "a", "user.age": map[string]any{"$lt": 100}}, []string{"k1"}},
	} {
		got := keys(e.search(store.SearchOp{NamespacePrefix: []string{"f"}, Filter: tc.filter, Limit: 100}))
		slices.Sort(got)
		if tc.want == nil {
			tc.want = []string{}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("filter %v: got %v, want %v", tc.filter, got, tc.want)
		}
	}
}

func testFilterErrors(t *testing.T, open Opener) {
	e := setup(t, open, nil)
	for _, tc := range []struct {
		filter  map[string]any
		wantMsg string
	}{
		{map[string]any{"n": map[string]any{"$regex": "x"}}, `unknown operator "$regex"`},
		{map[string]any{"$or": []any{}}, `operator "$or" must be inside`},
		{map[string]any{"n": map[string]any{"$gt": true}}, "needs a number or a string"},
		{map[string]any{"n": map[string]any{"$lt": nil}}, "needs a number or a string"},
		{map[string]any{"n": map[string]any{"$gt": 1, "x": 2}}, "mixes operators"},
		{map[string]any{"n": map[string]any{}}, "empty object"},
		{map[string]any{"": 1}, "empty key"},
		{map[string]any{"a..b": 1}, "empty field name"},
		{map[string]any{`a\b`: 1}, "backslash"},
		{map[string]any{"a.b": 1, "a": map[string]any{"b": 2}}, "given twice"},
		{map[string]any{"s": "a\x00"}, "NUL"},
		{map[string]any{strings.Repeat("a.", store.MaxFilterDepth) + "z": 1}, "deep"},
	} {
		_, err := store.Search(ctx, e.s, store.SearchOp{Filter: tc.filter})
		if !errors.Is(err, store.ErrInvalidFilter) || !strings.Contains(err.Error(), tc.wantMsg) {
			t.Errorf("filter %q: err = %v, want ErrInvalidFilter mentioning %q", tc.filter, err, tc.wantMsg)
		}
	}
}

// testFilterInjectionKeys feeds the keys of past SQL-injection advisories
// (CVE-2025-67644, CVE-2025-8709) to the filter: they are ordinary field
// names that match nothing (or, when malformed as a path, a clear
// ErrInvalidFilter), and the store is intact afterwards.
func testFilterInjectionKeys(t *testing.T, open Opener) {
	e := setup(t, open, nil)
	e.put([]string{"s"}, "k", map[string]any{"access": "private"})
	for _, key := range []string{
		`x') OR '1'='1`,
		`x') OR 1=1 --`,
		`x') UNION SELECT 1,2,3,4,5,6,7 --`,
		`access') = 'public' OR '1'='1' OR json_extract(value, '$.`,
		`'; DROP TABLE store_items; --`,
		`access'->>'x`,
	} {
		for _, op := range []store.Operator{store.OpEq, store.OpNe, store.OpGt} {
			got, err := store.Search(ctx, e.s, store.SearchOp{Filter: map[string]any{key: map[string]any{string(op): "public"}}})
			if errors.Is(err, store.ErrInvalidFilter) {
				continue
			}
			if err != nil {
				t.Errorf("key %q %s: %v", key, op, err)
				continue
			}
			wantN := 0
			if op == store.OpNe {
				wantN = 1 // the field is missing, so "not equal" holds
			}
			if len(got) != wantN {
				t.Errorf("key %q %s matched %d items, want %d", key, op, len(got), wantN)
			}
		}
	}
	if e.get([]string{"s"}, "k") == nil {
		t.Error("the item is gone after the injection battery")
	}
}
