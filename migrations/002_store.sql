-- Long-term store (package store/pgstore).
--
-- Namespaces are stored joined with "." (labels never contain one) in a
-- column collated "C", so that a namespace prefix is a byte range the
-- primary key's btree can scan, and ordering is the same bytewise order the
-- memory store uses.
CREATE TABLE store_items (
    prefix     text COLLATE "C" NOT NULL,
    key        text COLLATE "C" NOT NULL,
    value      jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    -- Absolute expiry; NULL means the item never expires.
    expires_at timestamptz,
    -- The item's time to live in microseconds, kept so reads can refresh
    -- expires_at; NULL when the item has no TTL.
    ttl_us     bigint CHECK (ttl_us > 0),
    -- The put's index field list (a JSON array of paths), NULL for the
    -- store's default fields; kept so a re-embed redoes what each put asked.
    index_fields jsonb,
    PRIMARY KEY (prefix, key)
);

CREATE INDEX store_items_expires_at_idx ON store_items (expires_at) WHERE expires_at IS NOT NULL;

-- One row per embedded text of an item. The column has no fixed dimension:
-- the store creates an HNSW expression index on embedding::vector(dims) for
-- the dimension recorded in store_index when it opens.
CREATE TABLE store_vectors (
    prefix    text COLLATE "C" NOT NULL,
    key       text COLLATE "C" NOT NULL,
    field     text NOT NULL,
    embedding vector NOT NULL,
    PRIMARY KEY (prefix, key, field),
    FOREIGN KEY (prefix, key) REFERENCES store_items (prefix, key) ON DELETE CASCADE
);

-- The HNSW index is partial (vector_dims(embedding) = dims), and a search
-- through it repeats that condition; without statistics on the expression
-- the planner would guess it keeps 0.5% of the rows and prefer scanning a
-- whole range to the index.
CREATE STATISTICS store_vectors_dims_stats ON (vector_dims(embedding)) FROM store_vectors;

-- The embedder the vectors in store_vectors were made with. A single row:
-- vectors of different models are not comparable.
CREATE TABLE store_index (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    embedder   text NOT NULL,
    dims       integer NOT NULL CHECK (dims > 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);
---- create above / drop below ----
DROP TABLE store_index;
DROP STATISTICS store_vectors_dims_stats;
DROP TABLE store_vectors;
DROP TABLE store_items;
