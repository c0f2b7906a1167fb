-- pgvector backs the store's semantic search (vector columns, HNSW indexes).
CREATE EXTENSION IF NOT EXISTS vector;
---- create above / drop below ----
-- The extension belongs to the whole database and other schemas in it may
-- use it, so rolling back leaves it installed.
