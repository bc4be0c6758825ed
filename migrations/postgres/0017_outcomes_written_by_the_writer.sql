-- SQLite's 0017 drops its outcome trigger (the statements that end a delivery write the feed entry themselves) and
-- respells the CHECK on `outcomes.state`, both expensive per row there. PostgreSQL keeps its trigger
-- (`outcome_recorded`, which also takes the feed's lock) and its CHECK; this migration keeps both engines' numbers
-- alike.
SELECT 1;
