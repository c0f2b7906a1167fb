package client_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/client"
	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/store"
	"github.com/superstep-dev/superstep/store/pgstore"
	"github.com/superstep-dev/superstep/store/storetest"
)

// opener opens an empty store with opts for one test.
type opener func(t *testing.T, opts store.Options) store.Store

func TestStoreMemory(t *testing.T) {
	t.Parallel()
	exerciseStore(t, memStore)
}

// TestStorePostgres runs the same calls against the Postgres store, whose
// semantic search is pgvector's.
func TestStorePostgres(t *testing.T) {
	t.Parallel()
	exerciseStore(t, func(t *testing.T, opts store.Options) store.Store {
		st, err := pgstore.New(context.Background(), pgtest.Schema(t, nil), pgstore.Options{Options: opts})
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}

// storeEnv is a client of a server over a fresh store with a word
// embedder (for queries) and a manual clock (for TTLs).
type storeEnv struct {
	s     *client.StoreClient
	clock *storetest.Clock
	ctx   context.Context
}

func setupStore(t *testing.T, open opener) *storeEnv {
	t.Helper()
	clock := storetest.NewClock()
	st := open(t, store.Options{Now: clock.Now, Index: &store.IndexConfig{Embedder: storetest.NewWordEmbedder(), Fields: []string{"text"}}})
	return &storeEnv{s: newClient(t, serve(t, st, "")).Store, clock: clock, ctx: context.Background()}
}

func (e *storeEnv) put(t *testing.T, ns []string, key string, value map[string]any, opts *client.PutItemOptions) {
	t.Helper()
	if err := e.s.PutItem(e.ctx, ns, key, value, opts); err != nil {
		t.Fatalf("PutItem %v %s: %v", ns, key, err)
	}
}

func searchKeys(items []client.SearchItem) []string {
	keys := []string{}
	for _, it := range items {
		keys = append(keys, it.Key)
	}
	return keys
}

func exerciseStore(t *testing.T, open opener) {
	t.Run("items", func(t *testing.T) {
		t.Parallel()
		e := setupStore(t, open)
		ns := []string{"users", "u1"}
		e.put(t, ns, "prefs", map[string]any{"theme": "dark"}, nil)
		created := e.clock.Now()
		e.clock.Advance(time.Minute)
		e.put(t, ns, "prefs", map[string]any{"theme": "light", "size": 12}, nil)
		it, err := e.s.GetItem(e.ctx, ns, "prefs", nil)
		if err != nil || it == nil {
			t.Fatalf("GetItem: %v, %v", it, err)
		}
		if !slices.Equal(it.Namespace, ns) || it.Key != "prefs" || it.Value["theme"] != "light" || it.Value["size"] != 12.0 {
			t.Errorf("item %+v", it)
		}
		if !it.CreatedAt.Equal(created) || !it.UpdatedAt.Equal(created.Add(time.Minute)) {
			t.Errorf("created %v updated %v, want %v and a minute later", it.CreatedAt, it.UpdatedAt, created)
		}
		if err := e.s.DeleteItem(e.ctx, ns, "prefs"); err != nil {
			t.Fatal(err)
		}
		if err := e.s.DeleteItem(e.ctx, ns, "prefs"); err != nil {
			t.Errorf("deleting a missing item: %v", err)
		}
		if it, err := e.s.GetItem(e.ctx, ns, "prefs", nil); it != nil || err != nil {
			t.Errorf("GetItem after delete: %+v, %v; want nil, nil", it, err)
		}
	})

	t.Run("ttl", func(t *testing.T) {
		t.Parallel()
		e := setupStore(t, open)
		ns := []string{"sessions"}
		minute := &client.PutItemOptions{TTL: time.Minute}
		e.put(t, ns, "kept", map[string]any{}, minute)
		e.put(t, ns, "lapsed", map[string]any{}, minute)
		e.put(t, ns, "permanent", map[string]any{}, nil)
		e.clock.Advance(40 * time.Second)
		yes, no := true, false
		for key, refresh := range map[string]*bool{"kept": &yes, "lapsed": &no} {
			if it, err := e.s.GetItem(e.ctx, ns, key, &client.GetItemOptions{RefreshTTL: refresh}); it == nil || err != nil {
				t.Fatalf("GetItem %s before expiry: %v, %v", key, it, err)
			}
		}
		e.clock.Advance(40 * time.Second)
		for key, want := range map[string]bool{"kept": true, "lapsed": false, "permanent": true} {
			it, err := e.s.GetItem(e.ctx, ns, key, nil)
			if err != nil || (it != nil) != want {
				t.Errorf("%s 80 s after a put with a minute's TTL: %+v, %v; want present %v", key, it, err, want)
			}
		}
	})

	t.Run("search", func(t *testing.T) {
		t.Parallel()
		e := setupStore(t, open)
		for i := range 5 {
			e.put(t, []string{"docs", fmt.Sprint("d", i%2)}, fmt.Sprint("k", i), map[string]any{"n": i, "kind": []string{"even", "odd"}[i%2]}, nil)
			e.clock.Advance(time.Second)
		}
		var pages []string
		for off := 0; off < 6; off += 2 {
			items, err := e.s.SearchItems(e.ctx, []string{"docs"}, &client.SearchItemsOptions{Limit: 2, Offset: off})
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				if it.Score != nil {
					t.Errorf("search without a query gave %s a score %v", it.Key, *it.Score)
				}
			}
			pages = append(pages, fmt.Sprint(searchKeys(items)))
		}
		if got := strings.Join(pages, " "); got != "[k4 k3] [k2 k1] [k0]" {
			t.Errorf("pages %s, want newest first, two at a time", got)
		}
		items, err := e.s.SearchItems(e.ctx, []string{"docs"}, &client.SearchItemsOptions{Filter: map[string]any{"kind": "even", "n": map[string]any{"$gt": 0}}})
		if err != nil || fmt.Sprint(searchKeys(items)) != "[k4 k2]" {
			t.Errorf("filtered search: %v, %v; want [k4 k2]", searchKeys(items), err)
		}
		items, err = e.s.SearchItems(e.ctx, nil, nil)
		if err != nil || len(items) != 5 {
			t.Errorf("search of every namespace: %v, %v", searchKeys(items), err)
		}
		items, err = e.s.SearchItems(e.ctx, []string{"docs", "d1"}, nil)
		if err != nil || fmt.Sprint(searchKeys(items)) != "[k3 k1]" {
			t.Errorf("search under docs.d1: %v, %v", searchKeys(items), err)
		}
	})

	t.Run("semantic", func(t *testing.T) {
		t.Parallel()
		e := setupStore(t, open)
		ns := []string{"notes"}
		e.put(t, ns, "exact", map[string]any{"text": "dark theme"}, nil)
		e.put(t, ns, "longer", map[string]any{"text": "dark theme for the editor"}, nil)
		e.put(t, ns, "half", map[string]any{"text": "dark chocolate"}, nil)
		e.put(t, ns, "unrelated", map[string]any{"text": "garden tools"}, nil)
		e.put(t, ns, "unindexed", map[string]any{"text": "dark theme"}, &client.PutItemOptions{NoIndex: true})
		e.put(t, ns, "titled", map[string]any{"text": "dark theme", "title": "orchids"}, &client.PutItemOptions{Index: []string{"title"}})
		items, err := e.s.SearchItems(e.ctx, ns, &client.SearchItemsOptions{Query: "dark theme"})
		if err != nil {
			t.Fatal(err)
		}
		// Cosine similarities of bags of words: 1, 2/√10, 1/2, then 0 for
		// the items whose embedded fields share no word with the query
		// ("titled" embeds only its title). "unindexed" has no vectors,
		// so a query never finds it.
		want := map[string]float64{"exact": 1, "longer": 2 / math.Sqrt(10), "half": 0.5, "unrelated": 0, "titled": 0}
		got := searchKeys(items)
		if len(got) != 5 || fmt.Sprint(got[:3]) != "[exact longer half]" || !slices.Contains(got, "unrelated") || !slices.Contains(got, "titled") {
			t.Fatalf("ranked %v, want [exact longer half] then unrelated and titled, without unindexed", got)
		}
		for i, it := range items {
			if it.Score == nil || math.Abs(*it.Score-want[it.Key]) > 1e-6 {
				t.Errorf("%s score %v, want %v", it.Key, it.Score, want[it.Key])
			}
			if i > 0 && *it.Score > *items[i-1].Score {
				t.Errorf("scores not descending at %s", it.Key)
			}
		}
		items, err = e.s.SearchItems(e.ctx, ns, &client.SearchItemsOptions{Query: "orchids", Limit: 1})
		if err != nil || fmt.Sprint(searchKeys(items)) != "[titled]" {
			t.Errorf("query on the indexed title: %v, %v", searchKeys(items), err)
		}
		items, err = e.s.SearchItems(e.ctx, ns, &client.SearchItemsOptions{Query: "dark theme", Limit: 2, Offset: 1})
		if err != nil || fmt.Sprint(searchKeys(items)) != "[longer half]" {
			t.Errorf("second page of a query: %v, %v", searchKeys(items), err)
		}
		items, err = e.s.SearchItems(e.ctx, ns, &client.SearchItemsOptions{Query: "dark", Filter: map[string]any{"text": "dark chocolate"}})
		if err != nil || fmt.Sprint(searchKeys(items)) != "[half]" {
			t.Errorf("query with a filter: %v, %v", searchKeys(items), err)
		}
	})

	t.Run("namespaces", func(t *testing.T) {
		t.Parallel()
		e := setupStore(t, open)
		for _, ns := range [][]string{{"a", "x", "1"}, {"a", "y"}, {"b", "x"}, {"c"}} {
			e.put(t, ns, "k", map[string]any{}, nil)
		}
		for _, tc := range []struct {
			opts *client.ListNamespacesOptions
			want string
		}{
			{nil, "[[a x 1] [a y] [b x] [c]]"},
			{&client.ListNamespacesOptions{Limit: 2, Offset: 2}, "[[b x] [c]]"},
			{&client.ListNamespacesOptions{Prefix: []string{"a"}}, "[[a x 1] [a y]]"},
			{&client.ListNamespacesOptions{Suffix: []string{"x"}}, "[[b x]]"},
			{&client.ListNamespacesOptions{Prefix: []string{"*", "x"}}, "[[a x 1] [b x]]"},
			{&client.ListNamespacesOptions{MaxDepth: 1}, "[[a] [b] [c]]"},
		} {
			got, err := e.s.ListNamespaces(e.ctx, tc.opts)
			if err != nil || fmt.Sprint(got) != tc.want {
				t.Errorf("ListNamespaces(%+v) = %v, %v; want %s", tc.opts, got, err, tc.want)
			}
		}
	})

	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		e := setupStore(t, open)
		var ce *client.Error
		_, err := e.s.SearchItems(e.ctx, nil, &client.SearchItemsOptions{Filter: map[string]any{"age": map[string]any{"$near": 3}}})
		if !errors.As(err, &ce) || ce.Status != http.StatusUnprocessableEntity || !strings.HasPrefix(ce.Detail, "filter: ") {
			t.Errorf("bad filter: %v, want a 422 *client.Error about filter", err)
		}
		err = e.s.PutItem(e.ctx, []string{"langgraph"}, "k", map[string]any{}, nil)
		if !errors.As(err, &ce) || ce.Status != http.StatusUnprocessableEntity || !strings.Contains(ce.Detail, "reserved") {
			t.Errorf("reserved root: %v, want a 422 *client.Error", err)
		}
		err = e.s.PutItem(e.ctx, []string{"a"}, "k", map[string]any{}, &client.PutItemOptions{Index: []string{"tags["}})
		if !errors.As(err, &ce) || !strings.HasPrefix(ce.Detail, "index[0]: ") {
			t.Errorf("bad index path: %v", err)
		}
		_, err = e.s.ListNamespaces(e.ctx, &client.ListNamespacesOptions{Limit: store.MaxLimit + 1})
		if !errors.As(err, &ce) || !strings.HasPrefix(ce.Detail, "limit: ") {
			t.Errorf("limit too big: %v", err)
		}
		// What the API cannot carry is refused before anything is sent.
		for name, call := range map[string]func() error{
			"put dot":    func() error { return e.s.PutItem(e.ctx, []string{"a.b"}, "k", map[string]any{}, nil) },
			"get dot":    func() error { _, err := e.s.GetItem(e.ctx, []string{"a", "b.c"}, "k", nil); return err },
			"get empty":  func() error { _, err := e.s.GetItem(e.ctx, nil, "k", nil); return err },
			"delete dot": func() error { return e.s.DeleteItem(e.ctx, []string{"a."}, "k") },
			"search dot": func() error { _, err := e.s.SearchItems(e.ctx, []string{"a.b"}, nil); return err },
			"list empty": func() error {
				_, err := e.s.ListNamespaces(e.ctx, &client.ListNamespacesOptions{Prefix: []string{""}})
				return err
			},
			"put nil": func() error { return e.s.PutItem(e.ctx, []string{"a"}, "k", nil, nil) },
			"put both": func() error {
				return e.s.PutItem(e.ctx, []string{"a"}, "k", map[string]any{}, &client.PutItemOptions{NoIndex: true, Index: []string{"x"}})
			},
			"put neg ttl": func() error {
				return e.s.PutItem(e.ctx, []string{"a"}, "k", map[string]any{}, &client.PutItemOptions{TTL: -time.Second})
			},
		} {
			err := call()
			if err == nil || errors.As(err, &ce) {
				t.Errorf("%s: %v, want an error before any request", name, err)
			}
		}
		if got, _ := e.s.ListNamespaces(e.ctx, nil); len(got) != 0 {
			t.Errorf("refused calls stored %v", got)
		}
	})
}

func TestStoreWithoutStore(t *testing.T) {
	t.Parallel()
	s := newClient(t, serve(t, nil, "")).Store
	_, err := s.GetItem(context.Background(), []string{"a"}, "k", nil)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusNotFound || ce.Detail != "this server has no store" {
		t.Errorf("GetItem on a server without a store: %v", err)
	}
}

func TestStoreQueryWithoutEmbedder(t *testing.T) {
	t.Parallel()
	s := newClient(t, serve(t, memStore(t, store.Options{}), "")).Store
	_, err := s.SearchItems(context.Background(), nil, &client.SearchItemsOptions{Query: "dark"})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusUnprocessableEntity || !strings.HasPrefix(ce.Detail, "query: ") {
		t.Errorf("query on a store without an embedder: %v", err)
	}
}
