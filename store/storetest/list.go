package storetest

import (
	"reflect"
	"testing"

	"github.com/superstep-dev/superstep/store"
)

func listNS(e *env, op store.ListNamespacesOp) []string {
	e.t.Helper()
	out := []string{}
	for _, ns := range e.do(op).Namespaces {
		out = append(out, store.JoinNamespace(ns))
	}
	return out
}

func testListNamespaces(t *testing.T, open Opener) {
	e := setup(t, open, nil)
	for _, ns := range [][]string{
		{"a", "b", "c"}, {"a", "b", "d"}, {"a", "x", "c"}, {"a"}, {"b", "c"}, {"c"}, {"a", "b", "c", "d"},
		{"用户", "データ", "데이터"}, {"пользователь", "दस्तावेज़"},
	} {
		e.put(ns, "k1", map[string]any{})
		e.put(ns, "k2", map[string]any{})
	}
	prefix := func(p ...string) store.MatchCondition { return store.MatchCondition{Type: store.MatchPrefix, Path: p} }
	suffix := func(p ...string) store.MatchCondition { return store.MatchCondition{Type: store.MatchSuffix, Path: p} }
	for _, tc := range []struct {
		name string
		op   store.ListNamespacesOp
		want []string
	}{
		{"all", store.ListNamespacesOp{}, []string{"a", "a.b.c", "a.b.c.d", "a.b.d", "a.x.c", "b.c", "c", "пользователь.दस्तावेज़", "用户.データ.데이터"}},
		{"prefix", store.ListNamespacesOp{MatchConditions: []store.MatchCondition{prefix("a", "b")}}, []string{"a.b.c", "a.b.c.d", "a.b.d"}},
		{"prefix wildcard", store.ListNamespacesOp{MatchConditions: []store.MatchCondition{prefix("a", "*", "c")}}, []string{"a.b.c", "a.b.c.d", "a.x.c"}},
		{"suffix", store.ListNamespacesOp{MatchConditions: []store.MatchCondition{suffix("c")}}, []string{"a.b.c", "a.x.c", "b.c", "c"}},
		{"suffix wildcard", store.ListNamespacesOp{MatchConditions: []store.MatchCondition{suffix("*", "c")}}, []string{"a.b.c", "a.x.c", "b.c"}},
		{"both", store.ListNamespacesOp{MatchConditions: []store.MatchCondition{prefix("a"), suffix("c")}}, []string{"a.b.c", "a.x.c"}},
		{"wildcard is one label", store.ListNamespacesOp{MatchConditions: []store.MatchCondition{prefix("*", "*", "*", "*", "*")}}, []string{}},
		{"max depth", store.ListNamespacesOp{MaxDepth: 2}, []string{"a", "a.b", "a.x", "b.c", "c", "пользователь.दस्तावेज़", "用户.データ"}},
		{"max depth with prefix", store.ListNamespacesOp{MaxDepth: 1, MatchConditions: []store.MatchCondition{prefix("a", "b")}}, []string{"a"}},
		{"limit offset", store.ListNamespacesOp{Limit: 2, Offset: 1}, []string{"a.b.c", "a.b.c.d"}},
		{"offset past end", store.ListNamespacesOp{Offset: 50}, []string{}},
		{"non-ASCII", store.ListNamespacesOp{MatchConditions: []store.MatchCondition{prefix("用户", "*")}}, []string{"用户.データ.데이터"}},
		{"non-ASCII suffix", store.ListNamespacesOp{MatchConditions: []store.MatchCondition{suffix("दस्तावेज़")}}, []string{"пользователь.दस्तावेज़"}},
	} {
		if got := listNS(e, tc.op); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func testListNamespacesEscaping(t *testing.T, open Opener) {
	e := setup(t, open, nil)
	for _, ns := range [][]string{{"user_1"}, {"userX1"}, {"a%b"}, {"axxb"}, {"foo"}, {"foobar"}, {"alice\n"}, {"alice"}, {`a\b`}, {"a^b$"}, {"a(b)"}, {"ab"}} {
		e.put(ns, "k", map[string]any{})
	}
	for _, tc := range []struct {
		label string
		want  []string
	}{
		{"user_1", []string{"user_1"}},
		{"a%b", []string{"a%b"}},
		{"foo", []string{"foo"}},
		{"alice", []string{"alice"}},
		{"alice\n", []string{"alice\n"}},
		{`a\b`, []string{`a\b`}},
		{"a^b$", []string{"a^b$"}},
		{"a(b)", []string{"a(b)"}},
		{"a.*", nil},
	} {
		if tc.want == nil {
			tc.want = []string{}
		}
		for _, typ := range []store.MatchType{store.MatchPrefix, store.MatchSuffix} {
			op := store.ListNamespacesOp{MatchConditions: []store.MatchCondition{{Type: typ, Path: []string{tc.label}}}}
			if tc.label == "a.*" {
				if _, err := store.Do(ctx, e.s, op); err == nil {
					t.Errorf("%s %q: no error for a label with a dot", typ, tc.label)
				}
				continue
			}
			if got := listNS(e, op); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s %q: got %q, want %q", typ, tc.label, got, tc.want)
			}
		}
	}
}
