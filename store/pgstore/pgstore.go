// Package pgstore is the Postgres implementation of store.Store, with
// pgvector for semantic search. Its schema is migrations/002_store.sql.
//
// Vectors are sent as text ('[0.1,0.2,…]'::vector), so the store works on
// any pgx pool or transaction without registering pgvector types on its
// connections. The vectors table has an untyped vector column; at open the
// store creates an HNSW index (vector_cosine_ops, m = hnswM) on
// embedding::vector(dim) for the dimension recorded in store_index.
//
// A batch's writes are one statement in its transaction (putSQL): the
// deleted items, the upserted items and their vectors, which replace the
// old ones. A vector whose text did not change is left as it is, so a
// re-put costs the vector indexes nothing for it.
//
// A search with a query is exact when at most Options.ExactSearchMax
// vectors lie under the namespace prefix: they are read from a covering
// btree (prefix, key, field) INCLUDE (embedding), kept in namespace order,
// so one namespace's vectors are adjacent pages however its items were
// interleaved when written. Items are then fetched nearest first and
// filtered until the page's window (the page, slack on either side and a
// sentinel item) is full. Above the cap the HNSW index is used with
// pgvector's iterative scan, widening the candidate set until the window
// is full and no item beyond the candidates could rank in the page; a
// search that would need more than 200,000 candidates is answered
// exactly. See vectorSearch and window.
//
// Either way SQL only picks the candidates: the page's items, a few on
// either side of it, and their vectors (as real[]) come back, and Go
// ranks them by store.CosineSimilarity, then namespace, then key, so
// scores and order are the memory store's to the last bit. pgvector's
// float32 distance rounds differently (its sums are vectorised), which
// reorders near-identical vectors: on BenchmarkStoreSearch100k's corpus
// its exact ranking agrees with store.CosineSimilarity's top 10 only 96%
// of the time. A page deep in the results sends and ranks no more than
// one near the top (the server still passes over the items before it).
// See rank and window.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"

	"github.com/superstep-dev/superstep/internal/pgretry"
	"github.com/superstep-dev/superstep/store"
)

// DB is what the store needs from pgx: a *pgxpool.Pool, a *pgx.Conn or a
// pgx.Tx (whose Begin makes a savepoint) all satisfy it.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Options configure a Postgres store.
type Options struct {
	store.Options
	// ExactSearchMax is the largest number of vectors under a search's
	// namespace prefix that a query scans exactly; above it the HNSW
	// index is used. 0 means 5000.
	ExactSearchMax int
	// EFSearch is hnsw.ef_search for index scans; 0 means 100.
	EFSearch int
	// RetryWindow is how long a batch that met a transient database fault
	// (connection refused or reset, a server restart) is retried before
	// its error is returned; 0 means pgretry.DefaultWindow (30 s) on a
	// pool, negative no retry. A DB that is not a pool is never retried.
	// A batch of writes whose outcome is unknown is sent again only when
	// its transaction is found not to have committed; a batch that also
	// reads and did commit is an error (its reads were lost).
	RetryWindow time.Duration

	// maxCandidates is the most candidates an index search reads before
	// it answers exactly instead; 0 means defaultMaxCandidates. Tests set
	// it low to reach that fallback without 200,000 vectors.
	maxCandidates int
}

// Store is the Postgres store. It is safe for concurrent use when its DB
// is (a pool is; a single connection or transaction is not).
type Store struct {
	db   DB
	opts Options
	now  func() time.Time
	dims int
}

var _ store.Store = (*Store)(nil)

// New opens the store on a database migrated with package migrations.
// With an IndexConfig it checks the recorded embedder: a first open
// records it, a different name or dimension fails with
// store.ErrEmbedderMismatch unless IndexConfig.Reembed is set, in which
// case every item is embedded again before New returns.
func New(ctx context.Context, db DB, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.ExactSearchMax <= 0 {
		opts.ExactSearchMax = 5000
	}
	if opts.EFSearch <= 0 {
		opts.EFSearch = 100
	}
	if opts.maxCandidates <= 0 {
		opts.maxCandidates = defaultMaxCandidates
	}
	if _, pool := db.(*pgxpool.Pool); !pool {
		opts.RetryWindow = -1 // a transaction's connection cannot come back
	}
	s := &Store{db: db, opts: opts, now: opts.Clock()}
	if opts.Index == nil {
		return s, nil
	}
	s.dims = opts.Index.Embedder.Dim()
	if err := s.openIndex(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// hnswM is the HNSW index's m (pgvector's default is 16). Inserting a
// vector adds it to the neighbour lists of its 2m nearest elements at the
// bottom layer; a full list is chosen again from its up to 2m entries plus
// the new one, all loaded and compared, so a put's index maintenance grows
// faster than m², and it is most of a batched put's time. At m = 10 it
// takes about 0.6 of the server time per vector that m = 16 does (0.25 ms
// against 0.43 on BenchmarkStorePutBatch). Recall on
// BenchmarkStoreSearch100k's whole-store query is no lower: it depends
// more on how the index is built (see openIndex) than on m: eleven serial
// builds at m = 10 gave 0.948-0.959 (median 0.957). New builds an index
// only when none exists: an index an older version built (m = 16) is kept,
// since rebuilding it in New would block the store's writes for the whole
// build. To move such a store to m = 10, build the new index by hand
// (CREATE INDEX CONCURRENTLY ... WITH (m = 10), as openIndex defines it,
// under another name; then drop the old one and rename the new one).
const hnswM = 10

func hnswIndexName(dims int) string { return "store_vectors_hnsw_d" + strconv.Itoa(dims) }

func (s *Store) openIndex(ctx context.Context) error {
	emb := s.opts.Index.Embedder
	return pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		// Two processes opening at once must not both re-embed or race on
		// CREATE INDEX.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('superstep.store.' || current_schema()))`); err != nil {
			return fmt.Errorf("pgstore: lock index metadata: %w", err)
		}
		var name string
		var dims int
		err := tx.QueryRow(ctx, `SELECT embedder, dims FROM store_index`).Scan(&name, &dims)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			if _, err := tx.Exec(ctx, `INSERT INTO store_index (embedder, dims) VALUES ($1, $2)`, emb.Name(), emb.Dim()); err != nil {
				return fmt.Errorf("pgstore: record embedder: %w", err)
			}
		case err != nil:
			return fmt.Errorf("pgstore: read index metadata: %w", err)
		case name == emb.Name() && dims == emb.Dim():
		case !s.opts.Index.Reembed:
			return fmt.Errorf("%w: the stored vectors are from %q (%d dimensions), the store is opened with %q (%d); set IndexConfig.Reembed to re-embed every item",
				store.ErrEmbedderMismatch, name, dims, emb.Name(), emb.Dim())
		default:
			if _, err := tx.Exec(ctx, `DROP INDEX IF EXISTS `+hnswIndexName(dims)+`, `+coverIndexName); err != nil {
				return fmt.Errorf("pgstore: drop old vector index: %w", err)
			}
			if _, err := tx.Exec(ctx, `UPDATE store_index SET embedder = $1, dims = $2, updated_at = now()`, emb.Name(), emb.Dim()); err != nil {
				return fmt.Errorf("pgstore: record embedder: %w", err)
			}
			if err := s.reembed(ctx, tx); err != nil {
				return err
			}
		}
		cover := `CREATE INDEX IF NOT EXISTS ` + coverIndexName + ` ON store_vectors (prefix, key, field) INCLUDE (embedding)`
		if emb.Dim() > coverMaxDims {
			cover = `DROP INDEX IF EXISTS ` + coverIndexName
		}
		if _, err := tx.Exec(ctx, cover); err != nil {
			return fmt.Errorf("pgstore: covering vector index: %w", err)
		}
		// The HNSW index is built by this backend alone: pgvector's
		// parallel build (workers inserting into one graph at once) left
		// clusters of near-identical vectors unreachable in six of
		// fifteen builds of BenchmarkStoreSearch100k's corpus, at m from
		// 10 to 16 (whole-store recall@10 0.932-0.941, against
		// 0.951-0.960 for the others); of seventeen serial builds one
		// did (0.936, at m = 12), and eleven at m = 10 gave 0.948-0.959.
		// A serial build takes longer, once. The setting ends with this
		// transaction.
		if _, err := tx.Exec(ctx, `SELECT set_config('max_parallel_maintenance_workers', '0', true)`); err != nil {
			return fmt.Errorf("pgstore: create vector index: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE INDEX IF NOT EXISTS `+hnswIndexName(emb.Dim())+
			` ON store_vectors USING hnsw ((embedding::vector(`+strconv.Itoa(emb.Dim())+`)) vector_cosine_ops)`+
			` WITH (m = `+strconv.Itoa(hnswM)+`)`+
			// Partial: an index build also reads rows deleted by this
			// transaction (a re-embed's old vectors), whose cast would fail.
			` WHERE vector_dims(embedding) = `+strconv.Itoa(emb.Dim())); err != nil {
			return fmt.Errorf("pgstore: create vector index: %w", err)
		}
		return nil
	})
}

// coverIndexName is the btree on store_vectors (prefix, key, field) that
// also holds the embedding, so an exact search reads a namespace's vectors
// from adjacent index pages without visiting the heap (see vectorSearch).
const coverIndexName = "store_vectors_cover"

// coverMaxDims is the largest dimension given a covering index. A btree
// entry holds at most about 2.7 kB; a 256-d vector takes 1 kB of it,
// leaving the rest for namespace, key and field. Larger embeddings are
// searched exactly through the primary key and the heap instead.
const coverMaxDims = 256

// reembedChunk is how many items a re-embed reads and embeds at a time.
const reembedChunk = 500

func (s *Store) reembed(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `DELETE FROM store_vectors`); err != nil {
		return fmt.Errorf("pgstore: re-embed: %w", err)
	}
	lastPrefix, lastKey := "", ""
	for {
		rows, err := tx.Query(ctx, `SELECT prefix, key, value, index_fields FROM store_items
			WHERE (prefix, key) > ($1, $2) ORDER BY prefix, key LIMIT `+strconv.Itoa(reembedChunk), lastPrefix, lastKey)
		if err != nil {
			return fmt.Errorf("pgstore: re-embed: read items: %w", err)
		}
		var ops []store.Op
		for rows.Next() {
			var prefix, key string
			var value map[string]any
			var fields []string
			if err := rows.Scan(&prefix, &key, &value, &fields); err != nil {
				rows.Close()
				return fmt.Errorf("pgstore: re-embed: %w", err)
			}
			lastPrefix, lastKey = prefix, key
			ops = append(ops, store.PutOp{Namespace: store.SplitNamespace(prefix), Key: key, Value: value, Index: fields, TTL: store.NoTTL})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("pgstore: re-embed: %w", err)
		}
		if len(ops) == 0 {
			return nil
		}
		p, err := store.Prepare(ctx, ops, s.opts.Options)
		if err != nil {
			return fmt.Errorf("pgstore: re-embed: %w", err)
		}
		var a putArgs
		for _, put := range p.Puts {
			a.addVectors(store.JoinNamespace(put.Namespace), put)
		}
		if _, err := a.exec(ctx, tx, s.now()); err != nil {
			return fmt.Errorf("pgstore: re-embed: %w", err)
		}
	}
}

// Batch implements store.Store.
func (s *Store) Batch(ctx context.Context, ops []store.Op) ([]store.Result, error) {
	p, err := store.Prepare(ctx, ops, s.opts.Options)
	if err != nil {
		return nil, err
	}
	now := s.now()
	res := make([]store.Result, p.N)
	// xid is the transaction id of the last attempt that wrote, returned
	// by its write statement: whether that transaction committed is
	// exactly whether its writes landed (pg_xact_status), whatever other
	// batches did to the same items since. An attempt whose write
	// statement did not answer never sent its COMMIT, so it did not land.
	var xid string
	op := pgretry.Op{Run: func(ctx context.Context) error { xid = ""; return s.batch(ctx, p, res, now, &xid) }}
	if len(p.Puts) > 0 {
		op.Landed = func(ctx context.Context) (bool, error) {
			if xid == "" {
				return false, nil // its write statement never answered: no COMMIT was sent
			}
			var status *string
			if err := s.db.QueryRow(ctx, `SELECT pg_xact_status($1::xid8)`, xid).Scan(&status); err != nil {
				return false, err
			}
			committed := status != nil && *status == "committed"
			if committed && len(p.Gets)+len(p.Searches)+len(p.Lists) > 0 {
				return false, errReadsUnknown
			}
			return committed, nil
		}
	}
	if err := pgretry.Do(ctx, s.opts.RetryWindow, op); err != nil {
		return nil, err
	}
	return res, nil
}

// errReadsUnknown: a batch that reads and writes met a fault after it was
// sent, and its transaction committed: its writes are in, but its reads
// were lost and cannot be repeated as they were (before the writes).
var errReadsUnknown = errors.New("pgstore: the batch was applied, but the connection was lost before its reads came back; read the items again")

// batch runs a prepared batch once, filling res.
func (s *Store) batch(ctx context.Context, p *store.Prepared, res []store.Result, now time.Time, xid *string) error {
	// A lone search that refreshes nothing is one statement: it needs no
	// transaction, which saves two round trips (BEGIN, COMMIT).
	if p.N == 1 && len(p.Searches) == 1 && !p.Searches[0].Refresh {
		items, err := s.search(ctx, s.db, p.Searches[0], now)
		if err != nil {
			return err
		}
		res[0].Items = items
		return nil
	}
	return pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		for _, g := range p.Gets {
			it, err := s.get(ctx, tx, g, now)
			if err != nil {
				return err
			}
			res[g.Index].Item = it
		}
		for _, sr := range p.Searches {
			items, err := s.search(ctx, tx, sr, now)
			if err != nil {
				return err
			}
			res[sr.Index].Items = items
		}
		for _, l := range p.Lists {
			ns, err := list(ctx, tx, l, now)
			if err != nil {
				return err
			}
			res[l.Index].Namespaces = ns
		}
		if len(p.Puts) == 0 {
			return nil
		}
		var err error
		*xid, err = applyPuts(ctx, tx, p.Puts, now)
		return err
	})
}

const notExpired = `(i.expires_at IS NULL OR i.expires_at > $1::timestamptz)`

func (s *Store) get(ctx context.Context, tx pgx.Tx, g store.PreparedGet, now time.Time) (*store.Item, error) {
	it := &store.Item{Namespace: g.Namespace, Key: g.Key}
	err := tx.QueryRow(ctx, `SELECT i.value, i.created_at, i.updated_at FROM store_items i
		WHERE i.prefix = $2 AND i.key = $3 AND `+notExpired, now, store.JoinNamespace(g.Namespace), g.Key).
		Scan(&it.Value, &it.CreatedAt, &it.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: get: %w", err)
	}
	if g.Refresh {
		if err := refresh(ctx, tx, []string{store.JoinNamespace(g.Namespace)}, []string{g.Key}, now); err != nil {
			return nil, err
		}
	}
	it.CreatedAt, it.UpdatedAt = it.CreatedAt.UTC(), it.UpdatedAt.UTC()
	return it, nil
}

func refresh(ctx context.Context, db DB, prefixes, keys []string, now time.Time) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := db.Exec(ctx, `UPDATE store_items i SET expires_at = $1::timestamptz + i.ttl_us * interval '1 microsecond'
		FROM unnest($2::text[], $3::text[]) AS u(prefix, key)
		WHERE i.prefix = u.prefix AND i.key = u.key AND i.ttl_us IS NOT NULL`, now, prefixes, keys)
	if err != nil {
		return fmt.Errorf("pgstore: refresh TTL: %w", err)
	}
	return nil
}

// putSQL writes a batch's puts in one statement: deletes (with their
// vectors, by cascade), upserted items, and the upserted items' vectors,
// which replace the old ones (never merged: a re-put with fewer matches or
// without indexing leaves nothing stale behind). A vector whose field the
// put embeds again is updated in place, and only when it changed, so a
// re-put of the same text leaves the vector indexes alone. It returns the
// transaction's id (see Batch).
//
// The parts write disjoint rows, so the order in which Postgres runs them
// does not matter; the vectors' foreign key is checked at the end of the
// statement, after the items are in.
//
// An expired but unswept item is gone for readers, so a put over it
// starts a new item (a fresh created_at), as in the memory store.
const putSQL = `WITH u AS (
		SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[])
			AS u(prefix, key, value, ttl_us, fields, vector_fields)),
	deleted AS (
		DELETE FROM store_items i USING unnest($8::text[], $9::text[]) AS d(prefix, key)
		WHERE i.prefix = d.prefix AND i.key = d.key),
	items AS (
		INSERT INTO store_items AS i (prefix, key, value, created_at, updated_at, expires_at, ttl_us, index_fields)
		SELECT u.prefix, u.key, u.value::jsonb, $1::timestamptz, $1::timestamptz, $1::timestamptz + u.ttl_us * interval '1 microsecond', u.ttl_us, u.fields::jsonb
		FROM u
		ON CONFLICT (prefix, key) DO UPDATE SET
			value = EXCLUDED.value,
			created_at = CASE WHEN i.expires_at IS NOT NULL AND i.expires_at <= EXCLUDED.updated_at THEN EXCLUDED.created_at ELSE i.created_at END,
			updated_at = EXCLUDED.updated_at,
			expires_at = EXCLUDED.expires_at,
			ttl_us = EXCLUDED.ttl_us,
			index_fields = EXCLUDED.index_fields),
	stale AS (
		DELETE FROM store_vectors v USING u
		WHERE v.prefix = u.prefix AND v.key = u.key AND NOT u.vector_fields::jsonb ? v.field),
	vectors AS (
		INSERT INTO store_vectors AS v (prefix, key, field, embedding)
		SELECT n.prefix, n.key, n.field, n.embedding::vector
		FROM unnest($10::text[], $11::text[], $12::text[], $13::text[]) AS n(prefix, key, field, embedding)
		ON CONFLICT (prefix, key, field) DO UPDATE SET embedding = EXCLUDED.embedding
		WHERE v.embedding IS DISTINCT FROM EXCLUDED.embedding)
	SELECT pg_current_xact_id()::text`

// putArgs are putSQL's parameters after now: items to upsert, items to
// delete, vectors to write.
type putArgs struct {
	upP, upK, upV         []string
	upTTL                 []*int64
	upFields, upVecFields []*string
	delP, delK            []string
	vp, vk, vf, vv        []string
}

func (a *putArgs) addVectors(prefix string, put store.PreparedPut) {
	for _, fv := range put.Vectors {
		a.vp, a.vk, a.vf, a.vv = append(a.vp, prefix), append(a.vk, put.Key), append(a.vf, fv.Field), append(a.vv, VectorText(fv.Vector))
	}
}

// exec runs putSQL and returns the transaction's id; callers wrap its
// error.
func (a *putArgs) exec(ctx context.Context, tx pgx.Tx, now time.Time) (string, error) {
	var xid string
	err := tx.QueryRow(ctx, putSQL, now, a.upP, a.upK, a.upV, a.upTTL, a.upFields, a.upVecFields,
		a.delP, a.delK, a.vp, a.vk, a.vf, a.vv).Scan(&xid)
	return xid, err
}

// applyPuts writes puts in one statement and returns the transaction's id.
func applyPuts(ctx context.Context, tx pgx.Tx, puts []store.PreparedPut, now time.Time) (string, error) {
	var a putArgs
	for _, put := range puts {
		prefix := store.JoinNamespace(put.Namespace)
		if put.Value == nil {
			a.delP, a.delK = append(a.delP, prefix), append(a.delK, put.Key)
			continue
		}
		v, err := jsonText(put.Value)
		if err != nil {
			return "", err
		}
		a.upP, a.upK, a.upV = append(a.upP, prefix), append(a.upK, put.Key), append(a.upV, v)
		var ttl *int64
		if put.TTL > 0 {
			us := put.TTL.Microseconds()
			ttl = &us
		}
		a.upTTL = append(a.upTTL, ttl)
		var fields *string
		if put.IndexSpec != nil {
			f, err := jsonText(put.IndexSpec)
			if err != nil {
				return "", err
			}
			fields = &f
		}
		a.upFields = append(a.upFields, fields)
		vecFields := make([]string, len(put.Vectors))
		for i, fv := range put.Vectors {
			vecFields[i] = fv.Field
		}
		vf, err := jsonText(vecFields)
		if err != nil {
			return "", err
		}
		a.upVecFields = append(a.upVecFields, &vf)
		a.addVectors(prefix, put)
	}
	xid, err := a.exec(ctx, tx, now)
	if err != nil {
		return "", fmt.Errorf("pgstore: put: %w", err)
	}
	return xid, nil
}

// VectorText formats v in pgvector's text form. Vectors travel as text
// parameters cast to vector in SQL, so callers' pools need no pgvector type
// registration.
func VectorText(v []float32) string {
	return pgvector.NewVector(v).String()
}

// Sweep implements store.Store.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	tag, err := s.db.Exec(ctx, `DELETE FROM store_items WHERE expires_at <= $1`, s.now())
	if err != nil {
		return 0, fmt.Errorf("pgstore: sweep: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
