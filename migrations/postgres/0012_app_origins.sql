-- As SQLite's 0012: the push-service origins of a Web Push app whose gate is closed or that are paused (SPEC §19).
CREATE TABLE app_origins (
    app          TEXT NOT NULL,
    origin       TEXT NOT NULL,
    gate_until   BIGINT NOT NULL DEFAULT 0,
    gate_reason  TEXT,
    gated_at     BIGINT,
    paused       INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
    pause_reason TEXT,
    paused_at    BIGINT,
    PRIMARY KEY (app, origin)
);
