package pgsaver

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/superstep-dev/superstep/checkpoints"
)

// sqlLockThreads takes the exclusive advisory lock of each thread, the one
// a Put that references blobs takes shared, in a fixed order so that two
// maintenance calls cannot deadlock. The locks are taken before the
// statements that delete anything, which therefore see every checkpoint
// committed before them.
const sqlLockThreads = `
SELECT pg_advisory_xact_lock($1::int, k) FROM (SELECT DISTINCT k FROM unnest($2::int[]) AS k ORDER BY k) AS ks`

func lockThreads(b *pgx.Batch, threads []string) {
	keys := make([]int32, len(threads))
	for i, t := range threads {
		keys[i] = threadLock(t)
	}
	b.Queue(sqlLockThreads, lockClass, keys)
}

// sqlCollectGarbage deletes the blobs of threads $1 that no remaining
// checkpoint reads, directly or as a delta base.
const sqlCollectGarbage = `
WITH RECURSIVE live AS (
    SELECT c.thread_id, h.hash FROM checkpoints c, unnest(c.value_hashes) AS h(hash)
    WHERE c.thread_id = ANY($1) AND h.hash IS NOT NULL
    UNION
    SELECT b.thread_id, b.base FROM live
    JOIN checkpoint_blobs b ON b.thread_id = live.thread_id AND b.hash = live.hash
    WHERE b.base IS NOT NULL
)
DELETE FROM checkpoint_blobs b
WHERE b.thread_id = ANY($1) AND NOT EXISTS (SELECT 1 FROM live WHERE live.thread_id = b.thread_id AND live.hash = b.hash)`

// DeleteThread implements checkpoints.Saver.
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	if err := checkpoints.CheckDelete(threadID); err != nil {
		return err
	}
	if !checkpoints.ValidText(threadID) {
		return nil
	}
	if err := s.deleteThreads(ctx, []string{threadID}); err != nil {
		return fmt.Errorf("pgsaver: delete thread %s: %w", threadID, err)
	}
	return nil
}

func (s *Saver) deleteThreads(ctx context.Context, threads []string) error {
	defer s.forget(threads...)
	b := &pgx.Batch{}
	lockThreads(b, threads)
	for _, table := range []string{"checkpoint_writes", "checkpoints", "checkpoint_blobs"} {
		b.Queue("DELETE FROM "+table+" WHERE thread_id = ANY($1)", threads)
	}
	return s.pool.SendBatch(ctx, b).Close()
}

// CopyThread implements checkpoints.Saver.
func (s *Saver) CopyThread(ctx context.Context, src, dst string) error {
	if err := checkpoints.CheckCopy(src, dst); err != nil {
		return err
	}
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM checkpoints WHERE thread_id = $1)`, dst).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return fmt.Errorf("%w: cannot copy thread %q into %q, which has checkpoints", checkpoints.ErrThreadExists, src, dst)
		}
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO checkpoint_blobs (thread_id, hash, encoding, base, data)
			SELECT $2, hash, encoding, base, data FROM checkpoint_blobs WHERE thread_id = $1
			ON CONFLICT DO NOTHING`, src, dst)
		b.Queue(`INSERT INTO checkpoints (`+checkpointColumns+`)
			SELECT $2, checkpoint_ns, checkpoint_id, seq, parent_checkpoint_id, checkpoint, metadata,
			       value_channels, value_versions, value_hashes, value_inline, parent_writes
			FROM checkpoints WHERE thread_id = $1`, src, dst)
		b.Queue(`INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, encoding, value)
			SELECT $2, checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, encoding, value
			FROM checkpoint_writes WHERE thread_id = $1
			ON CONFLICT DO NOTHING`, src, dst)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return fmt.Errorf("pgsaver: copy thread %s to %s: %w", src, dst, err)
	}
	return nil
}

// Prune implements checkpoints.Saver.
func (s *Saver) Prune(ctx context.Context, threadIDs []string, strategy checkpoints.PruneStrategy) error {
	if err := checkpoints.CheckPrune(threadIDs, strategy); err != nil {
		return err
	}
	threads := slices.DeleteFunc(slices.Clone(threadIDs), func(t string) bool { return !checkpoints.ValidText(t) })
	if len(threads) == 0 {
		return nil
	}
	if strategy == checkpoints.DeleteAll {
		if err := s.deleteThreads(ctx, threads); err != nil {
			return fmt.Errorf("pgsaver: prune: %w", err)
		}
		return nil
	}
	defer s.forget(threads...)
	b := &pgx.Batch{}
	lockThreads(b, threads)
	b.Queue(`DELETE FROM checkpoints c WHERE c.thread_id = ANY($1) AND EXISTS (
		SELECT 1 FROM checkpoints n
		WHERE n.thread_id = c.thread_id AND n.checkpoint_ns = c.checkpoint_ns AND (n.seq, n.checkpoint_id) > (c.seq, c.checkpoint_id))`, threads)
	b.Queue(`DELETE FROM checkpoint_writes w WHERE w.thread_id = ANY($1) AND NOT EXISTS (
		SELECT 1 FROM checkpoints c
		WHERE c.thread_id = w.thread_id AND c.checkpoint_ns = w.checkpoint_ns AND c.checkpoint_id = w.checkpoint_id)`, threads)
	b.Queue(sqlCollectGarbage, threads)
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("pgsaver: prune: %w", err)
	}
	return nil
}

// sqlRunThreads finds the threads with checkpoints of runs $1 through the
// metadata GIN index: one containment probe per run id.
const sqlRunThreads = `
SELECT DISTINCT c.thread_id FROM unnest($1::text[]) AS r(id)
JOIN LATERAL (SELECT thread_id FROM checkpoints WHERE metadata @> jsonb_build_object('run_id', r.id)) c ON true`

// DeleteForRuns implements checkpoints.Saver.
func (s *Saver) DeleteForRuns(ctx context.Context, runIDs []string) error {
	runs := slices.DeleteFunc(slices.Clone(runIDs), func(r string) bool { return r == "" || !checkpoints.ValidText(r) })
	if len(runs) == 0 {
		return nil
	}
	var threads []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, sqlRunThreads, runs)
		if err != nil {
			return err
		}
		if threads, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || len(threads) == 0 {
			return err
		}
		// The threads' locks first: they wait out puts in flight that
		// take them (a put referencing blobs), which could otherwise lose
		// a blob to the garbage collection. A plain step's put takes
		// none and may commit between these statements; its checkpoint
		// is then a later child, which changes nothing kept here.
		b := &pgx.Batch{}
		lockThreads(b, threads)
		b.Queue(sqlKeepCarriedOfRuns, threads, runs)
		b.Queue(`WITH gone AS (
			DELETE FROM checkpoints c USING unnest($2::text[]) AS r(id)
			WHERE c.thread_id = ANY($1) AND c.metadata @> jsonb_build_object('run_id', r.id)
			RETURNING c.thread_id, c.checkpoint_ns, c.checkpoint_id)
		DELETE FROM checkpoint_writes w USING gone g
		WHERE w.thread_id = g.thread_id AND w.checkpoint_ns = g.checkpoint_ns AND w.checkpoint_id = g.checkpoint_id`, threads, runs)
		b.Queue(sqlCollectGarbage, threads)
		return tx.SendBatch(ctx, b).Close()
	})
	s.forget(threads...)
	if err != nil {
		return fmt.Errorf("pgsaver: delete for runs: %w", err)
	}
	return nil
}

// sqlKeepCarriedOfRuns inserts, ahead of DeleteForRuns' deletes, the
// writes that checkpoints of runs $2 in threads $1 carry for parents of
// other runs as rows of checkpoint_writes (see carriedToRows), so that a
// parent keeps its pending writes as when every write was a row, and as
// the memory saver keeps them.
var sqlKeepCarriedOfRuns = carriedToRows(`c.thread_id = ANY($1) AND ` + ofRuns("c", "$2") + ` AND NOT ` + ofRuns("p", "$2"))

// ofRuns is the condition that checkpoint alias belongs to one of the
// runs in the text[] parameter runs.
func ofRuns(alias, runs string) string {
	return alias + `.metadata @> ANY (SELECT jsonb_build_object('run_id', r) FROM unnest(` + runs + `::text[]) AS r)`
}

// carriedToRows is a statement that turns the writes carried
// (parent_writes) by the checkpoints c that released selects into rows
// of checkpoint_writes for their parent p, which must exist. The array is
// read as json, not jsonb, so each value keeps the bytes it was saved
// with. A write is kept only if it was the first saved of its task and
// idx: no row is there already (ON CONFLICT), and no child of the parent
// saved before it carries one (k.seq < c.seq), whether or not that child
// is released by the same statement, which still sees it. A
// parent_writes that is not a JSON array (only a hand-edited row could
// hold one) fails the statement with Postgres's json error, and its
// transaction with it: nothing is half-moved.
func carriedToRows(released string) string {
	return `
INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, encoding, value)
SELECT c.thread_id, c.checkpoint_ns, c.parent_checkpoint_id, e.w->>0, (e.w->>2)::int, e.w->>3, e.w->>1, 'json',
       convert_to((e.w->4)::text, 'UTF8')
FROM checkpoints c
JOIN checkpoints p ON p.thread_id = c.thread_id AND p.checkpoint_ns = c.checkpoint_ns AND p.checkpoint_id = c.parent_checkpoint_id
CROSS JOIN LATERAL json_array_elements(convert_from(c.parent_writes, 'UTF8')::json) WITH ORDINALITY AS e(w, n)
WHERE c.parent_writes IS NOT NULL AND ` + released + `
  AND NOT ` + sqlCarried("c.thread_id", "c.checkpoint_ns", "c.parent_checkpoint_id", "e.w->>0", "(e.w->>2)::int", " AND k.seq < c.seq") + `
ORDER BY c.seq, e.n
ON CONFLICT DO NOTHING`
}
