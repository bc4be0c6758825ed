-- SQLite's 0017 respells the outcome trigger's WHEN and the CHECK on `outcomes.state`, which SQLite evaluated
-- expensively (`x IN (a, b, c)` builds a temporary b-tree per row). PostgreSQL evaluates them as they are; this
-- migration keeps both engines' numbers alike.
SELECT 1;
