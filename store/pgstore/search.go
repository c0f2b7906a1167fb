package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/superstep-dev/superstep/store"
)

// query accumulates SQL text and its parameters; every value from the
// caller goes in as a parameter, never into the text.
type query struct {
	args []any
}

func (q *query) arg(v any) string {
	q.args = append(q.args, v)
	return "$" + strconv.Itoa(len(q.args))
}

func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("%w: %v", store.ErrInvalidValue, err)
	}
	return string(b), nil
}

// where builds the conditions on items (alias i) shared by every search:
// namespace prefix, not expired, filter. The first parameter is always
// now.
func where(q *query, prefix []string, f store.Filter) (string, error) {
	conds := []string{notExpired}
	if len(prefix) > 0 {
		// The prefix itself, or anything below it: a byte range on the "C"
		// collated column ('/' follows '.'), which the primary key serves
		// and which needs no LIKE escaping.
		p := store.JoinNamespace(prefix)
		conds = append(conds, fmt.Sprintf("(i.prefix = %s OR (i.prefix >= %s AND i.prefix < %s))", q.arg(p), q.arg(p+"."), q.arg(p+"/")))
	}
	fc, err := filterConds(q, f)
	if err != nil {
		return "", err
	}
	return strings.Join(append(conds, fc...), " AND "), nil
}

// vectorRange is the condition on vectors (alias v) of a namespace
// prefix: one byte range, [p, p+"/"), which holds the prefix, everything
// below it, and siblings such as p+"-x" whose next byte sorts before "/".
// A single range keeps the planner's estimate right (an OR becomes a
// bitmap scan); the siblings are dropped by itemPrefix on the item.
func vectorRange(q *query, prefix []string) string {
	if len(prefix) == 0 {
		return "true"
	}
	p := store.JoinNamespace(prefix)
	return fmt.Sprintf("v.prefix >= %s AND v.prefix < %s", q.arg(p), q.arg(p+"/"))
}

// itemConds is what an item found through vectorRange must also satisfy:
// the exact prefix boundary, not expired, and the filter.
func itemConds(q *query, prefix []string, f store.Filter) (string, error) {
	conds := []string{notExpired}
	if len(prefix) > 0 {
		p := store.JoinNamespace(prefix)
		conds = append(conds, fmt.Sprintf("(i.prefix = %s OR i.prefix >= %s)", q.arg(p), q.arg(p+".")))
	}
	fc, err := filterConds(q, f)
	if err != nil {
		return "", err
	}
	return strings.Join(append(conds, fc...), " AND "), nil
}

func filterConds(q *query, f store.Filter) ([]string, error) {
	var conds []string
	for _, c := range f {
		expr := "i.value"
		for _, seg := range c.Path {
			expr += " -> " + q.arg(seg) + "::text"
		}
		expr = "(" + expr + ")"
		switch c.Op {
		case store.OpEq, store.OpNe:
			v, err := jsonText(c.Value)
			if err != nil {
				return nil, err
			}
			op := "="
			if c.Op == store.OpNe {
				op = "IS DISTINCT FROM"
			}
			conds = append(conds, fmt.Sprintf("%s %s %s::jsonb", expr, op, q.arg(v)))
		default:
			op := map[store.Operator]string{store.OpGt: ">", store.OpGte: ">=", store.OpLt: "<", store.OpLte: "<="}[c.Op]
			// CASE, not AND: Postgres may evaluate AND's operands in any
			// order, and casting a string to numeric would fail.
			switch v := c.Value.(type) {
			case float64:
				conds = append(conds, fmt.Sprintf("CASE WHEN jsonb_typeof(%s) = 'number' THEN %s::numeric %s %s::numeric ELSE false END",
					expr, expr, op, q.arg(strconv.FormatFloat(v, 'g', -1, 64))))
			case string:
				conds = append(conds, fmt.Sprintf(`CASE WHEN jsonb_typeof(%s) = 'string' THEN (%s #>> '{}') %s %s::text COLLATE "C" ELSE false END`,
					expr, expr, op, q.arg(v)))
			default:
				return nil, fmt.Errorf("%w: %s needs a number or a string", store.ErrInvalidFilter, c.Op)
			}
		}
	}
	return conds, nil
}

func (s *Store) search(ctx context.Context, db DB, sr store.PreparedSearch, now time.Time) ([]store.SearchItem, error) {
	out := []store.SearchItem{}
	if sr.HasQuery && sr.QueryVector == nil {
		return out, nil
	}
	var rows []scored
	if !sr.HasQuery {
		q := &query{}
		q.arg(now)
		cond, err := where(q, sr.Prefix, sr.Filter)
		if err != nil {
			return nil, err
		}
		rows, err = collect(ctx, db, `SELECT i.prefix, i.key, i.value, i.created_at, i.updated_at
			FROM store_items i WHERE `+cond+`
			ORDER BY i.updated_at DESC, i.prefix, i.key LIMIT `+q.arg(sr.Limit)+` OFFSET `+q.arg(sr.Offset), q.args)
		if err != nil {
			return nil, err
		}
	} else {
		var err error
		if rows, err = s.vectorSearch(ctx, db, sr, now); err != nil {
			return nil, err
		}
	}
	var prefixes, keys []string
	for _, r := range rows {
		it := store.SearchItem{Item: store.Item{
			Namespace: store.SplitNamespace(r.prefix), Key: r.key, Value: r.value,
			CreatedAt: r.created.UTC(), UpdatedAt: r.updated.UTC(),
		}}
		if sr.HasQuery {
			score := r.score
			it.Score = &score
		}
		out = append(out, it)
		prefixes, keys = append(prefixes, r.prefix), append(keys, r.key)
	}
	if sr.Refresh {
		if err := refresh(ctx, db, prefixes, keys, now); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// scored is a row of a search: an item and, for a search with a query,
// pgvector's distance from the query to the nearest of its vectors, its
// vectors, and its score.
type scored struct {
	prefix, key      string
	value            map[string]any
	created, updated time.Time
	dist             float64
	vecs             [][]float32
	score            float64
}

// optScored is a scored row of an outer join, NULL when there is no item.
type optScored struct {
	prefix, key      *string
	value            map[string]any
	created, updated *time.Time
	dist             *float64
	vecs             [][]float32
}

func (o optScored) scored() scored {
	return scored{prefix: *o.prefix, key: *o.key, value: o.value, created: *o.created, updated: *o.updated, dist: *o.dist, vecs: o.vecs}
}

func collect(ctx context.Context, db DB, sql string, args []any) ([]scored, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("pgstore: search: %w", err)
	}
	defer rows.Close()
	var out []scored
	for rows.Next() {
		var r scored
		if err := rows.Scan(&r.prefix, &r.key, &r.value, &r.created, &r.updated); err != nil {
			return nil, fmt.Errorf("pgstore: search: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: search: %w", err)
	}
	return out, nil
}

// defaultMaxCandidates bounds the widening of an index scan: a search
// that needs more candidates is answered exactly (exactSearch without a
// cap), which is then the cheaper way.
const defaultMaxCandidates = 200_000

// vectorSearch ranks the items under the prefix that pass the filter by
// their best vector's score (see rank): exactly when at most
// ExactSearchMax vectors lie under the prefix (exactSearch), else through
// the HNSW index (searchIndex).
func (s *Store) vectorSearch(ctx context.Context, db DB, sr store.PreparedSearch, now time.Time) ([]scored, error) {
	page, ok, err := exactSearch(ctx, db, sr, now, s.opts.ExactSearchMax)
	if err != nil || ok {
		return page, err
	}
	return s.searchIndex(ctx, db, sr, now)
}

// vectorQuery starts both searches' SQL: its parameters (now first), the
// condition on vectors under the prefix (vr, alias v), the one on items
// (ic, alias i) and the query vector's parameter (qv).
func vectorQuery(sr store.PreparedSearch, now time.Time) (q *query, vr, ic, qv string, err error) {
	q = &query{}
	q.arg(now)
	vr = vectorRange(q, sr.Prefix)
	if ic, err = itemConds(q, sr.Prefix, sr.Filter); err != nil {
		return nil, "", "", "", err
	}
	return q, vr, ic, q.arg(VectorText(sr.QueryVector)), nil
}

// uncapped is exactSearch's cap when it must answer whatever the number
// of vectors: then it counts none.
const uncapped = 1 << 40

// exactSearch is the exact search, unless more than capped vectors lie
// under the prefix: then it returns ok false. The vectors are counted (up
// to capped+1) from the primary key in the same statement as the search.
// Every vector under the prefix is read from the covering index (prefix,
// key, field) INCLUDE (embedding), which is ordered by namespace, so a
// namespace's vectors are a few adjacent pages however its items were
// interleaved on the heap. They are max-pooled per item and sorted by
// pgvector's distance; items are then fetched in that order and filtered,
// and the LIMIT stops the fetching at the end of the window (see window),
// so a filter passing half the items costs about twice the window's item
// reads, not one per vector. The window's items come with their vectors,
// which rank orders.
func exactSearch(ctx context.Context, db DB, sr store.PreparedSearch, now time.Time, capped int) ([]scored, bool, error) {
	q, vr, ic, qv, err := vectorQuery(sr, now)
	if err != nil {
		return nil, false, err
	}
	dim := strconv.Itoa(len(sr.QueryVector))
	limit := strconv.Itoa(capped)
	count := `(SELECT count(*) AS n FROM (SELECT FROM store_vectors v WHERE ` + vr + ` LIMIT ` + limit + ` + 1) x)`
	if capped == uncapped {
		count = `(SELECT 0 AS n)`
	}
	sql := `SELECT n.n, r.prefix, r.key, r.value, r.created_at, r.updated_at, r.dist,
			(SELECT array_agg(w.embedding::real[]) FROM store_vectors w
				WHERE w.prefix = r.prefix AND w.key = r.key AND vector_dims(w.embedding) = ` + dim + `)
		FROM ` + count + ` n
		LEFT JOIN LATERAL (
			SELECT i.prefix, i.key, i.value, i.created_at, i.updated_at, c.dist
			FROM (SELECT v.prefix, v.key, min(v.embedding <=> ` + qv + `::vector) AS dist
				FROM store_vectors v WHERE ` + vr + ` AND vector_dims(v.embedding) = ` + dim + ` AND n.n <= ` + limit + `
				GROUP BY v.prefix, v.key ORDER BY dist, v.prefix, v.key) c
			CROSS JOIN LATERAL (SELECT i.prefix, i.key, i.value, i.created_at, i.updated_at FROM store_items i
				WHERE i.prefix = c.prefix AND i.key = c.key AND ` + ic + ` LIMIT 1) i
			ORDER BY c.dist, c.prefix, c.key ` + windowClause + `) r ON true`
	w := newWindow(sr)
	for {
		sql, args := w.clause(sql, q)
		out, total, err := scanExactPage(ctx, db, sql, args)
		if err != nil {
			return nil, false, err
		}
		if total > capped {
			return nil, false, nil
		}
		if page, _, ok := w.settle(out, sr.QueryVector); ok {
			return page, true, nil
		}
	}
}

// scanExactPage runs exactSearch's query: its rows, and the number of
// vectors under the prefix (up to its cap plus one).
func scanExactPage(ctx context.Context, db DB, sql string, args []any) (out []scored, n int, err error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("pgstore: search: %w", err)
	}
	out, err = scanWindow(rows, &n)
	return out, n, err
}

// scanWindow reads a search's window: each row's leading columns (the
// counts the search reports on every row) into head, then its item, if
// any (else the counts' row alone).
func scanWindow(rows pgx.Rows, head ...any) ([]scored, error) {
	defer rows.Close()
	var out []scored
	var r optScored
	dest := append(head, &r.prefix, &r.key, &r.value, &r.created, &r.updated, &r.dist, &r.vecs)
	for rows.Next() {
		r = optScored{}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("pgstore: search: %w", err)
		}
		if r.prefix != nil {
			out = append(out, r.scored())
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: search: %w", err)
	}
	return out, nil
}

// searchIndex is the approximate search: the HNSW index yields the
// prefix's vectors nearest first (pgvector's iterative scan goes on past
// vectors outside the prefix, with no bound on the tuples it visits, so
// that fewer candidates than asked means the index has no more), the
// first k of them are max-pooled per item and the items filtered; the
// window of them is read and ranked (see window). k widens until the
// window is full and no item beyond the k candidates could rank in the
// page, or the index has no more; a search that needs more than the store's
// maxCandidates is answered exactly.
func (s *Store) searchIndex(ctx context.Context, db DB, sr store.PreparedSearch, now time.Time) ([]scored, error) {
	want := sr.Offset + sr.Limit
	ef := strconv.Itoa(min(max(s.opts.EFSearch, want), 1000))
	dim := strconv.Itoa(len(sr.QueryVector))
	q, vr, ic, qv, err := vectorQuery(sr, now)
	if err != nil {
		return nil, err
	}
	k := q.arg(0)
	// The candidates' count and farthest distance, and the count of
	// items passing, come on every row, and on a row of their own when
	// the window is empty. The candidates and the items passing carry
	// keys, distances and ctids only: the window's items alone are read
	// whole, and their vectors by ctid (cheaper than exactSearch's index
	// probes) for rank. An item's vectors that are not candidates are
	// farther than every candidate, so they would not raise its score.
	sql := `WITH c AS MATERIALIZED (
			SELECT v.prefix, v.key, v.embedding::vector(` + dim + `) <=> ` + qv + `::vector(` + dim + `) AS dist, v.ctid AS at
			FROM store_vectors v
			WHERE ` + vr + ` AND vector_dims(v.embedding) = ` + dim + `
			ORDER BY v.embedding::vector(` + dim + `) <=> ` + qv + `::vector(` + dim + `)
			LIMIT ` + k + `),
		p AS MATERIALIZED (
			SELECT s.prefix, s.key, s.dist, s.ats
			FROM (SELECT prefix, key, min(dist) AS dist, array_agg(at) AS ats FROM c GROUP BY prefix, key) s
			JOIN store_items i ON i.prefix = s.prefix AND i.key = s.key
			WHERE ` + ic + `)
		SELECT (SELECT count(*) FROM c), (SELECT coalesce(max(dist), 0) FROM c), (SELECT count(*) FROM p),
			r.prefix, r.key, i.value, i.created_at, i.updated_at, r.dist,
			(SELECT array_agg(w.embedding::real[]) FROM store_vectors w WHERE w.ctid = ANY(r.ats))
		FROM (SELECT) one LEFT JOIN LATERAL (
			SELECT * FROM p ORDER BY dist, prefix, key ` + windowClause + `) r ON true
		LEFT JOIN store_items i ON i.prefix = r.prefix AND i.key = r.key`
	w := newWindow(sr)
	maxCandidates := s.opts.maxCandidates
	for cands := want*2 + 16; cands <= maxCandidates; {
		q.args[len(q.args)-1] = cands // k
		sql, args := w.clause(sql, q)
		out, got, farthest, passed, err := scanIndexPage(ctx, db, ef, sql, args)
		if err != nil {
			return nil, err
		}
		exhausted := got < cands
		front := w.front
		page, open, ok := w.settle(out, sr.QueryVector)
		if !ok {
			// settle widened the window. Items before the page are
			// nearer than it, so among the candidates already; items
			// after it may need more candidates.
			if w.front != front || exhausted || passed >= w.end() {
				continue
			}
		} else if open || exhausted ||
			len(page) == sr.Limit && page[len(page)-1].score > 1-farthest+roundoff(len(sr.QueryVector)) {
			// The window ends before the candidates do, or the index has
			// no more, or every item beyond the candidates is at least as
			// far as the farthest (up to the iterative scan's relaxed
			// order), so none would rank in the page.
			return page, nil
		}
		// Too few candidates pass to fill the window, or the page's last
		// item is within rounding of the farthest candidate: widen by the
		// observed pass rate (the filter's selectivity), at least
		// fourfold, and up to maxCandidates once.
		grow := 4
		if passed > 0 {
			grow = max(grow, 2*w.end()/passed+1)
		}
		if cands == maxCandidates {
			break
		}
		cands = min(cands*grow, maxCandidates)
	}
	page, _, err := exactSearch(ctx, db, sr, now, uncapped)
	return page, err
}

// scanIndexPage runs one try of searchIndex's query, with the index
// scan's settings made just before it in the same transaction: one round
// trip (a pgx batch runs in one implicit transaction, or in db's when it
// is one), and the settings end with that transaction. Custom plans: a
// generic plan cannot see the LIMIT and may not use the index at all. The
// iterative scan may visit every tuple (hnsw.max_scan_tuples, 20,000 by
// default, would end it early and look like an index with no more). It
// returns the window's items, the number of candidates read, the
// farthest candidate's distance, and the number of items passing.
func scanIndexPage(ctx context.Context, db DB, ef, sql string, args []any) (out []scored, got int, farthest float64, passed int, err error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT set_config('plan_cache_mode', 'force_custom_plan', true),
		set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', $1, true),
		set_config('hnsw.max_scan_tuples', '2147483647', true)`, ef)
	b.Queue(sql, args...)
	br := db.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, 0, 0, 0, fmt.Errorf("pgstore: search: configure: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		return nil, 0, 0, 0, fmt.Errorf("pgstore: search: %w", err)
	}
	out, err = scanWindow(rows, &got, &farthest, &passed)
	return out, got, farthest, passed, err
}

func list(ctx context.Context, tx pgx.Tx, l store.PreparedList, now time.Time) ([][]string, error) {
	q := &query{}
	q.arg(now)
	// Conditions compare whole labels as parameters: no pattern
	// language, so "_", "%", "\" and newlines are ordinary characters.
	conds := []string{"true"}
	for _, c := range l.Conditions {
		conds = append(conds, "cardinality(ns) >= "+q.arg(len(c.Path)))
		for j, label := range c.Path {
			if label == "*" {
				continue
			}
			idx := strconv.Itoa(j + 1)
			if c.Type == store.MatchSuffix {
				idx = "cardinality(ns) - " + strconv.Itoa(len(c.Path)-1-j)
			}
			conds = append(conds, "ns["+idx+"] = "+q.arg(label))
		}
	}
	trunc := "ns"
	if l.MaxDepth > 0 {
		trunc = "ns[1:" + q.arg(l.MaxDepth) + "]"
	}
	rows, err := tx.Query(ctx, `SELECT DISTINCT array_to_string(`+trunc+`, '.') COLLATE "C" AS t
		FROM (SELECT DISTINCT string_to_array(i.prefix, '.') AS ns FROM store_items i WHERE `+notExpired+`) n
		WHERE `+strings.Join(conds, " AND ")+`
		ORDER BY t LIMIT `+q.arg(l.Limit)+` OFFSET `+q.arg(l.Offset), q.args...)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list namespaces: %w", err)
	}
	defer rows.Close()
	out := [][]string{}
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, fmt.Errorf("pgstore: list namespaces: %w", err)
		}
		out = append(out, store.SplitNamespace(t))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: list namespaces: %w", err)
	}
	return out, nil
}
