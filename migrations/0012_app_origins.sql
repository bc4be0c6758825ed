-- A Web Push app's fault domains (SPEC §19): the push-service origins (`https://host[:port]`) whose gate is closed
-- or that are paused. A row exists only while its origin is gated or paused: `serve` deletes a row once its gate
-- opened and it is not paused, and `herald resume APP` deletes the app's rows.
CREATE TABLE app_origins (
    app          TEXT NOT NULL,
    origin       TEXT NOT NULL,
    gate_until   INTEGER NOT NULL DEFAULT 0,
    gate_reason  TEXT,
    gated_at     INTEGER,
    paused       INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
    pause_reason TEXT,
    paused_at    INTEGER,
    PRIMARY KEY (app, origin)
) STRICT, WITHOUT ROWID;
