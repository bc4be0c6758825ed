-- Messages at a time (SPEC §23). A scheduled message's deliveries wait in `deliveries_ready` with `next_attempt_at`
-- at its `send_at`, as a retry waits for its backoff, so the claim stays one range scan of that index and needs
-- nothing here. These columns are what the message view, `status` and the console show. (Numbered 0014: 0013 is
-- taken on another branch.)

-- When the message was scheduled for: the `send_at` given, or its acceptance when that was past; NULL when none
-- was given.
ALTER TABLE messages ADD COLUMN send_at INTEGER;

-- When `DELETE /v1/messages/{id}` first cancelled it.
ALTER TABLE messages ADD COLUMN cancelled_at INTEGER;

-- `status` counts the messages still waiting for their time (not cancelled): this index holds scheduled messages
-- only, so ingest of the others writes nothing to it.
CREATE INDEX messages_scheduled ON messages (send_at) WHERE send_at IS NOT NULL;
