-- Studio run log (package runs/pgthreads, RunLog): per thread, one row per
-- run with what checkpoints do not hold: how the run started (kind, the
-- checkpoint it started from, the page or API it came through), each
-- task's outcome (cached, cancelled, duration, attempts, error) and the
-- interrupt answers of a resume. The run manager writes a row when the run
-- has got going and again when it ends; rows are bounded in size (see
-- runs.CheckRunRecord). The thread page folds them into what it rebuilds
-- from checkpoints, so a reload shows what a live tab showed.
CREATE TABLE studio_runs (
    thread_id       text COLLATE "C" NOT NULL,
    run_id          text COLLATE "C" NOT NULL,
    kind            text        NOT NULL CHECK (kind IN ('start', 'resume', 'rerun')),
    from_checkpoint text        NOT NULL,
    origin          text        NOT NULL,
    started_at      timestamptz NOT NULL,
    -- NULL while the run goes on.
    ended_at        timestamptz,
    status          text        NOT NULL,
    error           text        NOT NULL,
    -- [{step, task, node, outcome, ms, attempts, error}], at most
    -- runs.MaxRunTasks entries.
    tasks           jsonb       NOT NULL,
    -- [{id, node, question, answer, origin, at}], at most runs.MaxRunAnswers.
    answers         jsonb       NOT NULL,
    PRIMARY KEY (thread_id, run_id)
);

-- A page reads a thread's latest runs.
CREATE INDEX studio_runs_thread_started_idx ON studio_runs (thread_id, started_at DESC, run_id DESC);
---- create above / drop below ----
DROP TABLE studio_runs;
