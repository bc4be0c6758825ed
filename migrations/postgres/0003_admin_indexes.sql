-- Indexes for the admin CLI (SPEC §7), so `status`, `prune` and `dead ...` stay quick at millions of rows.

-- Finished deliveries by time: `prune` deletes the oldest in bounded batches, and `status` counts what finished
-- in the last minute per app (the index covers app and state).
-- Dead letters are not in it: retention never deletes them (they have `deliveries_dead`).
CREATE INDEX deliveries_finished ON deliveries (updated_at, app, state)
    WHERE state IN ('delivered', 'dropped');

-- Dead letters per app and reason: the dead count per app in `status`, and the `--app`/`--reason` filters of
-- `dead list|requeue|purge`.
CREATE INDEX deliveries_dead_by_app ON deliveries (app, reason, updated_at)
    WHERE state = 'dead';
