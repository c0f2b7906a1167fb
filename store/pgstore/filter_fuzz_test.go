package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/store"
	"github.com/superstep-dev/superstep/store/pgstore"
)

// FuzzFilterDifferential runs any filter document against the memory
// store and the Postgres store holding the same items: both accept or
// both refuse it (with ErrInvalidFilter or ErrInvalidOp), and both return
// the same items in the same order.
func FuzzFilterDifferential(f *testing.F) {
	for _, s := range []string{
		`{"kind":"note"}`, `{"n":1}`, `{"n":1.0}`, `{"n":{"$gt":1}}`, `{"n":{"$gte":"1"}}`, `{"n":{"$lt":2.5,"$ne":1}}`,
		`{"tags":["a","b"]}`, `{"tags":[]}`, `{"user":{"name":"ann"}}`, `{"user.name":"ann"}`, `{"user":{"age":{"$gte":18}}}`,
		`{"missing":null}`, `{"n":null}`, `{"n":{"$ne":null}}`, `{"flag":true}`, `{"flag":{"$ne":false}}`,
		`{"a\\.b":1}`, `{"s":"\u0000"}`, `{"s":{"$gt":"b"}}`, `{"$bad":1}`, `{"n":{"$in":[1]}}`, `{"":1}`, `{"x":{"y":{"z":[1,{"k":2}]}}}`,
	} {
		f.Add(s)
	}
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	mem, err := store.NewMemory(store.Options{Now: clock})
	if err != nil {
		f.Fatal(err)
	}
	pg, err := pgstore.New(ctx, pgtest.Schema(f, nil), pgstore.Options{Options: store.Options{Now: clock}})
	if err != nil {
		f.Fatal(err)
	}
	items := []map[string]any{
		{"kind": "note", "n": 1, "tags": []any{"a", "b"}, "user": map[string]any{"name": "ann", "age": 30}, "flag": true, "s": "a"},
		{"kind": "note", "n": 2.5, "tags": []any{}, "user": map[string]any{"name": "bob", "age": 17}, "flag": false, "s": "b"},
		{"kind": "task", "n": "1", "tags": []any{"b"}, "user": map[string]any{"name": "cy"}, "a.b": 1, "s": "c", "n2": nil},
		{"kind": "task", "n": nil, "x": map[string]any{"y": map[string]any{"z": []any{1, map[string]any{"k": 2}}}}},
		{"other": true},
	}
	for i, v := range items {
		for _, s := range []store.Store{mem, pg} {
			if err := store.Put(ctx, s, []string{"fuzz", fmt.Sprint(i % 2)}, fmt.Sprintf("k%d", i), v); err != nil {
				f.Fatal(err)
			}
		}
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var filter map[string]any
		if json.Unmarshal([]byte(doc), &filter) != nil || filter == nil {
			return
		}
		op := store.SearchOp{NamespacePrefix: []string{"fuzz"}, Filter: filter, Limit: 100}
		want, werr := store.Search(ctx, mem, op)
		got, gerr := store.Search(ctx, pg, op)
		invalid := func(err error) bool {
			return errors.Is(err, store.ErrInvalidFilter) || errors.Is(err, store.ErrInvalidOp)
		}
		if (werr == nil) != (gerr == nil) || (werr != nil && (!invalid(werr) || !invalid(gerr))) {
			t.Fatalf("filter %s: memory error %v, postgres error %v", doc, werr, gerr)
		}
		keys := func(its []store.SearchItem) (out []string) {
			for _, it := range its {
				out = append(out, fmt.Sprint(it.Namespace)+"/"+it.Key)
			}
			return out
		}
		if w, g := keys(want), keys(got); !slices.Equal(w, g) {
			t.Fatalf("filter %s: memory %v, postgres %v", doc, w, g)
		}
	})
}
