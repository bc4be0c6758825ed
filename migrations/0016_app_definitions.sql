-- Apps defined at run time (SPEC §22): `herald apps`, `/v1/admin/apps` and the console store an app's `apps` entry
-- in its `apps` row. `provider` is set while the row defines an app (NULL for an app of the config file, and once a
-- stored app is removed); `definition` is the entry without its secrets (JSON), `secrets` a JSON object of each
-- secret field's sealed text (`hs1:<key id>:…`, AES-256-GCM under `--secrets-key-file`'s key), never the secret in
-- clear. `version` grows with every change (a removal too), so instances see a change by reading the versions.
ALTER TABLE apps ADD COLUMN provider TEXT;
ALTER TABLE apps ADD COLUMN definition TEXT;
ALTER TABLE apps ADD COLUMN secrets TEXT;
ALTER TABLE apps ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN created_at INTEGER;
ALTER TABLE apps ADD COLUMN updated_at INTEGER;
