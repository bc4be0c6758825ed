-- Per-tenant API tokens (SPEC §22): each may act in one role for the apps it names. The secret is shown once and
-- never stored: `secret_sha256` is the SHA-256 of the whole secret (`hrld_<id>_<43 base64url characters>`), as
-- lowercase hex. `apps` is the app names joined by commas (app names have none). A revoked token keeps its row, with
-- `revoked_at`. `last_used_at` is written a few seconds after the requests that used it, gathered.
CREATE TABLE api_tokens (
    id            TEXT PRIMARY KEY,
    secret_sha256 TEXT NOT NULL UNIQUE,
    name          TEXT,
    role          TEXT NOT NULL CHECK (role IN ('send', 'register', 'read')),
    apps          TEXT NOT NULL CHECK (apps <> ''),
    created_at    INTEGER NOT NULL,
    last_used_at  INTEGER,
    revoked_at    INTEGER
) STRICT;
