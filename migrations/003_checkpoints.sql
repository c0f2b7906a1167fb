-- Checkpoints (package checkpoints/pgsaver).
--
-- Identifiers use COLLATE "C" so that ordering and "before" comparisons are
-- bytewise, as in the memory saver, and UUIDv7 ids sort by time.
--
-- A superstep's save touches as little as it can: one checkpoints row, the
-- task's write rows, and a blob row only for a changed value too large to
-- keep inline. Nothing is updated in place (no per-thread counter row), so
-- a save leaves no dead tuples behind.

-- Checkpoint sequence numbers. One sequence for every thread: numbers
-- taken in order are in order within each thread, which is all "latest"
-- needs, and taking one writes nothing per thread.
CREATE SEQUENCE checkpoint_seq;

-- One row per checkpoint. The body (the checkpoint's JSON without its
-- values) is bytea: only the saver reads it, so the server neither parses
-- nor converts it on the hot path. Metadata is jsonb, for filters.
-- Each channel that has a value is listed in four parallel arrays: its
-- name, its version, and either the hash of the blob holding its value
-- (value_inline NULL) or, for a small value, the value itself (value_hash
-- NULL). A checkpoint thus knows exactly which blobs it reads.
CREATE TABLE checkpoints (
    thread_id            text COLLATE "C" NOT NULL,
    checkpoint_ns        text COLLATE "C" NOT NULL,
    checkpoint_id        text COLLATE "C" NOT NULL,
    seq                  bigint NOT NULL,
    parent_checkpoint_id text COLLATE "C",
    checkpoint           bytea NOT NULL,
    metadata             jsonb NOT NULL,
    value_channels       text[] NOT NULL,
    value_versions       bigint[] NOT NULL,
    value_hashes         bytea[] NOT NULL,
    value_inline         bytea[] NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);
CREATE INDEX checkpoints_thread_seq_idx ON checkpoints (thread_id, checkpoint_ns, seq DESC);
CREATE INDEX checkpoints_id_idx ON checkpoints (checkpoint_id DESC);
-- Metadata filters and DeleteForRuns ({"run_id": ...}) use containment.
CREATE INDEX checkpoints_metadata_idx ON checkpoints USING gin (metadata jsonb_path_ops);

-- Channel values too large to keep inline, content-addressed per thread:
-- hash is the xxh3-128 of the value's JSON. encoding 'json' stores the
-- value; 'json-append' stores only the array elements appended to the
-- value whose hash is base.
CREATE TABLE checkpoint_blobs (
    thread_id text COLLATE "C" NOT NULL,
    hash      bytea NOT NULL,
    encoding  text NOT NULL,
    base      bytea,
    data      bytea NOT NULL,
    PRIMARY KEY (thread_id, hash),
    FOREIGN KEY (thread_id, base) REFERENCES checkpoint_blobs (thread_id, hash)
);
CREATE INDEX checkpoint_blobs_base_idx ON checkpoint_blobs (thread_id, base) WHERE base IS NOT NULL;

-- Pending writes. idx is checkpoints.WriteIndex: negative for the special
-- channels (upserted), the write's position otherwise (first write wins).
CREATE TABLE checkpoint_writes (
    thread_id     text COLLATE "C" NOT NULL,
    checkpoint_ns text COLLATE "C" NOT NULL,
    checkpoint_id text COLLATE "C" NOT NULL,
    task_id       text COLLATE "C" NOT NULL,
    idx           integer NOT NULL,
    channel       text NOT NULL,
    task_path     text NOT NULL,
    encoding      text NOT NULL,
    value         bytea NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);

---- create above / drop below ----

DROP TABLE checkpoint_writes;
DROP TABLE checkpoint_blobs;
DROP TABLE checkpoints;
DROP SEQUENCE checkpoint_seq;
