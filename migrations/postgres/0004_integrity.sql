-- Integrity (SPEC §3, §5, §11), as migrations/0004_integrity.sql does on SQLite: idempotency keys scoped to their
-- app and tied to the message they answered with; collapse bookkeeping that knows whether the newest message will
-- still reach the device; what reconciliation needs of the token feed kept apart from the feed.

-- MARK: Idempotency-Key, per app

-- What the key first answered with: a repeat with another body is a conflict, never the other message's id.
ALTER TABLE messages ADD COLUMN idempotency_fingerprint BIGINT;

DROP INDEX messages_by_idempotency_key;
CREATE UNIQUE INDEX messages_by_idempotency_key ON messages (app, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- MARK: collapse_key

-- The newest message per (app, collapse_key, target) that will really reach the device: its delivery is queued,
-- in flight or delivered. A dry run never becomes the head; a head whose delivery ends dead or dropped stops being
-- one (trigger below). Retention deletes rows older than the longest TTL by `created_at`.
-- PostgreSQL alters the table in place where SQLite rebuilds it; the result has the same columns.
ALTER TABLE collapse_heads ADD COLUMN delivery_id BIGINT;
ALTER TABLE collapse_heads ADD COLUMN created_at BIGINT;

DELETE FROM collapse_heads AS h
USING messages AS m
WHERE m.id = h.message_id AND m.dry_run <> 0;

DELETE FROM collapse_heads AS h
WHERE NOT EXISTS (SELECT 1 FROM messages AS m WHERE m.id = h.message_id);

UPDATE collapse_heads AS h
SET delivery_id = (SELECT d.id FROM deliveries AS d
                   WHERE d.message_id = h.message_id AND d.token = h.token LIMIT 1),
    created_at  = m.created_at
FROM messages AS m
WHERE m.id = h.message_id;

ALTER TABLE collapse_heads ALTER COLUMN created_at SET NOT NULL;

CREATE INDEX collapse_heads_by_delivery ON collapse_heads (delivery_id) WHERE delivery_id IS NOT NULL;
CREATE INDEX collapse_heads_by_age ON collapse_heads (created_at);

DELETE FROM collapse_heads
WHERE delivery_id IN (SELECT id FROM deliveries WHERE state IN ('dead', 'dropped'));

-- A head delivery that ends without reaching the device (dead, or dropped: cancelled, collapsed, not registered)
-- stops superseding older messages. SQLite's trigger body, as a trigger function.
CREATE FUNCTION collapse_head_ends() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM collapse_heads WHERE delivery_id = NEW.id;
    RETURN NULL;
END;
$$;

CREATE TRIGGER collapse_head_ends AFTER UPDATE OF state ON deliveries
FOR EACH ROW WHEN (NEW.state IN ('dead', 'dropped'))
EXECUTE FUNCTION collapse_head_ends();

-- MARK: Token tombstones

-- What reconciliation needs of the feed, one row per token: the latest thing FCM said about it (deleted, or
-- replaced by `replacement`). Claims read this, not `token_events`, so the feed has a retention of its own.
CREATE TABLE token_tombstones (
    app         TEXT NOT NULL,
    token       TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('deleted', 'replaced')),
    replacement TEXT,
    at          BIGINT NOT NULL,
    PRIMARY KEY (app, token)
);

CREATE INDEX token_tombstones_by_age ON token_tombstones (at);

INSERT INTO token_tombstones (app, token, kind, replacement, at)
SELECT e.app, e.token, e.kind, e.replacement, e.at
FROM token_events AS e
WHERE e.id = (SELECT max(id) FROM token_events AS l WHERE l.app = e.app AND l.token = e.token);

-- The feed is read by id only now.
DROP INDEX token_events_by_token;

-- MARK: time_to_live 0

-- "Now or never" has a window (`serve --ttl-zero-window`, default 5 s) in `expires_at`, like every other TTL.
UPDATE messages SET expires_at = created_at + 5000 WHERE ttl_seconds = 0;
