-- As SQLite's 0014: when a message was scheduled for (`send_at`; its deliveries wait in `deliveries_ready` as a
-- retry does), when it was cancelled, and the scheduled messages for `status`.
ALTER TABLE messages ADD COLUMN send_at BIGINT;
ALTER TABLE messages ADD COLUMN cancelled_at BIGINT;
CREATE INDEX messages_scheduled ON messages (send_at) WHERE send_at IS NOT NULL;
