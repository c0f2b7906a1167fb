-- Node-result cache (package cache/pgcache). One row per cached node
-- result: the node's namespace, the hash of its input, and its encoded
-- writes. mac authenticates the row (HMAC-SHA256 under a key the database
-- never sees), so a row written or altered by anyone else is a miss, never
-- decoded (CVE-2026-27794 is the upstream case of a poisoned cache).
CREATE TABLE node_cache (
    -- Collated "C" so that List's tie order (namespace, then key) is the
    -- bytewise order of the memory cache.
    namespace  text COLLATE "C" NOT NULL,
    key        text COLLATE "C" NOT NULL,
    value      bytea       NOT NULL,
    mac        bytea       NOT NULL,
    created_at timestamptz NOT NULL,
    -- NULL: the entry lives until cleared.
    expires_at timestamptz,
    PRIMARY KEY (namespace, key)
);

-- The sweeper deletes by expiry; entries without a TTL are not indexed.
CREATE INDEX node_cache_expires_at_idx ON node_cache (expires_at) WHERE expires_at IS NOT NULL;
---- create above / drop below ----
DROP TABLE node_cache;
