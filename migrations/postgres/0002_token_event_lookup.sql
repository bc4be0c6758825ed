-- Reconciliation asks "was this token reported dead or replaced?": before writing an event (so two messages
-- answered NotRegistered for one token give one feed entry), and for every delivery it claims.
-- (Dropped again by 0004_integrity, which moves that question to token_tombstones.)
CREATE INDEX token_events_by_token ON token_events (app, token, kind);
