-- The outcome feed (SPEC §23, `GET /v1/outcomes`, `herald outcomes`) and the outcome webhooks' cursors.
--
-- A delivery's `user` is the user a `users` fan-out reached it through, as the registry said at ingest (NULL for a
-- delivery addressed to a token directly): the feed reports it without looking the token up again.
ALTER TABLE deliveries ADD COLUMN user TEXT;

-- Every delivery's final state, in commit order (`seq`: SQLite has one writer, so the order rows are numbered in is
-- the order they commit in). A copy, not a view of `deliveries`: retention prunes finished deliveries and `dead
-- requeue` revives dead ones, and the feed must still say what happened. AUTOINCREMENT: a seq is never reused, even
-- after retention emptied the table, which the feed's cursor relies on. Trimmed with `token_events`' retention.
CREATE TABLE outcomes (
    seq                 INTEGER PRIMARY KEY AUTOINCREMENT,
    at                  INTEGER NOT NULL,
    delivery_id         INTEGER NOT NULL,
    message_id          TEXT NOT NULL,
    app                 TEXT NOT NULL,
    token               TEXT NOT NULL,
    user                TEXT,
    state               TEXT NOT NULL CHECK (state IN ('delivered', 'dead', 'dropped')),
    reason              TEXT,
    provider_message_id TEXT
) STRICT;

-- `GET /v1/outcomes?app=` and an app's webhook read one app's outcomes in seq order.
CREATE INDEX outcomes_by_app ON outcomes (app, seq);

-- Written by the schema, not by each code path, so every way a delivery ends is in the feed: an answer, a claim's
-- drops (expired, collapsed, replaced, not registered), a whole-message dead letter, a cancel. Only a move from
-- pending to final counts: deleting a row (retention, `dead purge`) is not an outcome.
CREATE TRIGGER outcome_recorded AFTER UPDATE OF state ON deliveries
WHEN old.state IN ('queued', 'inflight') AND new.state IN ('delivered', 'dead', 'dropped')
BEGIN
    INSERT INTO outcomes (at, delivery_id, message_id, app, token, user, state, reason, provider_message_id)
    VALUES (new.updated_at, new.id, new.message_id, new.app, new.token, new.user, new.state, new.reason,
            new.fcm_message_id);
END;

-- One row per outcome webhook (an app's own, or `*` for the service's): the feed's seq up to which the receiver
-- has answered 2xx, the batches sent past it and not yet answered (their last seqs, a JSON array, so a restart
-- sends the same batches under the same `webhook-id`), the lease of the instance that sends it, and the last
-- failed attempt (the answer's status or the transport's failure, and when), for `status` and the console.
CREATE TABLE outcome_webhooks (
    name             TEXT PRIMARY KEY,
    seq              INTEGER NOT NULL DEFAULT 0,
    in_flight        TEXT NOT NULL DEFAULT '[]',
    lease_owner      TEXT,
    lease_expires_at INTEGER,
    skipped          INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT,
    last_error_at    INTEGER,
    updated_at       INTEGER NOT NULL
) STRICT;
