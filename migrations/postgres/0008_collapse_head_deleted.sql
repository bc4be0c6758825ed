-- As SQLite's 0008: a head that ended dead or dropped stays until its delivery row is deleted, and the claim reads
-- its state instead. The trigger no longer runs for every change of `deliveries.state`, only when a dead or
-- dropped row is deleted (retention's prune, `dead purge`), whose head must go with it.
DROP TRIGGER collapse_head_ends ON deliveries;
DROP FUNCTION collapse_head_ends();

CREATE FUNCTION collapse_head_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM collapse_heads WHERE delivery_id = OLD.id;
    RETURN NULL;
END;
$$;

CREATE TRIGGER collapse_head_removed AFTER DELETE ON deliveries
FOR EACH ROW WHEN (OLD.state IN ('dead', 'dropped'))
EXECUTE FUNCTION collapse_head_removed();
