-- The store's HNSW index is rebuilt with m = 10 (pgvector's default is
-- 16). Inserting a vector adds it to the neighbour lists of its 2m nearest
-- elements, and a full list is chosen again from all its entries, loaded
-- and compared: that is most of a batched put's time, and it grows faster
-- than m². At 100 dimensions m = 10 takes about 0.6 of the server time per
-- vector, and recall is no worse (store/pgstore: hnswM,
-- BenchmarkStorePutBatch, BenchmarkStoreSearch100k).
--
-- The store creates the index for its embedder's dimension when it opens
-- (store/pgstore, hnswIndexName), so this migration only drops the old
-- one: the next open builds the new one, as after a re-embed.
DO $$
DECLARE
    idx text;
BEGIN
    FOR idx IN SELECT indexname FROM pg_indexes
        WHERE schemaname = current_schema() AND tablename = 'store_vectors' AND indexname LIKE 'store\_vectors\_hnsw\_d%'
    LOOP
        EXECUTE format('DROP INDEX %I', idx);
    END LOOP;
END $$;
---- create above / drop below ----
-- Nothing to undo: the store builds its index again when it opens.
