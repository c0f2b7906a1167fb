-- Crons of the Agent Server API (package runs/pgthreads, Crons): runs
-- started on a schedule. The server's river periodic job takes the due
-- rows (next_run_date <= now) and, in the same transaction, moves each
-- one's next_run_date on and inserts the river job that fires it, so a
-- due time is fired once however many replicas look.
CREATE TABLE studio_crons (
    -- A UUID in canonical form.
    id               text COLLATE "C" NOT NULL PRIMARY KEY,
    -- As the cron was created with: an assistant id or a graph id.
    assistant_id     text COLLATE "C" NOT NULL,
    -- NULL for a stateless cron (each firing makes a thread of its own).
    thread_id        text COLLATE "C",
    schedule         text        NOT NULL,
    end_time         timestamptz,
    -- The run-create body each firing starts its run with.
    payload          jsonb       NOT NULL,
    metadata         jsonb       NOT NULL,
    -- NULL once the cron will never fire again (past its end time).
    next_run_date    timestamptz,
    on_run_completed text        NOT NULL CHECK (on_run_completed IN ('delete', 'keep')),
    enabled          boolean     NOT NULL,
    user_id          text,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);

CREATE INDEX studio_crons_due_idx ON studio_crons (next_run_date) WHERE enabled;
CREATE INDEX studio_crons_thread_idx ON studio_crons (thread_id) WHERE thread_id IS NOT NULL;
CREATE INDEX studio_crons_assistant_idx ON studio_crons (assistant_id);
CREATE INDEX studio_crons_created_idx ON studio_crons (created_at, id);

-- Deleting a thread deletes its crons, whichever process or page deleted
-- it. A trigger rather than a foreign key: a thread the run manager knows
-- may reach studio_threads only with its first run's claim, after its
-- cron was made.
CREATE FUNCTION studio_thread_crons_gone() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    DELETE FROM studio_crons WHERE thread_id = OLD.id;
    RETURN OLD;
END
$$;

CREATE TRIGGER studio_thread_crons_gone AFTER DELETE ON studio_threads
FOR EACH ROW EXECUTE FUNCTION studio_thread_crons_gone();

-- So does deleting an assistant (as upstream's cascade).
CREATE FUNCTION studio_assistant_crons_gone() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    DELETE FROM studio_crons WHERE assistant_id = OLD.id;
    RETURN OLD;
END
$$;

CREATE TRIGGER studio_assistant_crons_gone AFTER DELETE ON studio_assistants
FOR EACH ROW EXECUTE FUNCTION studio_assistant_crons_gone();
---- create above / drop below ----
DROP TRIGGER studio_assistant_crons_gone ON studio_assistants;
DROP FUNCTION studio_assistant_crons_gone();
DROP TRIGGER studio_thread_crons_gone ON studio_threads;
DROP FUNCTION studio_thread_crons_gone();
DROP TABLE studio_crons;
