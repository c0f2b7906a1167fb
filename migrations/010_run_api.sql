-- What the Agent Server API (package server) keeps with a run beyond the
-- Studio's run log: the assistant it ran, the caller's metadata, the
-- request's arguments and its multitask strategy, as one JSON object
-- (runs.RunMeta); NULL for runs the Studio's pages started.
ALTER TABLE studio_runs ADD COLUMN api jsonb;
---- create above / drop below ----
ALTER TABLE studio_runs DROP COLUMN api;
