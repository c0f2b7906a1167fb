package pgstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/migrations"
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

// benchDataVersion is part of the name of the benchmark's corpus schema:
// bump it when the corpus generator or its loading changes, so a kept
// schema built by older code is never reused. The migrations are hashed
// into the name as well.
const benchDataVersion = "2"

// corpus is the benchmark's items: texts and their offline embeddings,
// generated deterministically once per process.
var corpus struct {
	once  sync.Once
	texts []string
	vecs  [][]float32
	err   error
}

func benchCorpus(b *testing.B) ([]string, [][]float32) {
	corpus.once.Do(func() {
		r := rand.New(rand.NewPCG(1, 2))
		corpus.texts = make([]string, benchItems)
		for i := range corpus.texts {
			corpus.texts[i] = sentence(r)
		}
		corpus.vecs, corpus.err = embed.Offline().Embed(context.Background(), corpus.texts)
	})
	if corpus.err != nil {
		b.Fatal(corpus.err)
	}
	return corpus.texts, corpus.vecs
}

func benchNS(i int) string  { return fmt.Sprintf("bench.ns%02d", i%benchNamespaces) }
func benchKey(i int) string { return fmt.Sprintf("k%06d", i) }

// tieScore is the score difference below which two items tie: float32
// rounding of a sum of 100 terms (see BenchmarkStoreSearch100k).
const tieScore = 1e-6

// benchIndex is the corpus index of a key made by benchKey.
func benchIndex(key string) int {
	i, err := strconv.Atoi(strings.TrimPrefix(key, "k"))
	if err != nil {
		panic(err)
	}
	return i
}

func benchKind(i int) string { return []string{"a", "b"}[(i/benchNamespaces)%2] }

// benchSchemaName is derived from the migrations and benchDataVersion.
func benchSchemaName(b *testing.B) string {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(migrations.FS(), path)
		fmt.Fprintf(h, "%s\x00%d\x00%s", path, len(data), data)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(h, "corpus %s %d %d", benchDataVersion, benchItems, benchNamespaces)
	return "bench_store_" + hex.EncodeToString(h.Sum(nil))[:16]
}

// benchStorePool returns a pool on the 100k-item corpus schema. Building
// it takes about a minute, so the schema is kept and reused by later runs:
// its name hashes the migrations and benchDataVersion, a marker table
// written last says the build completed, and an advisory lock serialises
// builders. Schemas of older versions are dropped. Searches in the
// benchmark do not refresh TTLs, so they leave the corpus unchanged.
func benchStorePool(b *testing.B, opts pgstore.Options) *pgxpool.Pool {
	ctx := context.Background()
	admin := pgtest.Pool(b)
	name := benchSchemaName(b)
	lock, err := admin.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer lock.Release()
	if _, err := lock.Exec(ctx, `SELECT pg_advisory_lock(hashtext('superstep.bench.store100k'))`); err != nil {
		b.Fatal(err)
	}
	defer lock.Exec(ctx, `SELECT pg_advisory_unlock(hashtext('superstep.bench.store100k'))`) //nolint:errcheck

	cfg := admin.Config().Copy()
	cfg.ConnConfig.RuntimeParams = maps.Clone(cfg.ConnConfig.RuntimeParams)
	cfg.ConnConfig.RuntimeParams["search_path"] = name + ",public"
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	var ready bool
	if err := lock.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, name+".bench_ready").Scan(&ready); err != nil {
		b.Fatal(err)
	}
	if ready {
		return pool
	}
	rows, err := lock.Query(ctx, `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'bench\_store\_%'`)
	if err != nil {
		b.Fatal(err)
	}
	stale, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range stale {
		if _, err := lock.Exec(ctx, `DROP SCHEMA `+pgx.Identifier{s}.Sanitize()+` CASCADE`); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := lock.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{name}.Sanitize()); err != nil {
		b.Fatal(err)
	}
	if err := migrations.Up(ctx, pool); err != nil {
		b.Fatal(err)
	}
	loadBenchCorpus(b, pool, opts)
	if _, err := pool.Exec(ctx, `CREATE TABLE bench_ready ()`); err != nil {
		b.Fatal(err)
	}
	return pool
}

// loadBenchCorpus fills the store's tables with COPY and builds the
// indexes after the load, as a bulk import would.
func loadBenchCorpus(b *testing.B, pool *pgxpool.Pool, opts pgstore.Options) {
	ctx := context.Background()
	texts, vecs := benchCorpus(b)
	start := time.Now()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	now := time.Now().UTC()
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"store_items"}, []string{"prefix", "key", "value", "created_at", "updated_at"},
		pgx.CopyFromSlice(benchItems, func(i int) ([]any, error) {
			return []any{benchNS(i), benchKey(i), map[string]any{"text": texts[i], "kind": benchKind(i), "i": i}, now, now}, nil
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
			return []any{benchNS(i), benchKey(i), pgstore.VectorText(vecs[i])}, nil
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
	// Opening on this connection builds the indexes with its memory
	// setting; stores opened later find them in place.
	if _, err := pgstore.New(ctx, conn, opts); err != nil {
		b.Fatal(err)
	}
	// VACUUM sets the visibility map (index-only scans), ANALYZE the
	// statistics: the state a table reaches under autovacuum.
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE store_items`); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE store_vectors`); err != nil {
		b.Fatal(err)
	}
	b.Logf("built the corpus: COPY %v, indexes + vacuum %v", copyTime, time.Since(start))
}

// BenchmarkStoreSearch100k searches 100k items in 50 namespaces, embedded
// with the offline GloVe embedder (100-d). The corpus schema is built on
// first use and kept (see benchStorePool).
//
// "prefix+filter" is the task's query (one namespace, one filter, limit
// 10): 2000 vectors under the prefix, which the store scans exactly.
// "filter-only" spans every namespace (100k vectors) and goes through the
// HNSW index. Both report p50-ms and recall@10 against an exact search
// computed in Go.
//
// The corpus's texts are six words from a topic's ten, so many items hold
// the same words in another order: their vectors differ only by float32
// rounding, and which of such near-twins is "tenth" depends on that
// rounding (Go's float64 here, pgvector's float32). recall@10 counts them
// as misses anyway; recall@10-ties also counts a returned item whose
// exact score is within tieScore of the true tenth, which is what a
// better search could still improve.
func BenchmarkStoreSearch100k(b *testing.B) {
	ctx := context.Background()
	emb := embed.Offline()
	opts := pgstore.Options{Options: store.Options{Index: &store.IndexConfig{Embedder: emb, Fields: []string{"text"}}}}
	pool := benchStorePool(b, opts)
	_, vecs := benchCorpus(b)
	s, err := pgstore.New(ctx, pool, opts)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	key, kind := benchKey, benchKind

	queries := make([]string, 100)
	for i := range queries {
		queries[i] = sentence(r)
	}
	qvecs, err := emb.Embed(ctx, queries)
	if err != nil {
		b.Fatal(err)
	}
	// exact is the true top 10 under match, and the tenth's score.
	exact := func(qv []float32, match func(i int) bool) ([]string, float64) {
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
		return out, hits[9].score
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
			tenth := make([]float64, len(queries))
			for q := range queries {
				truth[q], tenth[q] = exact(qvecs[q], func(i int) bool { return tc.match(q, i) })
			}
			var lat []time.Duration
			var found, tied, total int
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
					if store.CosineSimilarity(qvecs[q], vecs[benchIndex(it.Key)]) >= tenth[q]-tieScore {
						tied++
					}
				}
				total += len(truth[q])
				q = (q + 1) % len(queries)
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(found)/float64(total), "recall@10")
			b.ReportMetric(float64(tied)/float64(total), "recall@10-ties")
		})
	}
}

// precomputed is an embedder that returns vectors computed before the
// timed part of a benchmark, looked up by text, so the benchmark measures
// the store and not the embedding model. It carries the name and
// dimension of the embedder that computed them.
type precomputed struct {
	name string
	dim  int
	vecs map[string][]float32
}

func (p *precomputed) Name() string { return p.name }
func (p *precomputed) Dim() int     { return p.dim }

func (p *precomputed) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v, ok := p.vecs[t]
		if !ok {
			return nil, fmt.Errorf("precomputed: no vector for %q", t)
		}
		out[i] = v
	}
	return out, nil
}

// BenchmarkStorePutBatch puts batches of 1000 new items into a store with
// its HNSW index, one transaction per batch, and reports items/s. Each
// batch's texts are embedded with the offline embedder before the timed
// part (the store gets them through precomputed), so the figure is the
// store's: items, vectors and both vector indexes maintained.
func BenchmarkStorePutBatch(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.Schema(b, nil)
	offline := embed.Offline()
	emb := &precomputed{name: offline.Name(), dim: offline.Dim()}
	s, err := pgstore.New(ctx, pool, pgstore.Options{Options: store.Options{Index: &store.IndexConfig{Embedder: emb, Fields: []string{"text"}}}})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	n := 0
	var put time.Duration
	for b.Loop() {
		b.StopTimer()
		ops := make([]store.Op, 1000)
		texts := make([]string, len(ops))
		for i := range ops {
			texts[i] = sentence(r)
			ops[i] = store.PutOp{Namespace: []string{"bench", fmt.Sprintf("ns%02d", n%benchNamespaces)}, Key: fmt.Sprintf("k%07d", n),
				Value: map[string]any{"text": texts[i], "i": n}}
			n++
		}
		vecs, err := offline.Embed(ctx, texts)
		if err != nil {
			b.Fatal(err)
		}
		emb.vecs = make(map[string][]float32, len(texts))
		for i, t := range texts {
			emb.vecs[t] = vecs[i]
		}
		b.StartTimer()
		t0 := time.Now()
		if _, err := s.Batch(ctx, ops); err != nil {
			b.Fatal(err)
		}
		put += time.Since(t0)
	}
	b.ReportMetric(float64(n)/put.Seconds(), "items/s")
}
