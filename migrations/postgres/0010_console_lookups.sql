-- Look-ups for the operator console (SPEC §18), so its token page and its dead-letter search by token stay quick
-- at millions of rows. (Numbered 0010: 0009 is taken on another branch.)

-- Dead letters by token. There is deliberately no index on every delivery's token (a random page write per
-- delivery at ingest); this one holds only dead rows, so it is written when a row dies or leaves the dead state,
-- never at ingest or on a send that works.
CREATE INDEX deliveries_dead_by_token ON deliveries (token)
    WHERE state = 'dead';

-- A token's events. 0004 dropped the feed's token index when reconciliation moved to `token_tombstones`; the
-- console asks again "what happened to this token?". An event is written only when a token is deleted or replaced,
-- so the cost is one index entry per such change.
CREATE INDEX token_events_by_app_token ON token_events (app, token);
