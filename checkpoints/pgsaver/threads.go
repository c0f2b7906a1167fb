package pgsaver

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/superstep-dev/superstep/checkpoints"
)

// sqlLockThreads takes the row lock that Put's sequence bump also takes,
// in a fixed order so that two maintenance calls cannot deadlock.
const sqlLockThreads = `
SELECT thread_id FROM checkpoint_threads WHERE thread_id = ANY($1) ORDER BY thread_id FOR UPDATE`

// sqlCollectGarbage deletes the blobs (and version mappings) of threads $1
// that no remaining checkpoint reads, directly or as a delta base.
const sqlCollectGarbage = `
WITH RECURSIVE live AS (
    SELECT c.thread_id, h.hash FROM checkpoints c, unnest(c.blob_hashes) AS h(hash) WHERE c.thread_id = ANY($1)
    UNION
    SELECT b.thread_id, b.base FROM live
    JOIN checkpoint_blobs b ON b.thread_id = live.thread_id AND b.hash = live.hash
    WHERE b.base IS NOT NULL
), versions AS (
    DELETE FROM checkpoint_channel_versions m
    WHERE m.thread_id = ANY($1) AND NOT EXISTS (SELECT 1 FROM live WHERE live.thread_id = m.thread_id AND live.hash = m.hash)
)
DELETE FROM checkpoint_blobs b
WHERE b.thread_id = ANY($1) AND NOT EXISTS (SELECT 1 FROM live WHERE live.thread_id = b.thread_id AND live.hash = b.hash)`

// DeleteThread implements checkpoints.Saver.
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	if threadID == "" {
		return fmt.Errorf("%w: delete thread needs a thread id", checkpoints.ErrInvalidConfig)
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
	b.Queue(sqlLockThreads, threads)
	for _, table := range []string{"checkpoint_writes", "checkpoints", "checkpoint_channel_versions", "checkpoint_blobs", "checkpoint_threads"} {
		b.Queue("DELETE FROM "+table+" WHERE thread_id = ANY($1)", threads)
	}
	return s.pool.SendBatch(ctx, b).Close()
}

// CopyThread implements checkpoints.Saver.
func (s *Saver) CopyThread(ctx context.Context, src, dst string) error {
	if err := checkpoints.CheckCopy(src, dst); err != nil {
		return err
	}
	if !checkpoints.ValidText(src) || !checkpoints.ValidText(dst) {
		return fmt.Errorf("%w: thread ids must be valid UTF-8 without NUL", checkpoints.ErrInvalidConfig)
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
		b.Queue(`INSERT INTO checkpoint_threads AS t (thread_id, last_seq)
			SELECT $2, last_seq FROM checkpoint_threads WHERE thread_id = $1
			ON CONFLICT (thread_id) DO UPDATE SET last_seq = greatest(t.last_seq, excluded.last_seq)`, src, dst)
		b.Queue(`INSERT INTO checkpoint_blobs (thread_id, hash, encoding, base, data)
			SELECT $2, hash, encoding, base, data FROM checkpoint_blobs WHERE thread_id = $1
			ON CONFLICT DO NOTHING`, src, dst)
		b.Queue(`INSERT INTO checkpoint_channel_versions (thread_id, checkpoint_ns, channel, version, hash)
			SELECT $2, checkpoint_ns, channel, version, hash FROM checkpoint_channel_versions WHERE thread_id = $1
			ON CONFLICT DO NOTHING`, src, dst)
		b.Queue(`INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, seq, parent_checkpoint_id, run_id,
			                         checkpoint, metadata, blob_channels, blob_versions, blob_hashes)
			SELECT $2, checkpoint_ns, checkpoint_id, seq, parent_checkpoint_id, run_id,
			       checkpoint, metadata, blob_channels, blob_versions, blob_hashes
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
	b.Queue(sqlLockThreads, threads)
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

// DeleteForRuns implements checkpoints.Saver.
func (s *Saver) DeleteForRuns(ctx context.Context, runIDs []string) error {
	runs := slices.DeleteFunc(slices.Clone(runIDs), func(r string) bool { return r == "" || !checkpoints.ValidText(r) })
	if len(runs) == 0 {
		return nil
	}
	var threads []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT DISTINCT thread_id FROM checkpoints WHERE run_id = ANY($1)`, runs)
		if err != nil {
			return err
		}
		if threads, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || len(threads) == 0 {
			return err
		}
		b := &pgx.Batch{}
		b.Queue(sqlLockThreads, threads)
		b.Queue(`WITH gone AS (
			DELETE FROM checkpoints WHERE thread_id = ANY($1) AND run_id = ANY($2)
			RETURNING thread_id, checkpoint_ns, checkpoint_id)
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
