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
		// The threads' locks first: what keepCarriedWrites reads must
		// include every checkpoint committed before them.
		lock := &pgx.Batch{}
		lockThreads(lock, threads)
		if err := tx.SendBatch(ctx, lock).Close(); err != nil {
			return err
		}
		b := &pgx.Batch{}
		if err := keepCarriedWrites(ctx, tx, b, threads, runs); err != nil {
			return err
		}
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

// sqlCarriedByGone reads the writes that checkpoints of runs $2 in
// threads $1 carry for parents of other runs, which DeleteForRuns keeps,
// in the order they were saved.
const sqlCarriedByGone = `
SELECT c.thread_id, c.checkpoint_ns, c.parent_checkpoint_id, c.parent_writes
FROM checkpoints c, unnest($2::text[]) AS r(id)
WHERE c.thread_id = ANY($1) AND c.metadata @> jsonb_build_object('run_id', r.id)
  AND c.parent_writes IS NOT NULL AND c.parent_checkpoint_id IS NOT NULL
  AND EXISTS (
      SELECT 1 FROM checkpoints p
      WHERE p.thread_id = c.thread_id AND p.checkpoint_ns = c.checkpoint_ns AND p.checkpoint_id = c.parent_checkpoint_id
        AND NOT p.metadata @> ANY (SELECT jsonb_build_object('run_id', x) FROM unnest($2::text[]) AS x))
ORDER BY c.seq`

// keepCarriedWrites queues, ahead of DeleteForRuns' deletes, the writes
// that a deleted checkpoint carries for a kept parent as rows of
// checkpoint_writes (first write kept), so that the parent keeps its
// pending writes as when every write was a row, and as the memory saver
// keeps them.
func keepCarriedWrites(ctx context.Context, tx pgx.Tx, b *pgx.Batch, threads, runs []string) error {
	rows, err := tx.Query(ctx, sqlCarriedByGone, threads, runs)
	if err != nil {
		return err
	}
	type carried struct {
		thread, ns, parent string
		writes             []byte
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (carried, error) {
		var c carried
		err := row.Scan(&c.thread, &c.ns, &c.parent, &c.writes)
		return c, err
	})
	if err != nil {
		return err
	}
	for _, c := range found {
		ws, err := unpackWrites(c.writes)
		if err != nil {
			return fmt.Errorf("%w: writes carried for checkpoint %s: %v", ErrCorrupt, c.parent, err)
		}
		r := &writeRows{}
		for _, w := range ws {
			r.task, r.path, r.idx = append(r.task, w.task), append(r.path, w.path), append(r.idx, w.idx)
			r.ch, r.val = append(r.ch, w.channel), append(r.val, []byte(w.value))
		}
		b.Queue(sqlKeepWrites, c.thread, c.ns, c.parent, r.task, r.path, r.idx, r.ch, r.val)
	}
	return nil
}

// sqlKeepWrites inserts writes that were carried, keeping a row already
// there (saved first). It is not sqlInsertWrites: that one skips a write
// a child carries, and the child carrying these is still there until the
// batch's delete.
const sqlKeepWrites = `
INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, encoding, value)
SELECT $1, $2, $3, x.t, x.i, x.c, x.p, 'json', x.v
FROM unnest($4::text[], $5::text[], $6::int[], $7::text[], $8::bytea[]) AS x(t, p, i, c, v)
ON CONFLICT DO NOTHING`
