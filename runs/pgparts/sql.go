package pgparts

import "github.com/superstep-dev/superstep/runs/pgevents"

// sqlStateFenced is the SQLSTATE studio_fence raises.
const sqlStateFenced = "SSF01"

const sqlFence = `SELECT studio_fence($1, $2)`

// sqlInsert takes the parts as parallel arrays; the ids are the caller's
// (the executing process's part log numbers them), so a part written
// twice would fail on the primary key rather than be shown twice.
const sqlInsert = `
INSERT INTO studio_run_parts (run_id, seq, thread_id, mode, namespace, data)
SELECT $1, p.id, $2, p.mode, p.ns::jsonb, p.data::json
FROM unnest($3::bigint[], $4::text[], $5::text[], $6::text[]) AS p(id, mode, ns, data)`

// sqlNotify's payload is "run_id seq": a run id is at most 128 bytes, so
// it stays far below NOTIFY's 8000-byte limit.
var sqlNotify = `SELECT pg_notify(` + pgevents.ChannelSQL(Channel) + `, $1)`

// sqlEnd numbers the end after the run's last row, unless it has one.
const sqlEnd = `
INSERT INTO studio_run_parts (run_id, seq, thread_id, mode, data)
SELECT $1, coalesce(max(seq), -1) + 1, $2, '', json_build_object('keep', $3::bool)
FROM studio_run_parts WHERE run_id = $1
HAVING NOT coalesce(bool_or(mode = ''), false)`

var sqlNotifyLast = `SELECT pg_notify(` + pgevents.ChannelSQL(Channel) + `,
  $1 || ' ' || (SELECT max(seq) FROM studio_run_parts WHERE run_id = $1))`

const sqlRead = `
SELECT seq, mode, namespace, data::text, at FROM studio_run_parts
WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`

// sqlState reads the run's newest row only: the end, when there is one,
// is always the last.
const sqlState = `
WITH top AS (SELECT seq, mode FROM studio_run_parts WHERE run_id = $1 ORDER BY seq DESC LIMIT 1)
SELECT coalesce((SELECT CASE WHEN mode = '' THEN seq - 1 ELSE seq END FROM top), -1),
       EXISTS (SELECT 1 FROM top),
       coalesce((SELECT mode = '' FROM top), false)`

// sqlPruneEnded ranks the ended runs kept ($1 of them) by when they
// ended, newest first, as the executing process's memory does.
const sqlPruneEnded = `
WITH ends AS (
  SELECT run_id, at, coalesce((data->>'keep')::boolean, false) AS keep
  FROM studio_run_parts WHERE mode = ''
), ranked AS (
  SELECT run_id, at, keep, row_number() OVER (PARTITION BY keep ORDER BY at DESC, run_id) AS n FROM ends
), gone AS (
  SELECT run_id FROM ranked
  WHERE at < now() - make_interval(secs => $2::float8)
     OR (keep AND n > $1::bigint)
     OR (NOT keep AND at < now() - make_interval(secs => $3::float8))
)
DELETE FROM studio_run_parts p USING gone WHERE p.run_id = gone.run_id`

// sqlPruneOld never deletes a run's newest row: a takeover numbers the
// run's next part after it.
const sqlPruneOld = `
DELETE FROM studio_run_parts p
USING (SELECT run_id, max(seq) AS top FROM studio_run_parts GROUP BY run_id) m
WHERE p.run_id = m.run_id AND p.seq < m.top
  AND p.at < now() - make_interval(secs => $1::float8)`
