-- Checkpoints (package checkpoints/pgsaver).
--
-- Identifiers use COLLATE "C" so that ordering and "before" comparisons are
-- bytewise, as in the memory saver, and UUIDv7 ids sort by time.

-- One row per thread: its last checkpoint sequence number. Put bumps it,
-- which also serialises writers of one thread against prune and delete.
CREATE TABLE checkpoint_threads (
    thread_id text COLLATE "C" PRIMARY KEY,
    last_seq  bigint NOT NULL
);

-- One row per checkpoint. The body holds everything but channel values;
-- the values are referenced by (channel, version, blob hash) in three
-- parallel arrays, so a checkpoint knows exactly which blobs it reads.
CREATE TABLE checkpoints (
    thread_id            text COLLATE "C" NOT NULL,
    checkpoint_ns        text COLLATE "C" NOT NULL,
    checkpoint_id        text COLLATE "C" NOT NULL,
    seq                  bigint NOT NULL,
    parent_checkpoint_id text COLLATE "C",
    run_id               text,
    checkpoint           jsonb NOT NULL,
    metadata             jsonb NOT NULL,
    blob_channels        text[] NOT NULL,
    blob_versions        bigint[] NOT NULL,
    blob_hashes          bytea[] NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);
CREATE INDEX checkpoints_thread_seq_idx ON checkpoints (thread_id, checkpoint_ns, seq DESC);
CREATE INDEX checkpoints_id_idx ON checkpoints (checkpoint_id DESC);
CREATE INDEX checkpoints_metadata_idx ON checkpoints USING gin (metadata jsonb_path_ops);
CREATE INDEX checkpoints_run_idx ON checkpoints (run_id) WHERE run_id IS NOT NULL;

-- Channel values, content-addressed per thread: hash is the xxh3-128 of
-- the value's JSON. encoding 'json' stores the value; 'json-append' stores
-- only the array elements appended to the value whose hash is base.
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

-- Which blob holds a channel's value at a version, as upstream's
-- checkpoint_blobs key: found by version for checkpoints that carry a
-- channel unchanged from other than their parent.
CREATE TABLE checkpoint_channel_versions (
    thread_id     text COLLATE "C" NOT NULL,
    checkpoint_ns text COLLATE "C" NOT NULL,
    channel       text NOT NULL,
    version       bigint NOT NULL,
    hash          bytea NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
);

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
DROP TABLE checkpoint_channel_versions;
DROP TABLE checkpoint_blobs;
DROP TABLE checkpoints;
DROP TABLE checkpoint_threads;
