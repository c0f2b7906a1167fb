package storetest

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/store"
)

// similarity is the score a text should get for a query with e's
// embedder.
func (e *env) similarity(text, query string) float64 {
	e.t.Helper()
	v, err := e.emb.Embed(ctx, []string{text, query})
	if err != nil {
		e.t.Fatal(err)
	}
	return store.CosineSimilarity(v[0], v[1])
}

// distinctAxes fails the test if two of words share an embedding axis,
// which would make "unrelated" texts similar.
func (e *env) distinctAxes(words ...string) {
	e.t.Helper()
	seen := map[int]string{}
	for _, w := range words {
		a := e.emb.Axis(w)
		if other, ok := seen[a]; ok && other != w {
			e.t.Fatalf("words %q and %q collide on axis %d; change the test words", w, other, a)
		}
		seen[a] = w
	}
}

func checkScores(t *testing.T, got []store.SearchItem, want []string, score func(key string) float64) {
	t.Helper()
	if !reflect.DeepEqual(keys(got), want) {
		t.Fatalf("ranking = %v, want %v", keys(got), want)
	}
	for _, it := range got {
		if it.Score == nil {
			t.Errorf("%s: nil score for a query", it.Key)
			continue
		}
		if w := score(it.Key); math.Abs(*it.Score-w) > 1e-5 {
			t.Errorf("%s: score %.6f, want %.6f", it.Key, *it.Score, w)
		}
	}
}

func testVectorSearchRanking(t *testing.T, open Opener) {
	e := setup(t, open, func(o *store.Options) { o.Index.Fields = []string{"text"} })
	e.distinctAxes("apple", "fruit", "banana", "car", "engine", "text", "title", "zebra")
	texts := map[string]string{"doc1": "apple fruit", "doc2": "banana fruit", "doc3": "car engine", "doc4": "apple"}
	for k, text := range texts {
		e.put([]string{"docs", k[3:]}, k, map[string]any{"text": text, "other": "apple apple"})
	}
	got := e.search(store.SearchOp{NamespacePrefix: []string{"docs"}, Query: "apple"})
	checkScores(t, got, []string{"doc4", "doc1", "doc2", "doc3"}, func(k string) float64 { return e.similarity(texts[k], "apple") })
	got = e.search(store.SearchOp{Query: "banana fruit", Limit: 2})
	checkScores(t, got, []string{"doc2", "doc1"}, func(k string) float64 { return e.similarity(texts[k], "banana fruit") })
	got = e.search(store.SearchOp{Query: "banana fruit", Limit: 2, Offset: 2})
	checkScores(t, got, []string{"doc3", "doc4"}, func(k string) float64 { return e.similarity(texts[k], "banana fruit") })

	// With the default fields ("$") the whole document is embedded as JSON.
	def := setup(t, open, nil)
	doc := map[string]any{"title": "zebra"}
	def.put([]string{"z"}, "k", doc)
	got = def.search(store.SearchOp{Query: "zebra"})
	checkScores(t, got, []string{"k"}, func(string) float64 { return def.similarity(`{"title":"zebra"}`, "zebra") })
}

func testVectorSearchMaxPool(t *testing.T, open Opener) {
	e := setup(t, open, nil)
	e.distinctAxes("apple", "banana", "car", "engine", "red", "fruit")
	fields := []string{"title", "body"}
	e.do(store.PutOp{Namespace: []string{"m"}, Key: "A", Value: map[string]any{"title": "apple", "body": "car engine red"}, Index: fields})
	e.do(store.PutOp{Namespace: []string{"m"}, Key: "B", Value: map[string]any{"title": "banana", "body": "apple fruit"}, Index: fields})
	e.do(store.PutOp{Namespace: []string{"m"}, Key: "C", Value: map[string]any{"title": "red", "body": "red car"}, Index: fields})
	want := map[string]float64{"A": 1, "B": e.similarity("apple fruit", "apple"), "C": 0}
	checkScores(t, e.search(store.SearchOp{Query: "apple"}), []string{"A", "B", "C"}, func(k string) float64 { return want[k] })
	// "red" is A's body partly and C's title and body: C's best field wins.
	wantRed := map[string]float64{"A": e.similarity("car engine red", "red"), "B": 0, "C": 1}
	checkScores(t, e.search(store.SearchOp{Query: "red"}), []string{"C", "A", "B"}, func(k string) float64 { return wantRed[k] })
}

func testVectorsReplacedOnPut(t *testing.T, open Opener) {
	e := setup(t, open, func(o *store.Options) { o.Index.Fields = []string{"tags[*]"} })
	e.distinctAxes("apple", "car", "boat")
	ns := []string{"r"}
	e.put(ns, "x", map[string]any{"tags": []any{"car", "apple", "boat"}})
	e.put(ns, "y", map[string]any{"tags": []any{"boat"}})
	score := func() (float64, bool) {
		for _, it := range e.search(store.SearchOp{Query: "apple"}) {
			if it.Key == "x" {
				return *it.Score, true
			}
		}
		return 0, false
	}
	if s, ok := score(); !ok || math.Abs(s-1) > 1e-6 {
		t.Fatalf("x score = %v, %v; want 1", s, ok)
	}
	// A re-put with fewer matches drops the old "apple" vector.
	e.put(ns, "x", map[string]any{"tags": []any{"car"}})
	if s, ok := score(); !ok || math.Abs(s) > 1e-6 {
		t.Errorf("after re-put without apple, x score = %v, %v; want 0 (stale vector kept?)", s, ok)
	}
	// A re-put with indexing off drops every vector: x no longer takes part
	// in semantic search, but is still listed and read.
	e.do(store.PutOp{Namespace: ns, Key: "x", Value: map[string]any{"tags": []any{"apple"}}, Index: store.NoIndex})
	if s, ok := score(); ok {
		t.Errorf("after re-put with NoIndex, x still ranked with score %v", s)
	}
	if got := e.search(store.SearchOp{NamespacePrefix: ns}); len(got) != 2 {
		t.Errorf("listing after NoIndex put = %v, want both items", keys(got))
	}
	// An explicit field list replaces the defaults for that put.
	e.do(store.PutOp{Namespace: ns, Key: "x", Value: map[string]any{"tags": []any{"car"}, "name": "apple"}, Index: []string{"name"}})
	if s, ok := score(); !ok || math.Abs(s-1) > 1e-6 {
		t.Errorf("after re-put indexing name, x score = %v, %v; want 1", s, ok)
	}
	// Delete drops the vectors with the item.
	if err := store.Delete(ctx, e.s, ns, "x"); err != nil {
		t.Fatal(err)
	}
	if got := e.search(store.SearchOp{Query: "apple"}); !reflect.DeepEqual(keys(got), []string{"y"}) {
		t.Errorf("after delete = %v, want [y]", keys(got))
	}
}

func testVectorSearchDeepPages(t *testing.T, open Opener) {
	e := setup(t, open, func(o *store.Options) { o.Index.Fields = []string{"v[*]"} })
	e.distinctAxes("apple", "x", "y", "car")
	const n = 30
	var want []string
	var ops []store.Op
	for i := range n {
		k := fmt.Sprintf("i%02d", i)
		want = append(want, k)
		// Three vectors per item, two of them similar to the query; the
		// best one decreases with i.
		v := []any{"car", "apple " + strings.Repeat("x ", i), "apple " + strings.Repeat("y ", i+1)}
		ops = append(ops, store.PutOp{Namespace: []string{"deep", k[:2]}, Key: k, Value: map[string]any{"v": v}})
	}
	if _, err := e.s.Batch(ctx, ops); err != nil {
		t.Fatal(err)
	}
	var got []string
	for off := 0; off < n+5; off += 5 {
		page := e.search(store.SearchOp{Query: "apple", Limit: 5, Offset: off})
		if off < n && len(page) != 5 {
			t.Errorf("page at offset %d has %d items, want 5", off, len(page))
		}
		got = append(got, keys(page)...)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pages = %v, want %v", got, want)
	}
}

func testVectorSearchWithFilter(t *testing.T, open Opener) {
	e := setup(t, open, func(o *store.Options) { o.Index.Fields = []string{"text"} })
	e.distinctAxes("apple", "pie", "tart", "car")
	docs := map[string]map[string]any{
		"a": {"text": "apple pie", "kind": "food", "stars": 5},
		"b": {"text": "apple", "kind": "tech", "stars": 4},
		"c": {"text": "apple tart pie", "kind": "food", "stars": 3},
		"d": {"text": "car", "kind": "food", "stars": 5},
	}
	for k, d := range docs {
		e.put([]string{"w"}, k, d)
	}
	got := e.search(store.SearchOp{Query: "apple", Filter: map[string]any{"kind": "food"}})
	checkScores(t, got, []string{"a", "c", "d"}, func(k string) float64 { return e.similarity(docs[k]["text"].(string), "apple") })
	got = e.search(store.SearchOp{Query: "apple", Filter: map[string]any{"stars": map[string]any{"$gte": 4}}, Limit: 2})
	checkScores(t, got, []string{"b", "a"}, func(k string) float64 { return e.similarity(docs[k]["text"].(string), "apple") })
}

func testVectorSearchNonASCII(t *testing.T, open Opener) {
	e := setup(t, open, func(o *store.Options) { o.Index.Fields = []string{"text"} })
	texts := map[string]string{
		"zh": "长期记忆 存储",
		"ja": "長期記憶の ストア",
		"ko": "장기 기억 저장소",
		"ru": "долговременная память",
		"hi": "दीर्घकालिक स्मृति",
	}
	var words []string
	for lang, text := range texts {
		words = append(words, Words(text)...)
		e.put([]string{"語", lang}, lang, map[string]any{"text": text})
	}
	e.distinctAxes(words...)
	for lang, text := range texts {
		got := e.search(store.SearchOp{NamespacePrefix: []string{"語"}, Query: text, Limit: 1})
		if len(got) != 1 || got[0].Key != lang || math.Abs(*got[0].Score-1) > 1e-6 {
			t.Errorf("%s: search %q = %+v, want %s with score 1", lang, text, got, lang)
		}
	}
}

func testVectorSearchErrors(t *testing.T, open Opener) {
	plain := setup(t, open, func(o *store.Options) { o.Index = nil })
	plain.put([]string{"p"}, "k", map[string]any{"text": "apple"})
	if _, err := store.Search(ctx, plain.s, store.SearchOp{Query: "apple"}); !errors.Is(err, store.ErrNoIndex) {
		t.Errorf("query without an embedder: %v, want ErrNoIndex", err)
	}

	e := setup(t, open, nil)
	e.put([]string{"p"}, "k", map[string]any{"text": "apple"})
	if got := e.search(store.SearchOp{Query: "!!! ???"}); len(got) != 0 {
		t.Errorf("query without words = %v, want no items (a zero vector is similar to nothing)", keys(got))
	}
	e.emb.Err = errors.New("model offline")
	err := store.Put(ctx, e.s, []string{"p"}, "new", map[string]any{"text": "x"})
	if !errors.Is(err, store.ErrEmbedder) || !strings.Contains(err.Error(), "model offline") {
		t.Errorf("put with a failing embedder: %v, want ErrEmbedder with the cause", err)
	}
	if e.get([]string{"p"}, "new") != nil {
		t.Error("item written although embedding failed")
	}
	e.emb.Err = nil
	e.emb.WrongDim = true
	if err := store.Put(ctx, e.s, []string{"p"}, "new", map[string]any{"text": "x"}); !errors.Is(err, store.ErrEmbedder) {
		t.Errorf("put with a wrong-size embedder: %v, want ErrEmbedder", err)
	}
}

func testEmbedderCalls(t *testing.T, open Opener) {
	e := setup(t, open, func(o *store.Options) { o.Index.Fields = []string{"a", "b"} })
	base := e.emb.Calls()
	_, err := e.s.Batch(ctx, []store.Op{
		store.PutOp{Namespace: []string{"e"}, Key: "1", Value: map[string]any{"a": "x", "b": "y"}},
		store.PutOp{Namespace: []string{"e"}, Key: "2", Value: map[string]any{"a": "x"}},
		store.PutOp{Namespace: []string{"e"}, Key: "1", Value: map[string]any{"a": "z"}},
		store.PutOp{Namespace: []string{"e"}, Key: "3", Value: map[string]any{"a": "x"}, Index: store.NoIndex},
		store.PutOp{Namespace: []string{"e"}, Key: "4"},
		store.SearchOp{Query: "q"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls := e.emb.Calls() - base; calls != 1 {
		t.Errorf("%d Embed calls for one batch, want 1", calls)
	}
	// 1 (last put of key 1) + 1 (key 2) + 1 (query); the overwritten put,
	// the unindexed put and the delete embed nothing.
	if texts := e.emb.Texts(); texts != 3 {
		t.Errorf("%d texts embedded, want 3", texts)
	}
	before := e.emb.Calls()
	e.get([]string{"e"}, "1")
	e.search(store.SearchOp{NamespacePrefix: []string{"e"}})
	if e.emb.Calls() != before {
		t.Error("reads without a query called the embedder")
	}
}

// testVectorSearchTies checks the order among items with equal scores:
// by namespace, then key, the same on every call, so that offset pages
// neither repeat nor skip an item.
func testVectorSearchTies(t *testing.T, open Opener) {
	e := setup(t, open, func(o *store.Options) { o.Index.Fields = []string{"text"} })
	e.distinctAxes("apple", "pie", "car")
	// Twelve items with the same vector in four namespaces, their keys
	// ordered against the namespaces', and two that score higher and
	// lower.
	var ops []store.Op
	var want []string
	for ns := range 4 {
		for k := range 3 {
			key := fmt.Sprintf("k%d", 9-ns-3*k)
			ops = append(ops, store.PutOp{Namespace: []string{"ties", fmt.Sprint(ns)}, Key: key, Value: map[string]any{"text": "apple pie"}})
			want = append(want, fmt.Sprintf("ties.%d/%s", ns, key))
		}
	}
	// Within a namespace, keys in order.
	for i := 0; i < len(want); i += 3 {
		slices.Sort(want[i : i+3])
	}
	ops = append(ops,
		store.PutOp{Namespace: []string{"ties", "9"}, Key: "a", Value: map[string]any{"text": "apple"}},
		store.PutOp{Namespace: []string{"ties", "0"}, Key: "z", Value: map[string]any{"text": "apple car car"}})
	want = append(append([]string{"ties.9/a"}, want...), "ties.0/z")
	if _, err := e.s.Batch(ctx, ops); err != nil {
		t.Fatal(err)
	}
	ids := func(items []store.SearchItem) []string {
		var out []string
		for _, it := range items {
			out = append(out, store.JoinNamespace(it.Namespace)+"/"+it.Key)
		}
		return out
	}
	op := store.SearchOp{NamespacePrefix: []string{"ties"}, Query: "apple", Limit: len(want)}
	first := e.search(op)
	if got := ids(first); !reflect.DeepEqual(got, want) {
		t.Fatalf("ranking = %v, want %v (ties by namespace, then key)", got, want)
	}
	for i := 2; i < len(first)-1; i++ {
		if *first[i].Score != *first[1].Score {
			t.Errorf("%s scores %v, %s %v; want the same", ids(first)[i], *first[i].Score, ids(first)[1], *first[1].Score)
		}
	}
	if again := ids(e.search(op)); !reflect.DeepEqual(again, want) {
		t.Errorf("same search again = %v, want %v", again, want)
	}
	for _, size := range []int{1, 4, 5} {
		var paged []string
		for off := 0; off < len(want); off += size {
			paged = append(paged, ids(e.search(store.SearchOp{NamespacePrefix: []string{"ties"}, Query: "apple", Limit: size, Offset: off}))...)
		}
		if !reflect.DeepEqual(paged, want) {
			t.Errorf("pages of %d = %v, want %v", size, paged, want)
		}
	}
}
