-- The outcome feed (0013) at the writer's cost. Its trigger on `deliveries.state` ran for every row a claim or an
-- answer writes: a trigger program started per row, the update no longer one pass (0008), and its WHEN's
-- `x IN (a, b, c)` built a temporary b-tree per row (0007) — with the CHECK on `outcomes.state` the same way, most of
-- the writer's time with 1000-token requests (`Benchmarks/hms.sh`). The statements that end a delivery now write
-- its feed entry themselves, in the same transaction (`SQLiteQueueStore.recordOutcomes`): the same rows, in commit
-- order. PostgreSQL keeps its trigger, which costs it nothing measurable and takes the feed's lock.
DROP TRIGGER outcome_recorded;

-- The CHECK respelled in the schema as 0007 does (every stored row stays valid; the same values accepted).
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
SET sql = replace(sql,
    'CHECK (state IN (''delivered'', ''dead'', ''dropped''))',
    'CHECK (state = ''delivered'' OR state = ''dead'' OR state = ''dropped'')')
WHERE type = 'table' AND name = 'outcomes';
PRAGMA writable_schema = OFF;
