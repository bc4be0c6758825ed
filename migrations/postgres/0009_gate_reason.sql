-- As SQLite's 0009: why an app's gate is closed (`reset`, `timeout`, `http_503`, `retry_after`, `quota`, …) and
-- since when, for `herald status`.
ALTER TABLE apps ADD COLUMN gate_reason TEXT;
ALTER TABLE apps ADD COLUMN gated_at BIGINT;
