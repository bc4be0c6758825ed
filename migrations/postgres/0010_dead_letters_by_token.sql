-- Dead letters by token: the console's dead-letter filter and token page ask "what died for this token?". There is
-- deliberately no index on every delivery's token (a random page write per delivery at ingest); this one holds only
-- dead rows, so it is written when a row dies or leaves the dead state, never at ingest or on a send that works.
-- (Numbered 0010: 0009 is taken on another branch.)
CREATE INDEX deliveries_dead_by_token ON deliveries (token)
    WHERE state = 'dead';
