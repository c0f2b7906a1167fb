package pgcache

// The statements of the cache, on the node_cache table. Every time is a
// parameter from the cache's clock; none uses now().

// sqlGet reads many keys in one round trip: the key arrays are unnested
// and joined on the primary key.
const sqlGet = `
SELECT c.namespace, c.key, c.value, c.mac, c.created_at, c.expires_at
FROM node_cache AS c
JOIN unnest($1::text[], $2::text[]) AS k (namespace, key)
  ON c.namespace = k.namespace AND c.key = k.key
WHERE c.expires_at IS NULL OR c.expires_at > $3`

// sqlSet upserts many rows in one statement; every row shares the
// creation time $5. The caller removes duplicate keys (one INSERT cannot
// update a row twice).
const sqlSet = `
INSERT INTO node_cache (namespace, key, value, mac, created_at, expires_at)
SELECT e.namespace, e.key, e.value, e.mac, $5, e.expires_at
FROM unnest($1::text[], $2::text[], $3::bytea[], $4::bytea[], $6::timestamptz[])
  AS e (namespace, key, value, mac, expires_at)
ON CONFLICT (namespace, key) DO UPDATE
SET value = excluded.value, mac = excluded.mac,
    created_at = excluded.created_at, expires_at = excluded.expires_at`

// sqlSetLanded counts the rows of a set that are there with its MACs.
const sqlSetLanded = `
SELECT count(*) FROM node_cache AS c
JOIN unnest($1::text[], $2::text[], $3::bytea[]) AS e (namespace, key, mac)
  ON c.namespace = e.namespace AND c.key = e.key AND c.mac = e.mac`

// sqlDeleteForged deletes rows that failed authentication, matching the
// MAC as read so that a valid row written since is kept.
const sqlDeleteForged = `
DELETE FROM node_cache AS c
USING unnest($1::text[], $2::text[], $3::bytea[]) AS f (namespace, key, mac)
WHERE c.namespace = f.namespace AND c.key = f.key AND c.mac = f.mac`

const sqlClearAll = `DELETE FROM node_cache`

const sqlClearNamespaces = `DELETE FROM node_cache WHERE namespace = ANY($1::text[])`

// The List statements return the value's size and SHA-256 (for the MAC
// check), never the value. LIMIT NULL means no limit.
const sqlListAll = `
SELECT namespace, key, octet_length(value), sha256(value), mac, created_at, expires_at
FROM node_cache
WHERE expires_at IS NULL OR expires_at > $1
ORDER BY created_at DESC, namespace, key
LIMIT $2`

const sqlListNamespace = `
SELECT namespace, key, octet_length(value), sha256(value), mac, created_at, expires_at
FROM node_cache
WHERE namespace = $1 AND (expires_at IS NULL OR expires_at > $2)
ORDER BY created_at DESC, key
LIMIT $3`

// sqlSweep deletes at most $2 expired rows through the expiry index. The
// outer expiry test is checked again against a row updated meanwhile, so a
// concurrently refreshed entry survives.
const sqlSweep = `
DELETE FROM node_cache
WHERE (namespace, key) IN (
    SELECT namespace, key FROM node_cache
    WHERE expires_at <= $1
    LIMIT $2)
  AND expires_at <= $1`
