-- studio_fence (migration 011) without its SET search_path clause.
--
-- The function runs in the transaction of every fenced write (each
-- checkpoint of a durable run, its thread record, its run log), and a
-- SET clause saves and restores the setting on every call: on this
-- machine that was half the fence's cost, about 15 µs of a superstep's
-- 60 on the fast test cluster (BenchmarkPGSuperstepSync/putstep-fenced).
-- It was there so that a caller with another search_path checks this
-- schema's leases; the lease table is now named with its schema, written
-- in when the migration runs, which does the same for free, and the
-- functions and operators it uses are named with pg_catalog, which a
-- search_path may list after other schemas.
DO $migration$
BEGIN
    EXECUTE format($fn$
CREATE OR REPLACE FUNCTION studio_fence(p_thread text, p_fence bigint) RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM pg_catalog.pg_advisory_xact_lock_shared(1937007974, pg_catalog.hashtext(p_thread));
    PERFORM 1 FROM %I.studio_thread_leases
     WHERE thread_id OPERATOR(pg_catalog.=) p_thread AND fence OPERATOR(pg_catalog.=) p_fence;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fenced out: thread %% is not at fence %%', p_thread, p_fence
            USING ERRCODE = 'SSF01';
    END IF;
END
$$
$fn$, current_schema());
END
$migration$;
---- create above / drop below ----
CREATE OR REPLACE FUNCTION studio_fence(p_thread text, p_fence bigint) RETURNS void
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
