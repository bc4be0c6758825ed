-- As SQLite's 0016: apps defined at run time (SPEC §22), their secrets sealed.
ALTER TABLE apps ADD COLUMN provider TEXT;
ALTER TABLE apps ADD COLUMN definition TEXT;
ALTER TABLE apps ADD COLUMN secrets TEXT;
ALTER TABLE apps ADD COLUMN version BIGINT NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN created_at BIGINT;
ALTER TABLE apps ADD COLUMN updated_at BIGINT;
