package pgstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/store"
	"github.com/superstep-dev/superstep/store/embed"
	"github.com/superstep-dev/superstep/store/pgstore"
)

// topics give the synthetic corpus clusters real word vectors separate.
var topics = [][]string{
	{"football", "goal", "team", "match", "player", "coach", "league", "season", "score", "stadium"},
	{"bread", "cheese", "soup", "recipe", "kitchen", "bake", "salt", "pepper", "dinner", "oven"},
	{"computer", "software", "code", "program", "server", "database", "network", "memory", "bug", "compiler"},
	{"river", "mountain", "forest", "lake", "valley", "snow", "tree", "rain", "hill", "meadow"},
	{"money", "bank", "loan", "market", "stock", "price", "tax", "profit", "trade", "budget"},
	{"doctor", "hospital", "patient", "medicine", "nurse", "disease", "surgery", "health", "pain", "clinic"},
	{"music", "song", "guitar", "piano", "concert", "band", "singer", "album", "melody", "drum"},
	{"car", "engine", "road", "truck", "wheel", "driver", "traffic", "fuel", "highway", "brake"},
	{"school", "teacher", "student", "lesson", "exam", "class", "book", "university", "homework", "grade"},
	{"ship", "ocean", "sail", "harbor", "captain", "wave", "boat", "island", "sea", "anchor"},
}

func sentence(r *rand.Rand) string {
	t := topics[r.IntN(len(topics))]
	words := make([]string, 6)
	for i := range words {
		words[i] = t[r.IntN(len(t))]
	}
	return strings.Join(words, " ")
}

const (
	benchItems      = 100_000
	benchNamespaces = 50
)

// BenchmarkStoreSearch100k searches 100k items in 50 namespaces, embedded
// with the offline GloVe embedder (100-d). The corpus is built with COPY
// and the HNSW index after the load, only when this benchmark runs.
//
// "prefix+filter" is the task's query (one namespace, one filter, limit
// 10): about 1000 candidate vectors, so the store scans them exactly.
// "filter-only" spans every namespace (50k candidates) and goes through
// the HNSW index. Both report p50-ms and recall@10 against an exact
// search computed in Go.
func BenchmarkStoreSearch100k(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.Schema(b, nil)
	emb := embed.Offline()
	r := rand.New(rand.NewPCG(1, 2))

	texts := make([]string, benchItems)
	for i := range texts {
		texts[i] = sentence(r)
	}
	start := time.Now()
	vecs, err := emb.Embed(ctx, texts)
	if err != nil {
		b.Fatal(err)
	}
	embedTime := time.Since(start)
	start = time.Now()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC()
	ns := func(i int) string { return fmt.Sprintf("bench.ns%02d", i%benchNamespaces) }
	key := func(i int) string { return fmt.Sprintf("k%06d", i) }
	kind := func(i int) string { return []string{"a", "b"}[(i/benchNamespaces)%2] }
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"store_items"}, []string{"prefix", "key", "value", "created_at", "updated_at"},
		pgx.CopyFromSlice(benchItems, func(i int) ([]any, error) {
			return []any{ns(i), key(i), map[string]any{"text": texts[i], "kind": kind(i), "i": i}, now, now}, nil
		})); err != nil {
		b.Fatal(err)
	}
	// Binary COPY needs a codec for the vector type; rather than register
	// one (pgvector-go's pulls in a module go.sum lacks), COPY the text
	// form into a staging table and cast in one INSERT … SELECT.
	if _, err := conn.Exec(ctx, `CREATE TEMP TABLE stage_vectors (prefix text, key text, embedding text)`); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"stage_vectors"}, []string{"prefix", "key", "embedding"},
		pgx.CopyFromSlice(benchItems, func(i int) ([]any, error) {
			return []any{ns(i), key(i), pgstore.VectorText(vecs[i])}, nil
		})); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO store_vectors (prefix, key, field, embedding)
		SELECT prefix, key, 'text', embedding::vector FROM stage_vectors; DROP TABLE stage_vectors`); err != nil {
		b.Fatal(err)
	}
	copyTime := time.Since(start)
	start = time.Now()
	if _, err := conn.Exec(ctx, `SET maintenance_work_mem = '512MB'`); err != nil {
		b.Fatal(err)
	}
	opts := pgstore.Options{Options: store.Options{Index: &store.IndexConfig{Embedder: emb, Fields: []string{"text"}}}}
	// Opening on this connection builds the HNSW index with its memory
	// setting; the store used below then finds the index in place.
	if _, err := pgstore.New(ctx, conn, opts); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE store_items; ANALYZE store_vectors`); err != nil {
		b.Fatal(err)
	}
	conn.Release()
	indexTime := time.Since(start)
	b.Logf("build: embed %v, COPY %v, HNSW index + analyze %v", embedTime, copyTime, indexTime)
	s, err := pgstore.New(ctx, pool, opts)
	if err != nil {
		b.Fatal(err)
	}

	queries := make([]string, 100)
	qvecs := make([][]float32, len(queries))
	for i := range queries {
		queries[i] = sentence(r)
	}
	if qvecs, err = emb.Embed(ctx, queries); err != nil {
		b.Fatal(err)
	}
	exact := func(qv []float32, match func(i int) bool) []string {
		type hit struct {
			key   string
			score float64
		}
		var hits []hit
		for i := range benchItems {
			if match(i) {
				hits = append(hits, hit{key(i), store.CosineSimilarity(qv, vecs[i])})
			}
		}
		slices.SortFunc(hits, func(a, b hit) int {
			if a.score != b.score {
				if a.score > b.score {
					return -1
				}
				return 1
			}
			return strings.Compare(a.key, b.key)
		})
		var out []string
		for _, h := range hits[:10] {
			out = append(out, h.key)
		}
		return out
	}

	for _, tc := range []struct {
		name  string
		op    func(q int) store.SearchOp
		match func(q, i int) bool
	}{
		{"prefix+filter", func(q int) store.SearchOp {
			return store.SearchOp{NamespacePrefix: []string{"bench", fmt.Sprintf("ns%02d", q%benchNamespaces)}, Filter: map[string]any{"kind": "a"}, Query: queries[q], Limit: 10, RefreshTTL: new(bool)}
		}, func(q, i int) bool { return i%benchNamespaces == q%benchNamespaces && kind(i) == "a" }},
		{"filter-only", func(q int) store.SearchOp {
			return store.SearchOp{NamespacePrefix: []string{"bench"}, Filter: map[string]any{"kind": "a"}, Query: queries[q], Limit: 10, RefreshTTL: new(bool)}
		}, func(_, i int) bool { return kind(i) == "a" }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			truth := make([][]string, len(queries))
			for q := range queries {
				truth[q] = exact(qvecs[q], func(i int) bool { return tc.match(q, i) })
			}
			var lat []time.Duration
			var found, total int
			q := 0
			for b.Loop() {
				t0 := time.Now()
				items, err := store.Search(ctx, s, tc.op(q))
				lat = append(lat, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				for _, it := range items {
					if slices.Contains(truth[q], it.Key) {
						found++
					}
				}
				total += len(truth[q])
				q = (q + 1) % len(queries)
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(found)/float64(total), "recall@10")
		})
	}
}

// BenchmarkStorePutBatch puts batches of 1000 new items, each embedded
// with the offline embedder, and reports items/s end to end (embedding,
// items, vectors, one transaction per batch).
func BenchmarkStorePutBatch(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.Schema(b, nil)
	s, err := pgstore.New(ctx, pool, pgstore.Options{Options: store.Options{Index: &store.IndexConfig{Embedder: embed.Offline(), Fields: []string{"text"}}}})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	n := 0
	start := time.Now()
	for b.Loop() {
		ops := make([]store.Op, 1000)
		for i := range ops {
			ops[i] = store.PutOp{Namespace: []string{"bench", fmt.Sprintf("ns%02d", n%benchNamespaces)}, Key: fmt.Sprintf("k%07d", n),
				Value: map[string]any{"text": sentence(r), "i": n}}
			n++
		}
		if _, err := s.Batch(ctx, ops); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "items/s")
}
