-- FCM HTTP v1 messages at ingest (SPEC §13): a message is kept in the shape the backend sent it.

-- `legacy`: an FCM legacy message (`to`/`registration_ids`/`condition`, options, `data`, `notification`);
-- `v1`: the `message` object of an FCM HTTP v1 request. `payload` is that message without its target.
ALTER TABLE messages ADD COLUMN format TEXT NOT NULL DEFAULT 'legacy' CHECK (format IN ('legacy', 'v1'));

-- Which v1 field a device delivery's `token` is sent in: `token` (an FCM registration token) or `fid` (a Firebase
-- Installation ID). A column rather than a new `target_kind`: everything downstream (claim, collapse,
-- reconciliation, the registry, dead letters) treats both the same, as a device identifier in
-- `deliveries.token`; only the request body differs. It also spares the upgrade a rebuild of `messages`
-- (SQLite cannot change a CHECK in place), which would copy every stored message while `serve` waits.
ALTER TABLE messages ADD COLUMN token_field TEXT NOT NULL DEFAULT 'token' CHECK (token_field IN ('token', 'fid'));
