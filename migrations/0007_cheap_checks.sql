-- The same constraints, cheaper to check. SQLite checks `x IN (a, b, c)` with more than two constants by building a
-- temporary b-tree of the list for every row it writes: a claim or an answer updates `deliveries.state`, so each
-- paid for one (~16 % of the writer's instructions per send), and every ingested message for `target_kind`.
-- Spelled as `x = a OR x = b OR …` they are a few comparisons, and they accept and refuse exactly the same values.
--
-- SQLite cannot change a CHECK in place; rebuilding the two tables would copy every stored row while `serve`
-- waits. A change that leaves every stored row valid may instead be written into the schema itself, SQLite's
-- documented procedure (https://www.sqlite.org/lang_altertable.html#otheralter): the migrator runs this in one
-- transaction and raises `schema_version` afterwards (any migration that uses `writable_schema`), so every open
-- connection parses the new schema.
PRAGMA writable_schema = ON;

UPDATE sqlite_schema
SET sql = replace(sql,
    'CHECK (state IN (''queued'', ''inflight'', ''delivered'', ''dead'', ''dropped''))',
    'CHECK (state = ''queued'' OR state = ''inflight'' OR state = ''delivered'' OR state = ''dead''
                            OR state = ''dropped'')')
WHERE type = 'table' AND name = 'deliveries';

UPDATE sqlite_schema
SET sql = replace(sql,
    'CHECK (target_kind IN (''tokens'', ''topic'', ''condition''))',
    'CHECK (target_kind = ''tokens'' OR target_kind = ''topic'' OR target_kind = ''condition'')')
WHERE type = 'table' AND name = 'messages';

PRAGMA writable_schema = OFF;
