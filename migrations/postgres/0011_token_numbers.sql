-- Every registered token has a number in the order it was first registered, as SQLite's implicit `rowid` has: a
-- `users` fan-out queues its deliveries in that order on both engines (README: "in the order the tokens were first
-- registered"), including tokens registered in the same millisecond, where `created_at` cannot tell them apart. An
-- upsert or a canonical rename keeps the number, as it keeps SQLite's rowid.
--
-- The tokens already there are numbered by (`created_at`, `token`), the order fan-outs have had until now, and new
-- registrations get the numbers after them. Numbering them rewrites the table once.
ALTER TABLE tokens ADD COLUMN rowid BIGINT;
UPDATE tokens SET rowid = numbered.n
FROM (SELECT token, row_number() OVER (ORDER BY created_at, token) AS n FROM tokens) AS numbered
WHERE tokens.token = numbered.token;
ALTER TABLE tokens ALTER COLUMN rowid SET NOT NULL;
ALTER TABLE tokens ALTER COLUMN rowid ADD GENERATED ALWAYS AS IDENTITY;
SELECT setval(pg_get_serial_sequence('tokens', 'rowid'), coalesce(max(rowid), 0) + 1, false) FROM tokens;
