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

// where builds the conditions shared by every search: namespace prefix,
// not expired, filter. The first parameter is always now.
func where(q *query, prefix []string, f store.Filter) (string, error) {
	conds := []string{notExpired}
	if len(prefix) > 0 {
		// The prefix itself, or anything below it: a byte range on the "C"
		// collated column ('/' follows '.'), which the primary key serves
		// and which needs no LIKE escaping.
		p := store.JoinNamespace(prefix)
		conds = append(conds, fmt.Sprintf("(i.prefix = %s OR (i.prefix >= %s AND i.prefix < %s))", q.arg(p), q.arg(p+"."), q.arg(p+"/")))
	}
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
				return "", err
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
				return "", fmt.Errorf("%w: %s needs a number or a string", store.ErrInvalidFilter, c.Op)
			}
		}
	}
	return strings.Join(conds, " AND "), nil
}

func (s *Store) search(ctx context.Context, tx pgx.Tx, sr store.PreparedSearch, now time.Time) ([]store.SearchItem, error) {
	out := []store.SearchItem{}
	if sr.HasQuery && sr.QueryVector == nil {
		return out, nil
	}
	q := &query{}
	q.arg(now)
	cond, err := where(q, sr.Prefix, sr.Filter)
	if err != nil {
		return nil, err
	}
	var rows []scored
	if !sr.HasQuery {
		rows, err = collect(ctx, tx, `SELECT i.prefix, i.key, i.value, i.created_at, i.updated_at, NULL::float8
			FROM store_items i WHERE `+cond+`
			ORDER BY i.updated_at DESC, i.prefix, i.key LIMIT `+q.arg(sr.Limit)+` OFFSET `+q.arg(sr.Offset), q.args)
	} else {
		rows, err = s.vectorSearch(ctx, tx, sr, q, cond)
	}
	if err != nil {
		return nil, err
	}
	var prefixes, keys []string
	for _, r := range rows {
		it := store.SearchItem{Item: store.Item{
			Namespace: store.SplitNamespace(r.prefix), Key: r.key, Value: r.value,
			CreatedAt: r.created.UTC(), UpdatedAt: r.updated.UTC(),
		}}
		if r.dist != nil {
			// Score = 1 - cosine distance = cosine similarity.
			score := 1 - *r.dist
			it.Score = &score
		}
		out = append(out, it)
		prefixes, keys = append(prefixes, r.prefix), append(keys, r.key)
	}
	if sr.Refresh {
		if err := refresh(ctx, tx, prefixes, keys, now); err != nil {
			return nil, err
		}
	}
	return out, nil
}

type scored struct {
	prefix, key      string
	value            map[string]any
	created, updated time.Time
	dist             *float64
}

func collect(ctx context.Context, tx pgx.Tx, sql string, args []any) ([]scored, error) {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("pgstore: search: %w", err)
	}
	defer rows.Close()
	var out []scored
	for rows.Next() {
		var r scored
		if err := rows.Scan(&r.prefix, &r.key, &r.value, &r.created, &r.updated, &r.dist); err != nil {
			return nil, fmt.Errorf("pgstore: search: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: search: %w", err)
	}
	return out, nil
}

// maxCandidates bounds the widening of an index scan; past it the search
// falls back to an exact scan.
const maxCandidates = 200_000

func (s *Store) vectorSearch(ctx context.Context, tx pgx.Tx, sr store.PreparedSearch, q *query, cond string) ([]scored, error) {
	vec := VectorText(sr.QueryVector)
	dim := strconv.Itoa(len(sr.QueryVector))
	want := sr.Offset + sr.Limit
	// Custom plans only: a cached generic plan cannot see the LIMIT or how
	// selective the prefix is, and silently picks a bad strategy.
	ef := min(max(s.opts.EFSearch, want), 1000)
	if _, err := tx.Exec(ctx, `SELECT set_config('plan_cache_mode', 'force_custom_plan', true),
		set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', $1, true)`, strconv.Itoa(ef)); err != nil {
		return nil, fmt.Errorf("pgstore: search: configure: %w", err)
	}
	// Exact first, capped: the distance of every vector passing the prefix
	// and filter (at most ExactSearchMax+1 of them), max-pooled per item
	// (min distance), ordered and paged after de-duplication. The distance
	// is on the untyped column, which the HNSW expression index cannot
	// serve, so this is a scan by construction. When the cap is hit the
	// answer would be partial, and the index is used instead.
	exactArgs := append([]any(nil), q.args...)
	eq := &query{args: exactArgs}
	qv := eq.arg(vec)
	rows, err := tx.Query(ctx, `WITH c AS MATERIALIZED (
			SELECT v.prefix, v.key, v.embedding <=> `+qv+`::vector AS dist
			FROM store_items i JOIN store_vectors v ON v.prefix = i.prefix AND v.key = i.key
			WHERE `+cond+` LIMIT `+strconv.Itoa(s.opts.ExactSearchMax+1)+`)
		SELECT i.prefix, i.key, i.value, i.created_at, i.updated_at, s.dist, (SELECT count(*) FROM c)
		FROM (SELECT prefix, key, min(dist) AS dist FROM c GROUP BY prefix, key) s
		JOIN store_items i ON i.prefix = s.prefix AND i.key = s.key
		ORDER BY s.dist, i.prefix, i.key LIMIT `+eq.arg(sr.Limit)+` OFFSET `+eq.arg(sr.Offset), eq.args...)
	if err != nil {
		return nil, fmt.Errorf("pgstore: search: %w", err)
	}
	out, total, err := scanCounted(rows)
	if err != nil {
		return nil, err
	}
	// An empty deep page carries no count: it may be past the end, or past
	// a capped candidate set, so only the index path can tell.
	if total <= s.opts.ExactSearchMax && (len(out) > 0 || sr.Offset == 0) {
		return out, nil
	}
	// Approximate: the HNSW index yields candidates nearest first (the
	// iterative scan keeps going past filtered-out rows); widen until the
	// candidates hold enough distinct items, so deep pages are complete.
	qv = q.arg(vec)
	limitArg := q.arg(0)
	pageArgs := fmt.Sprintf("LIMIT %s OFFSET %s", q.arg(sr.Limit), q.arg(sr.Offset))
	sql := `WITH c AS MATERIALIZED (
			SELECT v.prefix, v.key, v.embedding::vector(` + dim + `) <=> ` + qv + `::vector(` + dim + `) AS dist
			FROM store_vectors v JOIN store_items i ON i.prefix = v.prefix AND i.key = v.key
			WHERE ` + cond + ` AND vector_dims(v.embedding) = ` + dim + `
			ORDER BY v.embedding::vector(` + dim + `) <=> ` + qv + `::vector(` + dim + `)
			LIMIT ` + limitArg + `)
		SELECT i.prefix, i.key, i.value, i.created_at, i.updated_at, s.dist, (SELECT count(*) FROM c)
		FROM (SELECT prefix, key, min(dist) AS dist FROM c GROUP BY prefix, key) s
		JOIN store_items i ON i.prefix = s.prefix AND i.key = s.key
		ORDER BY s.dist, i.prefix, i.key ` + pageArgs
	for cands := want*4 + 16; ; cands *= 2 {
		cands = min(cands, maxCandidates)
		q.args[len(q.args)-3] = cands // limitArg
		rows, err := tx.Query(ctx, sql, q.args...)
		if err != nil {
			return nil, fmt.Errorf("pgstore: search: %w", err)
		}
		out, total, err := scanCounted(rows)
		if err != nil {
			return nil, err
		}
		if len(out) == sr.Limit || total < cands || cands == maxCandidates {
			return out, nil
		}
	}
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

// scanCounted reads search rows that carry the candidate count as a last
// column.
func scanCounted(rows pgx.Rows) ([]scored, int, error) {
	defer rows.Close()
	var out []scored
	var total int
	for rows.Next() {
		var r scored
		if err := rows.Scan(&r.prefix, &r.key, &r.value, &r.created, &r.updated, &r.dist, &total); err != nil {
			return nil, 0, fmt.Errorf("pgstore: search: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("pgstore: search: %w", err)
	}
	return out, total, nil
}
