-- Studio threads (package runs/pgthreads): the run manager's thread
-- registry, one row per thread. Checkpoints hold a thread's state; this
-- row holds what they do not: the graph it belongs to, how its last run
-- ended, and the options a resume reuses. Pending interrupts are read from
-- the checkpoints, never copied here.
CREATE TABLE studio_threads (
    -- Collated "C" so that the list's tie order is the bytewise order of
    -- the memory registry.
    id               text COLLATE "C" NOT NULL PRIMARY KEY,
    graph            text COLLATE "C" NOT NULL,
    status           text        NOT NULL
        CHECK (status IN ('idle', 'running', 'interrupted', 'error')),
    run_id           text        NOT NULL,
    error            text        NOT NULL,
    updated_at       timestamptz NOT NULL,
    -- The breakpoint nodes the last run stopped at.
    stopped_before   text[]      NOT NULL,
    stopped_after    text[]      NOT NULL,
    -- The last run's options.
    interrupt_before text[]      NOT NULL,
    interrupt_after  text[]      NOT NULL,
    recursion_limit  integer     NOT NULL
);

-- The threads page lists newest first, optionally by status or graph; each
-- filter has an index in list order so a page reads only its rows.
CREATE INDEX studio_threads_updated_idx ON studio_threads (updated_at DESC, id);
CREATE INDEX studio_threads_status_updated_idx ON studio_threads (status, updated_at DESC, id);
CREATE INDEX studio_threads_graph_updated_idx ON studio_threads (graph, updated_at DESC, id);
---- create above / drop below ----
DROP TABLE studio_threads;
