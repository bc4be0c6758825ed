-- pgbench script for Benchmarks/postgres.sh: the baseline of Herald's single-message ingest on PostgreSQL.
--
--   pgbench -n -f Benchmarks/postgres-ingest.sql -M prepared -c N -j 2 -T 20 -D n=0 -D payload=JSON URL
--
-- One transaction stores what Herald stores for one POST /v1/messages with one token: a `messages` row and its
-- queued `deliveries` row, in a database made by `herald migrate` (Herald's own tables, indexes, checks and foreign
-- key), with the statements of PGQueueStore.insertMessage (the message insert with its ON CONFLICT on the
-- idempotency index; the delivery as one row), the same columns and values: a 26-character id, the payload Herald
-- stored for the same request (-D payload, read back from Herald's database), a 152-byte token that starts with a
-- scrambled counter (random order in the indexes, as ingest.lua's tokens), priority high, TTL 3600 s. Every
-- transaction commits on its own with synchronous_commit on: the database's cost of an acknowledged message when
-- nothing batches commits. Herald itself may do better than this, since its writer commits many messages at once.
--
-- `n` counts this client's transactions (pgbench keeps a client's variables from one transaction to the next);
-- ids and tokens carry the client id and `n`, so no two collide. App "default" must exist beforehand. The tokens'
-- ":APA91b" is written chr(58) || 'APA91b' because pgbench takes a colon in a literal for a variable.

\set n :n + 1
\set h (:n * 2654435761) % 4294967296
BEGIN;
INSERT INTO messages (id, app, idempotency_key, idempotency_fingerprint, payload, target_kind, collapse_key,
                      priority, ttl_seconds, dry_run, created_at, expires_at, format, token_field)
VALUES ('01PGBENCH' || lpad(:client_id::text, 4, '0') || lpad(:n::text, 13, '0'), 'default', NULL, NULL, :payload,
        'tokens', NULL, 'high', 3600, 0, (extract(epoch FROM clock_timestamp()) * 1000)::bigint,
        (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 3600000, 'legacy', 'token')
ON CONFLICT (app, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING id;
INSERT INTO deliveries (message_id, app, token, state, next_attempt_at, updated_at, priority_rank, created_at)
VALUES ('01PGBENCH' || lpad(:client_id::text, 4, '0') || lpad(:n::text, 13, '0'), 'default',
        lpad(to_hex(:h::bigint), 8, '0') || 'p' || lpad(:client_id::text, 2, '0') || lpad(:n::text, 10, '0')
            || chr(58) || 'APA91b' || repeat('x', 124),
        'queued', (extract(epoch FROM clock_timestamp()) * 1000)::bigint,
        (extract(epoch FROM clock_timestamp()) * 1000)::bigint, 0,
        (extract(epoch FROM clock_timestamp()) * 1000)::bigint);
END;
