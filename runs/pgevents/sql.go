package pgevents

import "strings"

// sqlChannelOf names the NOTIFY channel of schema s: the schema comes
// first so that test schemas on one database never hear each other, and a
// schema name too long to leave the channel within Postgres's 63 bytes is
// replaced by its md5 (32 hex digits).
const sqlChannelOf = `(CASE WHEN octet_length({s}) <= 49 THEN {s} ELSE md5({s}) END || '.{name}')`

// sqlChannel is the channel of the connection's current schema.
var sqlChannel = ChannelSQL("studio_events")

// ChannelSQL is the SQL expression naming the NOTIFY channel called name
// (a table's name, at most 13 bytes, of letters, digits and '_') in the
// connection's current schema: a Source's appends notify on it, and a
// Tailer following that Source listens on it.
func ChannelSQL(name string) string {
	return strings.NewReplacer("{s}", "current_schema()", "{name}", name).Replace(sqlChannelOf)
}

// lockClass is the first key of the advisory lock Append holds on its
// thread until commit (the second is a hash of the thread id): appends to
// one thread then commit in seq order, so the rows a reader sees always
// form a prefix of the thread's log, and a follower reading `seq > cursor`
// can never step over a row that commits later. A hash collision between
// two threads only makes their appends wait for each other.
const lockClass = 0x70676576 // "pgev"

const sqlFence = `SELECT studio_fence($1, $2)`

const sqlLock = `SELECT pg_advisory_xact_lock($1::int, hashtext($2))`

// sqlInsert numbers the bodies after the thread's current last seq. It
// runs after sqlLock in the same transaction, with a fresh snapshot, so it
// sees every earlier append of the thread.
const sqlInsert = `
WITH top AS (SELECT coalesce(max(seq), 0) AS n FROM studio_events WHERE thread_id = $1),
ins AS (
  INSERT INTO studio_events (thread_id, seq, run_id, body)
  SELECT $1, top.n + b.i, $2, b.body::jsonb
  FROM top, unnest($3::text[]) WITH ORDINALITY AS b(body, i)
  RETURNING seq)
SELECT min(seq), max(seq) FROM ins`

// sqlNotify carries only the thread and its last seq: followers read the
// rows from the table, so the payload stays ~150 bytes whatever the
// events hold, far below NOTIFY's 8000-byte limit. It runs after sqlInsert
// in the same batch, whose result it cannot use, so it looks the last seq
// up again (one index probe; the rows are the transaction's own).
var sqlNotify = `SELECT pg_notify(` + sqlChannel + `,
  $1 || ' ' || (SELECT max(seq) FROM studio_events WHERE thread_id = $1))`

const sqlRead = `
SELECT seq, run_id, body, at FROM studio_events
WHERE thread_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`

// sqlPrune never deletes a thread's newest row, so that a thread's seq
// never starts again at 1 under a follower whose cursor is further on.
const sqlPrune = `
DELETE FROM studio_events e
USING (SELECT thread_id, max(seq) AS top FROM studio_events GROUP BY thread_id) m
WHERE e.thread_id = m.thread_id
  AND e.seq <= m.top - greatest($1::bigint, 1)
  AND e.at < now() - make_interval(secs => $2::float8)`

// sqlRecent reads, newest first, the events of the run the thread's log
// ends with, back to the last event of another run.
const sqlRecent = `
WITH latest AS (
  SELECT seq, run_id FROM studio_events WHERE thread_id = $1 ORDER BY seq DESC LIMIT 1
), before AS (
  SELECT coalesce(max(e.seq), 0) AS seq FROM studio_events e, latest
  WHERE e.thread_id = $1 AND e.run_id <> latest.run_id
)
SELECT e.seq, e.run_id, e.body, e.at FROM studio_events e, before
WHERE e.thread_id = $1 AND e.seq > before.seq
ORDER BY e.seq DESC LIMIT $2`
