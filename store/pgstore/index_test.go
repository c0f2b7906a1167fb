package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/store"
	"github.com/superstep-dev/superstep/store/pgstore"
	"github.com/superstep-dev/superstep/store/storetest"
)

var ctx = context.Background()

func open(t *testing.T, pool *pgxpool.Pool, emb store.Embedder, reembed bool, fields ...string) (*pgstore.Store, error) {
	t.Helper()
	return pgstore.New(ctx, pool, pgstore.Options{Options: store.Options{
		Index: &store.IndexConfig{Embedder: emb, Fields: fields, Reembed: reembed},
	}})
}

func vectorRows(t *testing.T, pool *pgxpool.Pool, key string) []string {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT field FROM store_vectors WHERE key = $1 ORDER BY field`, key)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var f string
		if err := rows.Scan(&f); err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// TestVectorRowsReplaced checks the table itself: upstream leaves stale
// rows behind on a re-put with fewer matches or with indexing off.
func TestVectorRowsReplaced(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	s, err := open(t, pool, storetest.NewWordEmbedder(), false, "msgs[*].content")
	if err != nil {
		t.Fatal(err)
	}
	ns := []string{"chat"}
	msgs := func(n int) map[string]any {
		var m []any
		for i := range n {
			m = append(m, map[string]any{"content": fmt.Sprintf("message %d", i)})
		}
		return map[string]any{"msgs": m}
	}
	if err := store.Put(ctx, s, ns, "t", msgs(3)); err != nil {
		t.Fatal(err)
	}
	want := []string{"msgs[*].content.0", "msgs[*].content.1", "msgs[*].content.2"}
	if got := vectorRows(t, pool, "t"); !reflect.DeepEqual(got, want) {
		t.Fatalf("fields = %v, want %v", got, want)
	}
	if err := store.Put(ctx, s, ns, "t", msgs(1)); err != nil {
		t.Fatal(err)
	}
	if got := vectorRows(t, pool, "t"); !reflect.DeepEqual(got, []string{"msgs[*].content"}) {
		t.Errorf("after a re-put with one message, fields = %v", got)
	}
	if _, err := store.Do(ctx, s, store.PutOp{Namespace: ns, Key: "t", Value: msgs(2), Index: store.NoIndex}); err != nil {
		t.Fatal(err)
	}
	if got := vectorRows(t, pool, "t"); len(got) != 0 {
		t.Errorf("after a re-put with NoIndex, fields = %v, want none", got)
	}
}

func TestEmbedderMismatchAndReembed(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	first := storetest.NewWordEmbedder()
	s, err := open(t, pool, first, false, "text")
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"apple pie", "car engine", "apple"} {
		if err := store.Put(ctx, s, []string{"r"}, fmt.Sprint(i), map[string]any{"text": text}); err != nil {
			t.Fatal(err)
		}
	}
	// Item 3 asked for no vectors; a re-embed must respect that.
	if _, err := store.Do(ctx, s, store.PutOp{Namespace: []string{"r"}, Key: "3", Value: map[string]any{"text": "apple"}, Index: store.NoIndex}); err != nil {
		t.Fatal(err)
	}

	for _, other := range []*storetest.WordEmbedder{{ID: "b", Dims: 1024}, {ID: "a", Dims: 512}} {
		_, err := open(t, pool, other, false, "text")
		if !errors.Is(err, store.ErrEmbedderMismatch) || !strings.Contains(err.Error(), first.Name()) || !strings.Contains(err.Error(), other.Name()) {
			t.Errorf("open with %s: %v, want ErrEmbedderMismatch naming both embedders", other.Name(), err)
		}
	}
	// Opening again with the same embedder is fine and embeds nothing.
	if _, err := open(t, pool, first, false, "text"); err != nil || first.Texts() != 3 {
		t.Errorf("reopen with the same embedder: %v, %d texts embedded, want 3", err, first.Texts())
	}

	smaller := &storetest.WordEmbedder{ID: "c", Dims: 512}
	s2, err := open(t, pool, smaller, true, "text")
	if err != nil {
		t.Fatalf("re-embed: %v", err)
	}
	if smaller.Texts() != 3 {
		t.Errorf("re-embed embedded %d texts, want 3 (the NoIndex item is skipped)", smaller.Texts())
	}
	var name string
	var dims int
	if err := pool.QueryRow(ctx, `SELECT embedder, dims FROM store_index`).Scan(&name, &dims); err != nil || name != smaller.Name() || dims != 512 {
		t.Errorf("store_index = %q/%d, %v; want %q/512", name, dims, err, smaller.Name())
	}
	got, err := store.Search(ctx, s2, store.SearchOp{Query: "apple"})
	if err != nil {
		t.Fatal(err)
	}
	if k := keysOf(got); !reflect.DeepEqual(k, []string{"2", "0", "1"}) || math.Abs(*got[0].Score-1) > 1e-6 {
		t.Errorf("search after re-embed = %v (top score %v), want [2 0 1] with 1", k, got[0].Score)
	}
	var idx int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname LIKE 'store_vectors_hnsw_d%'`).Scan(&idx); err != nil || idx != 1 {
		t.Errorf("%d HNSW indexes, %v; want exactly the new one", idx, err)
	}
}

func keysOf(items []store.SearchItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Key)
	}
	return out
}

// searchKeys runs op on s and returns the keys it finds, in order.
func searchKeys(t *testing.T, s store.Store, op store.SearchOp) []string {
	t.Helper()
	items, err := store.Search(ctx, s, op)
	if err != nil {
		t.Fatal(err)
	}
	return keysOf(items)
}

// TestIndexPathMatchesExact forces the HNSW path (ExactSearchMax 1) and
// checks it returns what the exact path returns, including deep pages.
func TestIndexPathMatchesExact(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	emb := storetest.NewWordEmbedder()
	exact, err := open(t, pool, emb, false, "v[*]")
	if err != nil {
		t.Fatal(err)
	}
	approx, err := pgstore.New(ctx, pool, pgstore.Options{ExactSearchMax: 1, Options: store.Options{Index: &store.IndexConfig{Embedder: emb, Fields: []string{"v[*]"}}}})
	if err != nil {
		t.Fatal(err)
	}
	var ops []store.Op
	for i := range 40 {
		ops = append(ops, store.PutOp{Namespace: []string{"n", fmt.Sprint(i % 3)}, Key: fmt.Sprintf("k%02d", i),
			Value: map[string]any{"i": i, "v": []any{"apple " + strings.Repeat("x ", i), "car", "apple " + strings.Repeat("y ", i+2)}}})
	}
	if _, err := exact.Batch(ctx, ops); err != nil {
		t.Fatal(err)
	}
	for _, op := range []store.SearchOp{
		{Query: "apple", Limit: 10},
		{Query: "apple", Limit: 7, Offset: 28},
		{Query: "apple", NamespacePrefix: []string{"n", "1"}, Filter: map[string]any{"i": map[string]any{"$gte": 10}}},
	} {
		want, got := searchKeys(t, exact, op), searchKeys(t, approx, op)
		if !reflect.DeepEqual(got, want) || len(got) == 0 {
			t.Errorf("%+v: index path %v, exact %v", op, got, want)
		}
	}
}

// TestVectorSearchPrefixSiblings checks the namespace boundary of vector
// searches on both paths: the vectors are read by one byte range, which
// also holds siblings such as "foo-x" ('-' sorts before '.'), and those
// must not be returned.
func TestVectorSearchPrefixSiblings(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	emb := &storetest.WordEmbedder{ID: "s", Dims: 64}
	exact, err := open(t, pool, emb, false, "t")
	if err != nil {
		t.Fatal(err)
	}
	approx, err := pgstore.New(ctx, pool, pgstore.Options{ExactSearchMax: 1, Options: store.Options{Index: &store.IndexConfig{Embedder: emb, Fields: []string{"t"}}}})
	if err != nil {
		t.Fatal(err)
	}
	var ops []store.Op
	for _, ns := range [][]string{{"foo"}, {"foo", "bar"}, {"foo-x"}, {"foo!"}, {"foobar"}, {"fo"}, {"foo", "bar-x"}} {
		ops = append(ops, store.PutOp{Namespace: ns, Key: "k", Value: map[string]any{"t": "apple", "ns": store.JoinNamespace(ns)}})
	}
	if _, err := exact.Batch(ctx, ops); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		prefix []string
		want   []string
	}{
		{[]string{"foo"}, []string{"foo", "foo.bar", "foo.bar-x"}},
		{[]string{"foo", "bar"}, []string{"foo.bar"}},
		{[]string{"foo-x"}, []string{"foo-x"}},
		{[]string{"fo"}, []string{"fo"}},
	} {
		for name, s := range map[string]*pgstore.Store{"exact": exact, "index": approx} {
			items, err := store.Search(ctx, s, store.SearchOp{Query: "apple", NamespacePrefix: tc.prefix, Limit: 20})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range items {
				got = append(got, store.JoinNamespace(it.Namespace))
			}
			slices.Sort(got)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s path, prefix %q: got %q, want %q", name, tc.prefix, got, tc.want)
			}
		}
	}
}

// TestVectorRowsRewrittenOnlyWhenChanged: a re-put replaces an item's
// vectors, but one whose text is unchanged is left in place, so it does
// not cost the vector indexes an insert (and the HNSW index a dead
// element).
func TestVectorRowsRewrittenOnlyWhenChanged(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	s, err := open(t, pool, storetest.NewWordEmbedder(), false, "text", "title")
	if err != nil {
		t.Fatal(err)
	}
	ns := []string{"docs"}
	versions := func() map[string]string {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT field, xmin::text FROM store_vectors WHERE key = 'a'`)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for rows.Next() {
			var f, x string
			if err := rows.Scan(&f, &x); err != nil {
				t.Fatal(err)
			}
			m[f] = x
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if err := store.Put(ctx, s, ns, "a", map[string]any{"text": "apple pie", "title": "baking"}); err != nil {
		t.Fatal(err)
	}
	before := versions()
	if err := store.Put(ctx, s, ns, "a", map[string]any{"text": "apple pie", "title": "car engine", "n": 2}); err != nil {
		t.Fatal(err)
	}
	after := versions()
	if len(after) != 2 || after["text"] != before["text"] || after["title"] == before["title"] {
		t.Errorf("vector row versions %v, then %v: want text kept and title rewritten", before, after)
	}
	got, err := store.Search(ctx, s, store.SearchOp{NamespacePrefix: ns, Query: "car engine"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || math.Abs(*got[0].Score-1) > 1e-6 || got[0].Value["n"] != 2.0 {
		t.Errorf("search for the new title = %+v, want the re-put item with score 1", got)
	}
}

// TestUpgradeKeepsTheHNSWIndex: a store opened on a database whose HNSW
// index an older version built (pgvector's default m = 16) keeps it and
// searches through it: opening never rebuilds an index, which on a large
// store would block writes for the whole build. A new index is built with
// m = hnswM.
func TestUpgradeKeepsTheHNSWIndex(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	old := &storetest.WordEmbedder{ID: "m", Dims: 64}
	if _, err := pool.Exec(ctx, `INSERT INTO store_index (embedder, dims) VALUES ($1, 64)`, old.Name()); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE INDEX store_vectors_hnsw_d64 ON store_vectors
		USING hnsw ((embedding::vector(64)) vector_cosine_ops) WHERE vector_dims(embedding) = 64`); err != nil {
		t.Fatal(err)
	}
	indexdef := func(dims string) string {
		t.Helper()
		var def string
		err := pool.QueryRow(ctx, `SELECT coalesce(string_agg(indexdef, '; '), '') FROM pg_indexes
			WHERE schemaname = current_schema() AND indexname = 'store_vectors_hnsw_d' || $1`, dims).Scan(&def)
		if err != nil {
			t.Fatal(err)
		}
		return def
	}
	s, err := open(t, pool, old, false, "t")
	if err != nil {
		t.Fatal(err)
	}
	if def := indexdef("64"); def == "" || strings.Contains(def, "m='10'") {
		t.Errorf("after open: %q, want the older 64-d index, kept", def)
	}
	if err := store.Put(ctx, s, []string{"n"}, "k", map[string]any{"t": "apple"}); err != nil {
		t.Fatal(err)
	}
	if got, err := store.Search(ctx, s, store.SearchOp{Query: "apple"}); err != nil || len(got) != 1 {
		t.Errorf("search = %+v, %v", got, err)
	}
	fresh := pgtest.Schema(t, nil)
	if _, err := open(t, fresh, &storetest.WordEmbedder{ID: "m", Dims: 32}, false, "t"); err != nil {
		t.Fatal(err)
	}
	var def string
	if err := fresh.QueryRow(ctx, `SELECT coalesce(string_agg(indexdef, '; '), '') FROM pg_indexes
		WHERE schemaname = current_schema() AND indexname LIKE 'store_vectors_hnsw_d%'`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(def, "m='10'") || !strings.Contains(def, "vector(32)") {
		t.Errorf("a new store's index: %q, want the 32-d index with m=10", def)
	}
}

// TestIndexPathFindsRareMatches: on the HNSW path a filter that few items
// pass still fills the page, which needs the index scan's settings
// (pgvector's iterative scan goes on past hnsw.ef_search candidates) to
// reach the query: without them the index yields 20 of the 600 vectors,
// and about one of the 8 items passing. (Not all 8: an HNSW graph built
// from these word vectors leaves a few percent of its elements
// unreachable, which elements depends on the build.) It holds also where
// the server's hnsw.max_scan_tuples (20,000 by default) is smaller than
// the tuples the scan must visit, here 50: a scan it ended early would
// look like an index with no more candidates.
func TestIndexPathFindsRareMatches(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	emb := &storetest.WordEmbedder{ID: "p", Dims: 64}
	exact, err := open(t, pool, emb, false, "t")
	if err != nil {
		t.Fatal(err)
	}
	cfg := pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["hnsw.max_scan_tuples"] = "50"
	capped, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(capped.Close)
	if _, err := exact.Batch(ctx, rareItems()); err != nil {
		t.Fatal(err)
	}
	op := store.SearchOp{Query: "apple w3", Filter: map[string]any{"kind": "rare"}, Limit: 10}
	rare := searchKeys(t, exact, op)
	for name, pool := range map[string]*pgxpool.Pool{"default settings": pool, "hnsw.max_scan_tuples 50": capped} {
		approx, err := pgstore.New(ctx, pool, pgstore.Options{ExactSearchMax: 1, EFSearch: 20, Options: store.Options{Index: &store.IndexConfig{Embedder: emb, Fields: []string{"t"}}}})
		if err != nil {
			t.Fatal(err)
		}
		got := searchKeys(t, approx, op)
		if len(rare) != 8 || len(got) < 5 || slices.ContainsFunc(got, func(k string) bool { return !slices.Contains(rare, k) }) {
			t.Errorf("%s: index path %v, exact %v; want at least 5 of the 8 rare items and nothing else", name, got, rare)
		}
	}
}

// TestIndexSearchFallsBackToExact: an index search whose page needs more
// candidates than the store reads (a filter 8 items of 600 pass, read 64
// candidates at most) is answered by the exact search: every rare item,
// in the exact path's order, and a deep page past the candidates too.
func TestIndexSearchFallsBackToExact(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	idx := &store.IndexConfig{Embedder: &storetest.WordEmbedder{ID: "f", Dims: 64}, Fields: []string{"t"}}
	exact, err := pgstore.New(ctx, pool, pgstore.Options{Options: store.Options{Index: idx}})
	if err != nil {
		t.Fatal(err)
	}
	approx, err := pgstore.New(ctx, pool, pgstore.WithMaxCandidates(pgstore.Options{ExactSearchMax: 1, Options: store.Options{Index: idx}}, 64))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exact.Batch(ctx, rareItems()); err != nil {
		t.Fatal(err)
	}
	for _, op := range []store.SearchOp{
		{Query: "apple w3", Filter: map[string]any{"kind": "rare"}, Limit: 10},
		{Query: "apple w3", Limit: 10, Offset: 100},
	} {
		want, got := searchKeys(t, exact, op), searchKeys(t, approx, op)
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%+v: index search %v, exact %v", op, got, want)
		}
	}
}

// rareItems is 600 items in namespace n, 8 of them of kind rare, whose
// texts a WordEmbedder embeds near "apple w3" in various degrees.
func rareItems() []store.Op {
	var ops []store.Op
	for i := range 600 {
		kind := "common"
		if i%75 == 0 {
			kind = "rare"
		}
		ops = append(ops, store.PutOp{Namespace: []string{"n"}, Key: fmt.Sprintf("%03d", i), Value: map[string]any{"t": fmt.Sprintf("apple w%d w%d", i, i%7), "kind": kind}})
	}
	return ops
}
