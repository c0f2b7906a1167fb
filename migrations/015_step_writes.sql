-- A superstep's writes saved on the checkpoint they produced (package
-- checkpoints/pgsaver, PutStep and PutFrame).
--
-- A step's writes are the pending writes of its parent checkpoint. Saved
-- as rows of checkpoint_writes, a one-task step of two writes inserted
-- three rows; carried by the child's own row, it inserts one (with one
-- more entry, in the partial index below), the floor of a durable
-- superstep. parent_writes holds
-- the writes as one JSON array of [task id, task path, idx, channel,
-- value] in the order the step gave them (values as saved: valid JSON),
-- regular writes only (idx >= 0); special writes (errors, interrupts,
-- resumes), which replace rather than keep the first, always go to
-- checkpoint_writes. A checkpoint's pending writes are its rows in
-- checkpoint_writes and the parent_writes of its children, found through
-- the partial index below; for one task and idx the earlier save wins.
ALTER TABLE checkpoints ADD COLUMN parent_writes bytea;
CREATE INDEX checkpoints_parent_writes_idx ON checkpoints (thread_id, checkpoint_ns, parent_checkpoint_id)
    WHERE parent_writes IS NOT NULL;

---- create above / drop below ----

-- Writes carried by checkpoints go back to checkpoint_writes before the
-- column goes, so a downgrade keeps every pending write of a checkpoint
-- that is there (each value as jsonb prints it), the first saved of each
-- task and idx.
INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, encoding, value)
SELECT c.thread_id, c.checkpoint_ns, c.parent_checkpoint_id, w->>0, (w->>2)::int, w->>3, w->>1, 'json',
       convert_to((w->4)::text, 'UTF8')
FROM checkpoints c CROSS JOIN LATERAL jsonb_array_elements(convert_from(c.parent_writes, 'UTF8')::jsonb)
     WITH ORDINALITY AS e(w, n)
WHERE c.parent_writes IS NOT NULL
  AND EXISTS (SELECT 1 FROM checkpoints p WHERE p.thread_id = c.thread_id AND p.checkpoint_ns = c.checkpoint_ns
                                            AND p.checkpoint_id = c.parent_checkpoint_id)
ORDER BY c.seq, e.n
ON CONFLICT DO NOTHING;
DROP INDEX checkpoints_parent_writes_idx;
ALTER TABLE checkpoints DROP COLUMN parent_writes;
