-- Durable runs shared by several Studio replicas on one database (issue
-- #19). A thread's lease row says which replica executes its active run and
-- carries the fence that every checkpoint write of that run must present;
-- the run queue holds the requests of the thread's active and pending runs,
-- so that any replica can continue or start them; studio_events keeps a
-- run's stream events for clients that join on another replica. River's own
-- tables (the recovery tickets) are installed next to these by package
-- migrations, after this file.
CREATE TABLE studio_thread_leases (
    thread_id  text COLLATE "C" PRIMARY KEY,
    -- Only grows, so a write carrying an older fence can always be told
    -- apart; the row is kept while the thread lives for that reason.
    fence      bigint NOT NULL DEFAULT 0,
    run_id     text COLLATE "C",
    job_id     bigint,
    -- '' while the run waits for a worker to take it over.
    holder     text COLLATE "C" NOT NULL DEFAULT '',
    -- The database's now() + ttl: replicas' clocks are never compared.
    expires_at timestamptz,
    -- While the run waits for a worker (holder ''): when to give it a new
    -- job, should the one it has never be taken (its worker died between
    -- fetching it and taking the lease).
    redispatch_at timestamptz
);

-- The reaper looks for expired leases among held ones only.
CREATE INDEX studio_thread_leases_held ON studio_thread_leases (expires_at) WHERE holder <> '';
-- The reaper looks for runs whose job was lost among waiting ones only.
CREATE INDEX studio_thread_leases_waiting ON studio_thread_leases (redispatch_at) WHERE holder = '' AND run_id IS NOT NULL;
-- /healthz counts the active runs (held or waiting for a worker) by holder.
CREATE INDEX studio_thread_leases_active ON studio_thread_leases (holder) WHERE run_id IS NOT NULL;

CREATE TABLE studio_run_queue (
    run_id     text COLLATE "C" PRIMARY KEY,
    thread_id  text COLLATE "C" NOT NULL,
    seq        bigserial NOT NULL,
    state      text NOT NULL CHECK (state IN ('pending', 'active')),
    request    jsonb NOT NULL,
    cancel     text NOT NULL DEFAULT '' CHECK (cancel IN ('', 'cancel', 'rollback')),
    attempts   int NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX studio_run_queue_one_active ON studio_run_queue (thread_id) WHERE state = 'active';
CREATE INDEX studio_run_queue_pending ON studio_run_queue (thread_id, seq) WHERE state = 'pending';

-- studio_fence is called first in every fenced write's transaction: it
-- fails with SQLSTATE SSF01 unless the thread's lease is at exactly that
-- fence. Every claim, takeover and hand-back moves the fence on; a run's
-- own release does not, so the run's last records, retried after a
-- failure, still land while nobody else has claimed the thread. It takes the thread's lease lock shared (a transaction-level
-- advisory lock, which writes nothing: a row lock FOR SHARE would write the
-- lease row on every checkpoint), and every change of a lease's holder or
-- fence takes it exclusively (studio_lease_changes, below), so a takeover
-- waits for in-flight writes instead of racing them, and every write after
-- it sees the new fence. search_path is pinned to the migrated schema so
-- callers with another search_path check the right table.
CREATE FUNCTION studio_fence(p_thread text, p_fence bigint) RETURNS void
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1937007974, hashtext(p_thread));
    PERFORM 1 FROM studio_thread_leases
     WHERE thread_id = p_thread AND fence = p_fence;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fenced out: thread % is not at fence %', p_thread, p_fence
            USING ERRCODE = 'SSF01';
    END IF;
END
$$;

-- The lease lock's exclusive side (class 1937007974 is "sfen"), taken by
-- whatever changes a lease's holder or fence, before the change.
CREATE FUNCTION studio_lease_changes() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(1937007974, hashtext(NEW.thread_id));
    RETURN NEW;
END
$$;

CREATE TRIGGER studio_lease_changes BEFORE UPDATE ON studio_thread_leases
FOR EACH ROW WHEN (OLD.fence IS DISTINCT FROM NEW.fence OR OLD.holder IS DISTINCT FROM NEW.holder)
EXECUTE FUNCTION studio_lease_changes();

CREATE TABLE studio_events (
    thread_id text COLLATE "C" NOT NULL,
    seq       bigint NOT NULL,
    run_id    text COLLATE "C" NOT NULL,
    body      jsonb NOT NULL,
    at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (thread_id, seq)
);
---- create above / drop below ----
DROP TABLE studio_events;
DROP FUNCTION studio_fence(text, bigint);
DROP TRIGGER studio_lease_changes ON studio_thread_leases;
DROP FUNCTION studio_lease_changes();
DROP TABLE studio_run_queue;
DROP TABLE studio_thread_leases;
