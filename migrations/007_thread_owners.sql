-- Thread owners (package runs/pgthreads): which Studio process runs a
-- thread's active run, and when each process last said it was alive. A
-- Studio that starts settles the running threads of owners that fell
-- silent (their process died) and leaves those of live ones alone, so two
-- Studios on one database do not mark each other's runs as failed.
ALTER TABLE studio_threads ADD COLUMN owner text COLLATE "C" NOT NULL DEFAULT '';

CREATE TABLE studio_owners (
    owner   text COLLATE "C" NOT NULL PRIMARY KEY,
    seen_at timestamptz NOT NULL
);

-- Orphans are looked for among running threads only.
CREATE INDEX studio_threads_running_idx ON studio_threads (owner) WHERE status = 'running';
---- create above / drop below ----
DROP INDEX studio_threads_running_idx;
DROP TABLE studio_owners;
ALTER TABLE studio_threads DROP COLUMN owner;
