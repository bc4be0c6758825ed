-- Why an app's gate is closed and since when, for `herald status` (SPEC §11: network faults cost seconds): the
-- short code of what closed it last (`reset`, `timeout`, `connect`, `transport`, `http_503`, `retry_after`,
-- `quota`) and the time it closed, kept while it stays closed. Both NULL until a gate closes, and after `resume`.
ALTER TABLE apps ADD COLUMN gate_reason TEXT;
ALTER TABLE apps ADD COLUMN gated_at INTEGER;
