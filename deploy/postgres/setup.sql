-- Run once as a superuser (or your managed service's admin role) before the first `herald migrate`:
--   psql -h db.internal -U postgres -v herald_password='…' -f deploy/postgres/setup.sql
-- Herald needs one database it owns; its migrations create the tables, views, indexes and triggers in it.

CREATE ROLE herald LOGIN PASSWORD :'herald_password';
CREATE DATABASE herald OWNER herald;

-- Every Herald instance holds a few connections: one writer, two readers, one that LISTENs for new messages,
-- and one per command run (`herald status`, …). Leave room for your instances × 4, plus what else connects.
ALTER ROLE herald CONNECTION LIMIT 64;

-- A statement that waits on a lock longer than this is a bug or an outage, not load; Herald retries what fails.
ALTER ROLE herald SET lock_timeout = '10s';
-- Commits are durable as soon as Herald answers 202 (the default; never `off` for this role).
ALTER ROLE herald SET synchronous_commit = 'on';
