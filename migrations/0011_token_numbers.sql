-- Nothing to change on SQLite: its `tokens` rows already carry the implicit `rowid`, which numbers them in the order
-- they were first registered (an upsert or a canonical rename keeps it), and a `users` fan-out walks them in that
-- order. PostgreSQL's 0011 gives its `tokens` a `rowid` column that does the same. (The number keeps the two engines'
-- migrations in step.)
SELECT 1;
