-- Reserved: the owning package replaces this file with its schema.
SELECT 1;
---- create above / drop below ----
SELECT 1;
