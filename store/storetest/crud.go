package storetest

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/store"
)

func testPutGetDelete(t *testing.T, open Opener) {
	e := setup(t, open, nil)
	ns := []string{"users", "alice"}
	start := e.clock.Now()
	e.put(ns, "prefs", map[string]any{"theme": "dark", "size": 3, "tags": []string{"a", "b"}, "nested": map[string]any{"ok": true}})
	got := e.get(ns, "prefs")
	if got == nil {
		t.Fatal("get after put: nil")
	}
	want := map[string]any{"theme": "dark", "size": float64(3), "tags": []any{"a", "b"}, "nested": map[string]any{"ok": true}}
	if !reflect.DeepEqual(got.Value, want) {
		t.Errorf("value = %#v, want %#v (as after a JSON round trip)", got.Value, want)
	}
	if !reflect.DeepEqual(got.Namespace, ns) || got.Key != "prefs" {
		t.Errorf("namespace/key = %v/%s", got.Namespace, got.Key)
	}
	if !got.CreatedAt.Equal(start) || !got.UpdatedAt.Equal(start) {
		t.Errorf("created/updated = %v/%v, want both %v", got.CreatedAt, got.UpdatedAt, start)
	}

	// Mutating a returned value does not change the store.
	got.Value["theme"] = "light"
	if again := e.get(ns, "prefs"); again.Value["theme"] != "dark" {
		t.Errorf("store changed through a returned value: %v", again.Value["theme"])
	}

	e.clock.Advance(time.Minute)
	e.put(ns, "prefs", map[string]any{"theme": "light"})
	got = e.get(ns, "prefs")
	if got.Value["theme"] != "light" || len(got.Value) != 1 {
		t.Errorf("re-put value = %v, want replaced by {theme: light}", got.Value)
	}
	if !got.CreatedAt.Equal(start) || !got.UpdatedAt.Equal(start.Add(time.Minute)) {
		t.Errorf("after re-put created/updated = %v/%v, want %v/%v", got.CreatedAt, got.UpdatedAt, start, start.Add(time.Minute))
	}

	if it := e.get(ns, "missing"); it != nil {
		t.Errorf("get missing key = %+v, want nil", it)
	}
	if it := e.get([]string{"users"}, "prefs"); it != nil {
		t.Errorf("get in parent namespace = %+v, want nil", it)
	}
	if err := store.Delete(ctx, e.s, ns, "prefs"); err != nil {
		t.Fatal(err)
	}
	if it := e.get(ns, "prefs"); it != nil {
		t.Errorf("get after delete = %+v, want nil", it)
	}
	if err := store.Delete(ctx, e.s, ns, "prefs"); err != nil {
		t.Errorf("deleting a missing item: %v, want no error", err)
	}
	if err := store.Put(ctx, e.s, ns, "k", nil); !errors.Is(err, store.ErrInvalidValue) {
		t.Errorf("Put(nil) = %v, want ErrInvalidValue", err)
	}
}

func testInvalidNamespacesAndKeys(t *testing.T, open Opener) {
	e := setup(t, open, nil)
	for _, tc := range []struct {
		name    string
		ns      []string
		key     string
		wantErr error
		wantMsg string
	}{
		{"empty namespace", nil, "k", store.ErrInvalidNamespace, "at least one label"},
		{"empty label", []string{"a", ""}, "k", store.ErrInvalidNamespace, "label 1 is empty"},
		{"dot in label", []string{"a.b"}, "k", store.ErrInvalidNamespace, `contains "."`},
		{"reserved root", []string{"langgraph", "x"}, "k", store.ErrInvalidNamespace, "reserved"},
		{"NUL in label", []string{"a\x00b"}, "k", store.ErrInvalidNamespace, "NUL"},
		{"invalid UTF-8 label", []string{"a\xffb"}, "k", store.ErrInvalidNamespace, "UTF-8"},
		{"too long label", []string{strings.Repeat("x", store.MaxLabelBytes+1)}, "k", store.ErrInvalidNamespace, "bytes"},
		{"empty key", []string{"a"}, "", store.ErrInvalidKey, "empty"},
		{"NUL in key", []string{"a"}, "k\x00", store.ErrInvalidKey, "NUL"},
		{"invalid UTF-8 key", []string{"a"}, "\xff", store.ErrInvalidKey, "UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, op := range []store.Op{
				store.PutOp{Namespace: tc.ns, Key: tc.key, Value: map[string]any{"x": 1}},
				store.GetOp{Namespace: tc.ns, Key: tc.key},
			} {
				_, err := e.s.Batch(ctx, []store.Op{op})
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Errorf("%T: err = %v, want %v mentioning %q", op, err, tc.wantErr, tc.wantMsg)
				}
			}
		})
	}
	// "langgraph" below the root is an ordinary label.
	e.put([]string{"x", "langgraph"}, "k", map[string]any{})
	if e.get([]string{"x", "langgraph"}, "k") == nil {
		t.Error(`"langgraph" as a non-root label was not stored`)
	}
}

func testInvalidValues(t *testing.T, open Opener) {
	e := setup(t, open, nil)
	for _, tc := range []struct {
		name  string
		value map[string]any
	}{
		{"NUL in string", map[string]any{"s": "a\x00b"}},
		{"NUL in nested key", map[string]any{"m": map[string]any{"a\x00": 1}}},
		{"NaN", map[string]any{"x": math.NaN()}},
		{"infinity", map[string]any{"x": []any{math.Inf(1)}}},
		{"not JSON", map[string]any{"c": make(chan int)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := store.Put(ctx, e.s, []string{"v"}, tc.name, tc.value)
			if !errors.Is(err, store.ErrInvalidValue) {
				t.Errorf("err = %v, want ErrInvalidValue", err)
			}
			if e.get([]string{"v"}, tc.name) != nil {
				t.Error("an invalid value was stored")
			}
		})
	}
}

func testInvalidOps(t *testing.T, open Opener) {
	e := setup(t, open, nil)
	ok := store.PutOp{Namespace: []string{"a"}, Key: "written", Value: map[string]any{"x": 1}}
	for _, tc := range []struct {
		name string
		op   store.Op
		want error
	}{
		{"negative limit", store.SearchOp{Limit: -1}, store.ErrInvalidOp},
		{"huge limit", store.SearchOp{Limit: store.MaxLimit + 1}, store.ErrInvalidOp},
		{"negative offset", store.SearchOp{Offset: -1}, store.ErrInvalidOp},
		{"bad prefix", store.SearchOp{NamespacePrefix: []string{""}}, store.ErrInvalidNamespace},
		{"negative TTL", store.PutOp{Namespace: []string{"a"}, Key: "k", Value: map[string]any{}, TTL: -time.Minute}, store.ErrInvalidOp},
		{"bad index path", store.PutOp{Namespace: []string{"a"}, Key: "k", Value: map[string]any{}, Index: []string{"a["}}, store.ErrInvalidPath},
		{"bad match type", store.ListNamespacesOp{MatchConditions: []store.MatchCondition{{Type: "infix", Path: []string{"a"}}}}, store.ErrInvalidOp},
		{"empty match path", store.ListNamespacesOp{MatchConditions: []store.MatchCondition{{Type: store.MatchPrefix}}}, store.ErrInvalidOp},
		{"negative depth", store.ListNamespacesOp{MaxDepth: -1}, store.ErrInvalidOp},
		{"nil op", nil, store.ErrInvalidOp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The valid put comes first: a failing batch must not write it.
			_, err := e.s.Batch(ctx, []store.Op{ok, tc.op})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "op 1") {
				t.Errorf("err = %v, want %v naming op 1", err, tc.want)
			}
			if e.get([]string{"a"}, "written") != nil {
				t.Error("the valid put of a failed batch was written")
			}
		})
	}
}

func testBatchSemantics(t *testing.T, open Opener) {
	e := setup(t, open, nil)
	ns := []string{"b"}
	e.put(ns, "old", map[string]any{"v": "before"})
	res, err := e.s.Batch(ctx, []store.Op{
		store.PutOp{Namespace: ns, Key: "old", Value: map[string]any{"v": "first"}},
		store.GetOp{Namespace: ns, Key: "old"},
		store.PutOp{Namespace: ns, Key: "new", Value: map[string]any{"v": 1}},
		store.SearchOp{NamespacePrefix: ns},
		store.PutOp{Namespace: ns, Key: "old", Value: map[string]any{"v": "last"}},
		store.ListNamespacesOp{},
		store.PutOp{Namespace: ns, Key: "new"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 7 {
		t.Fatalf("%d results for 7 ops", len(res))
	}
	if res[1].Item == nil || res[1].Item.Value["v"] != "before" {
		t.Errorf("get inside the batch = %+v, want the pre-batch value", res[1].Item)
	}
	if k := keys(res[3].Items); !reflect.DeepEqual(k, []string{"old"}) {
		t.Errorf("search inside the batch = %v, want [old] (puts apply last)", k)
	}
	if !reflect.DeepEqual(res[5].Namespaces, [][]string{{"b"}}) {
		t.Errorf("list inside the batch = %v", res[5].Namespaces)
	}
	if it := e.get(ns, "old"); it == nil || it.Value["v"] != "last" {
		t.Errorf("after batch old = %+v, want the last put to win", it)
	}
	if it := e.get(ns, "new"); it != nil {
		t.Errorf("after batch new = %+v, want deleted by the later op", it)
	}
	if res, err := e.s.Batch(ctx, nil); err != nil || len(res) != 0 {
		t.Errorf("empty batch = %v, %v", res, err)
	}
}
