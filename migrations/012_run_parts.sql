-- The stream parts of Agent Server API runs (those asked with a stream),
-- so that a client connected to one replica can follow, join and resume
-- the stream of a run another replica executes (issue #19). The process
-- executing the run appends its parts under the run's lease fence, with
-- the ids its own clients see, and NOTIFYs "run_id seq" on the schema's
-- studio_run_parts channel; readers fetch the rows from here.
CREATE TABLE studio_run_parts (
    run_id    text COLLATE "C" NOT NULL,
    -- The part's id in the run's stream, from 0; the run's end is a
    -- last row with mode '' after its parts.
    seq       bigint NOT NULL,
    thread_id text COLLATE "C" NOT NULL,
    mode      text NOT NULL,
    namespace jsonb NOT NULL DEFAULT '[]',
    -- json, not jsonb: a client on another replica gets the very bytes
    -- the executing replica's clients get (jsonb would reorder keys).
    data      json NOT NULL,
    at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, seq)
);

-- Pruning finds the ended runs by their end rows.
CREATE INDEX studio_run_parts_ends ON studio_run_parts (at) WHERE mode = '';
---- create above / drop below ----
DROP TABLE studio_run_parts;
