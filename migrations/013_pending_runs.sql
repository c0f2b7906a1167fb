-- Runs waiting for their thread (issue #19): the Agent Server API's
-- enqueued runs (multitask_strategy "enqueue") and delayed ones
-- (after_seconds) are pending rows of studio_run_queue, so that they
-- survive the process that received them and any replica starts them.
-- A pending run is started by a river job ("superstep.start") that is
-- only ever made for the head of a free thread's queue: by the finish of
-- the thread's active run, in the same transaction, or by the reaper when
-- that job was lost.
ALTER TABLE studio_run_queue
    -- Not started before this (after_seconds); NULL: as soon as its turn
    -- comes.
    ADD COLUMN not_before timestamptz,
    -- The job that starts it, once it is the head of a free thread.
    ADD COLUMN job_id bigint,
    -- When that job was made (or comes due): a head of a free thread
    -- still pending a lease's length later lost its job and gets another.
    ADD COLUMN dispatched_at timestamptz;

-- How many runs are pending on the thread, kept on its lease row: a claim
-- or a finish reads it from the row it locks, so it sees an enqueue that
-- committed while it waited for the lock (a subquery would read the
-- statement's older snapshot).
ALTER TABLE studio_thread_leases ADD COLUMN pending int NOT NULL DEFAULT 0 CHECK (pending >= 0);

-- A rollback holds the thread's pending runs while it deletes the
-- cancelled run's checkpoints. Its process renews the hold while it lasts;
-- should that process die, the hold lapses at until.
CREATE TABLE studio_queue_holds (
    thread_id text COLLATE "C" NOT NULL,
    hold_id   text COLLATE "C" NOT NULL,
    until     timestamptz NOT NULL,
    PRIMARY KEY (thread_id, hold_id)
);

-- When other processes continued a run (runs.Takeover, JSON), so that a
-- page shows it after a reload as a live tab did.
ALTER TABLE studio_runs ADD COLUMN takeovers jsonb;
---- create above / drop below ----
ALTER TABLE studio_runs DROP COLUMN takeovers;
DROP TABLE studio_queue_holds;
ALTER TABLE studio_thread_leases DROP COLUMN pending;
ALTER TABLE studio_run_queue DROP COLUMN dispatched_at, DROP COLUMN job_id, DROP COLUMN not_before;
