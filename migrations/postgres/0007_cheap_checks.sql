-- SQLite's 0007 respells two CHECK constraints that SQLite evaluated expensively (`x IN (a, b, c)` builds a
-- temporary b-tree per row written there). PostgreSQL evaluates them as they are; this migration keeps both
-- engines' numbers alike.
SELECT 1;
