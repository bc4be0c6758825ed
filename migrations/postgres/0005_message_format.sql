-- FCM HTTP v1 messages at ingest (SPEC §13), as migrations/0005_message_format.sql does on SQLite: a message is
-- kept in the shape the backend sent it.

-- `legacy`: an FCM legacy message; `v1`: the `message` object of an FCM HTTP v1 request. `payload` is that message
-- without its target.
ALTER TABLE messages ADD COLUMN format TEXT NOT NULL DEFAULT 'legacy' CHECK (format IN ('legacy', 'v1'));

-- Which v1 field a device delivery's `token` is sent in: `token` (an FCM registration token) or `fid` (a Firebase
-- Installation ID). See the SQLite migration for why it is a column rather than a new `target_kind`.
ALTER TABLE messages ADD COLUMN token_field TEXT NOT NULL DEFAULT 'token' CHECK (token_field IN ('token', 'fid'));
