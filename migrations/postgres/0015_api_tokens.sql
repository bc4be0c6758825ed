-- As SQLite's 0015: per-tenant API tokens (SPEC §22), the secret's SHA-256 only.
CREATE TABLE api_tokens (
    id            TEXT PRIMARY KEY,
    secret_sha256 TEXT NOT NULL UNIQUE,
    name          TEXT,
    role          TEXT NOT NULL CHECK (role IN ('send', 'register', 'read')),
    apps          TEXT NOT NULL CHECK (apps <> ''),
    created_at    BIGINT NOT NULL,
    last_used_at  BIGINT,
    revoked_at    BIGINT
);
