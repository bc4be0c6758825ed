-- Integrity (SPEC §3, §5, §11): idempotency keys scoped to their app and tied to the message they answered with;
-- collapse bookkeeping that knows whether the newest message will still reach the device; what reconciliation
-- needs of the token feed kept apart from the feed, so the feed can be trimmed.

-- MARK: Idempotency-Key, per app

-- What the key first answered with: a repeat with another body is a conflict, never the other message's id.
ALTER TABLE messages ADD COLUMN idempotency_fingerprint INTEGER;

DROP INDEX messages_by_idempotency_key;
CREATE UNIQUE INDEX messages_by_idempotency_key ON messages (app, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- MARK: collapse_key

-- The newest message per (app, collapse_key, target) that will really reach the device: its delivery is queued,
-- in flight or delivered. A dry run never becomes the head; a head whose delivery ends dead or dropped (cancelled,
-- expired, refused) stops being one (trigger below), so it supersedes nothing. Rows older than the longest TTL can
-- no longer supersede anything that is not expired anyway, so retention deletes them by `created_at`.
CREATE TABLE collapse_heads_new (
    app          TEXT NOT NULL,
    collapse_key TEXT NOT NULL,
    token        TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    delivery_id  INTEGER,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (app, collapse_key, token)
) STRICT, WITHOUT ROWID;

INSERT INTO collapse_heads_new (app, collapse_key, token, message_id, delivery_id, created_at)
SELECT h.app, h.collapse_key, h.token, h.message_id,
       (SELECT d.id FROM deliveries AS d WHERE d.message_id = h.message_id AND d.token = h.token LIMIT 1),
       m.created_at
FROM collapse_heads AS h
JOIN messages AS m ON m.id = h.message_id AND m.dry_run = 0;

DROP TABLE collapse_heads;
ALTER TABLE collapse_heads_new RENAME TO collapse_heads;

-- A head delivery that ends without reaching the device (dead, or dropped: cancelled, collapsed, not registered)
-- stops superseding older messages.
CREATE INDEX collapse_heads_by_delivery ON collapse_heads (delivery_id) WHERE delivery_id IS NOT NULL;
CREATE INDEX collapse_heads_by_age ON collapse_heads (created_at);

DELETE FROM collapse_heads
WHERE delivery_id IN (SELECT id FROM deliveries WHERE state IN ('dead', 'dropped'));

CREATE TRIGGER collapse_head_ends AFTER UPDATE OF state ON deliveries
WHEN NEW.state IN ('dead', 'dropped')
BEGIN
    DELETE FROM collapse_heads WHERE delivery_id = NEW.id;
END;

-- MARK: Token tombstones

-- What reconciliation needs of the feed, one row per token: the latest thing FCM said about it (deleted, or
-- replaced by `replacement`). Claims read this, not `token_events`, so the feed has a retention of its own; a
-- tombstone is kept for the longest TTL, after which every delivery queued before it has expired.
CREATE TABLE token_tombstones (
    app         TEXT NOT NULL,
    token       TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('deleted', 'replaced')),
    replacement TEXT,
    at          INTEGER NOT NULL,
    PRIMARY KEY (app, token)
) STRICT, WITHOUT ROWID;

CREATE INDEX token_tombstones_by_age ON token_tombstones (at);

INSERT INTO token_tombstones (app, token, kind, replacement, at)
SELECT e.app, e.token, e.kind, e.replacement, e.at
FROM token_events AS e
WHERE e.id = (SELECT max(id) FROM token_events AS l WHERE l.app = e.app AND l.token = e.token);

-- The feed is read by id only now.
DROP INDEX token_events_by_token;

-- MARK: time_to_live 0

-- "Now or never" now has a window (`serve --ttl-zero-window`, default 5 s) in `expires_at`, like every other TTL.
UPDATE messages SET expires_at = created_at + 5000 WHERE ttl_seconds = 0;
