-- Herald schema, version 1. Times are integer Unix milliseconds. See SPEC §4.

CREATE TABLE apps (
    name         TEXT PRIMARY KEY,
    paused       INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
    pause_reason TEXT,
    paused_at    INTEGER,
    gate_until   INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE TABLE messages (
    id              TEXT PRIMARY KEY,
    app             TEXT NOT NULL,
    idempotency_key TEXT,
    payload         TEXT NOT NULL,
    target_kind     TEXT NOT NULL CHECK (target_kind IN ('tokens', 'topic', 'condition')),
    collapse_key    TEXT,
    priority        TEXT NOT NULL CHECK (priority IN ('normal', 'high')),
    ttl_seconds     INTEGER NOT NULL CHECK (ttl_seconds BETWEEN 0 AND 2419200),
    dry_run         INTEGER NOT NULL DEFAULT 0 CHECK (dry_run IN (0, 1)),
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL
) STRICT;

-- A repeated Idempotency-Key finds the first message.
CREATE UNIQUE INDEX messages_by_idempotency_key ON messages (idempotency_key)
    WHERE idempotency_key IS NOT NULL;

CREATE TABLE deliveries (
    id               INTEGER PRIMARY KEY,
    message_id       TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    app              TEXT NOT NULL,
    token            TEXT NOT NULL,
    state            TEXT NOT NULL DEFAULT 'queued'
                     CHECK (state IN ('queued', 'inflight', 'delivered', 'dead', 'dropped')),
    reason           TEXT,
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  INTEGER NOT NULL,
    lease_owner      TEXT,
    lease_expires_at INTEGER,
    fcm_message_id   TEXT,
    canonical_token  TEXT,
    last_status      INTEGER,
    updated_at       INTEGER NOT NULL,
    -- Copied from the message so the claim is one index range scan: 0 = high, 1 = normal.
    priority_rank    INTEGER NOT NULL DEFAULT 1 CHECK (priority_rank IN (0, 1)),
    created_at       INTEGER NOT NULL
) STRICT;

-- "Ready deliveries": per app and priority lane, queued rows in next_attempt_at order. The claim reads
-- `app = ? AND priority_rank = ? AND state = 'queued' AND next_attempt_at <= now` as one range scan.
CREATE INDEX deliveries_ready ON deliveries (app, priority_rank, next_attempt_at)
    WHERE state = 'queued';

-- The rescuer finds expired leases without scanning finished rows.
CREATE INDEX deliveries_inflight ON deliveries (lease_expires_at)
    WHERE state = 'inflight';

-- A message's deliveries (GET /v1/messages/{id}, cancel, whole-message dead letters).
CREATE INDEX deliveries_by_message ON deliveries (message_id);

-- There is deliberately no index on deliveries (app, token): tokens are random, so such an index costs a
-- random page write per delivery at ingest. What reconciliation does to other deliveries of a token
-- (NotRegistered, canonical ids, collapse_key) is applied when they are claimed, before anything is sent.

-- Dead letters by time, for `dead list` and retention, which never deletes them.
CREATE INDEX deliveries_dead ON deliveries (updated_at)
    WHERE state = 'dead';

CREATE TABLE tokens (
    token      TEXT PRIMARY KEY,
    app        TEXT NOT NULL,
    user       TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

-- `users` addressing expands through this index at ingest.
CREATE INDEX tokens_by_user ON tokens (app, user) WHERE user IS NOT NULL;

-- The newest message per (app, collapse_key, target): an older queued delivery whose message is not the
-- head is superseded (dropped/Collapsed) when claimed. Written only for messages that have a collapse_key.
CREATE TABLE collapse_heads (
    app          TEXT NOT NULL,
    collapse_key TEXT NOT NULL,
    token        TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    PRIMARY KEY (app, collapse_key, token)
) STRICT, WITHOUT ROWID;

CREATE TABLE token_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          INTEGER NOT NULL,
    app         TEXT NOT NULL,
    token       TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('deleted', 'replaced')),
    replacement TEXT,
    reason      TEXT,
    message_id  TEXT
) STRICT;

-- MARK: views for inspection with plain SQL

-- How many deliveries are in each state, per app, and since when the oldest of them has existed.
CREATE VIEW queue_depth AS
SELECT app,
       state,
       count(*)        AS count,
       min(created_at) AS oldest
FROM deliveries
GROUP BY app, state;

-- Deliveries that need an operator: dead, with the FCM error or Herald's reason.
CREATE VIEW dead_letters AS
SELECT d.id            AS delivery_id,
       d.message_id    AS message_id,
       d.app           AS app,
       d.token         AS token,
       d.reason        AS reason,
       d.attempts      AS attempts,
       d.last_status   AS last_status,
       d.updated_at    AS died_at,
       m.created_at    AS created_at,
       m.target_kind   AS target_kind,
       m.collapse_key  AS collapse_key
FROM deliveries AS d
JOIN messages AS m ON m.id = d.message_id
WHERE d.state = 'dead';

-- What reconciliation did to tokens in the last 24 hours, newest first.
CREATE VIEW recent_token_events AS
SELECT id, at, app, token, kind, replacement, reason, message_id
FROM token_events
WHERE at >= (CAST(strftime('%s', 'now') AS INTEGER) - 86400) * 1000
ORDER BY id DESC;
