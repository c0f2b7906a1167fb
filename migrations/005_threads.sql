-- Studio threads (package runs/pgthreads): reserved, filled in by its issue.
SELECT 1;
---- create above / drop below ----
SELECT 1;
