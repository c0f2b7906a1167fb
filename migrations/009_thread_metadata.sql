-- Thread metadata and times (package runs/pgthreads), for the Agent Server
-- API's Thread: the user's metadata (searched by containment), when the
-- thread was made, and when a run or an edit last wrote its state. Threads
-- made through the API have no graph until their first run: graph is ''
-- then (the column has no constraint to relax; runs.CheckThreadRecord
-- allows '' only for an idle thread with no run).
ALTER TABLE studio_threads
    ADD COLUMN metadata         jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN created_at       timestamptz,
    -- NULL until a run or an edit writes a checkpoint.
    ADD COLUMN state_updated_at timestamptz;

-- The first save of a thread predating this column is the best known
-- creation time left: its last update.
UPDATE studio_threads SET created_at = updated_at;
ALTER TABLE studio_threads ALTER COLUMN created_at SET NOT NULL;

-- POST /threads/search filters by metadata containment (@>), which
-- jsonb_path_ops indexes in less space than the default operator class.
CREATE INDEX studio_threads_metadata_idx ON studio_threads USING gin (metadata jsonb_path_ops);
-- The API lists newest created first by default; state_updated_at sorts
-- with never-written threads last when descending. Ties are by id.
CREATE INDEX studio_threads_created_idx ON studio_threads (created_at DESC, id);
CREATE INDEX studio_threads_state_updated_idx ON studio_threads (state_updated_at DESC NULLS LAST, id);
---- create above / drop below ----
DROP INDEX studio_threads_state_updated_idx;
DROP INDEX studio_threads_created_idx;
DROP INDEX studio_threads_metadata_idx;
ALTER TABLE studio_threads
    DROP COLUMN state_updated_at,
    DROP COLUMN created_at,
    DROP COLUMN metadata;
