-- A collapse head that ends without reaching the device (dead, or dropped: cancelled, collapsed, not registered)
-- stops superseding older messages because the claim reads its delivery's state (`CollapseHead.supersedes`). The
-- trigger 0004 added removed such a head as its row changed state, and SQLite ran it for every change of
-- `deliveries.state`: a claim and an answer per send, ~3k instructions each (a sub-program started per row, its
-- WHEN evaluated inside). The head must only go when its row is deleted (retention's prune, `dead purge`): the
-- claim reads a head whose row is missing as one that was delivered and pruned.
DROP TRIGGER collapse_head_ends;

CREATE TRIGGER collapse_head_removed AFTER DELETE ON deliveries
WHEN OLD.state = 'dead' OR OLD.state = 'dropped'
BEGIN
    DELETE FROM collapse_heads WHERE delivery_id = OLD.id;
END;
