import Queue

// Retention's operations in PostgreSQL's SQL (`herald prune`, the service's housekeeping); the rules are Queue's
// (`Store+Retention.swift`).
extension PGQueueStore {
    /// Deletes up to `limit` delivered or dropped deliveries last updated before `cutoff`; returns how many.
    /// Dead letters are never touched: only `dead purge` deletes them. Call inside `write`, and again until it
    /// returns 0: each call is one bounded batch (`deliveries_finished` finds it without a scan).
    public func pruneFinishedDeliveries(updatedBefore cutoff: Int64, limit: Int) throws -> Int {
        try connection.run(PGRetentionSQL.pruneFinished, .integer(cutoff), .integer(Int64(limit)))
    }

    /// How many deliveries `pruneFinishedDeliveries` would delete.
    public func finishedDeliveryCount(updatedBefore cutoff: Int64) throws -> Int {
        try connection.queryOne(PGRetentionSQL.countFinished, [.integer(cutoff)]) { $0.int(0) } ?? 0
    }

    /// Message ids are digits and capital letters, which every collation sorts as bytes do, so the pages are
    /// SQLite's.
    public func messagePage(after cursor: String, limit: Int) throws -> MessagePage? {
        try connection.queryOne(PGRetentionSQL.messagePage, [.text(cursor), .integer(Int64(limit))]) { row in
            row.optionalString(0).map { MessagePage(last: $0, newestCreatedAt: row.int64(1), count: row.int(2)) }
        } ?? nil
    }

    public func deleteEmptyMessages(
        after cursor: String, through last: String, createdBefore cutoff: Int64, keyHorizon: Int64
    ) throws -> Int {
        try connection.run(
            PGRetentionSQL.pruneEmptyMessages, .text(cursor), .text(last), .integer(cutoff), .integer(keyHorizon))
    }

    /// Deletes the oldest token-feed entries recorded before `cutoff`, up to `limit` of them; returns how many.
    /// Claims read `token_tombstones`, so trimming the feed changes no outcome. Call again until it returns 0.
    public func pruneTokenEvents(before cutoff: Int64, limit: Int) throws -> Int {
        try connection.run(PGRetentionSQL.pruneTokenEvents, .integer(Int64(limit)), .integer(cutoff))
    }

    /// SQLite's two statements as one (`PGRetentionSQL.pruneReconciliationState`).
    public func pruneReconciliationState(before cutoff: Int64, limit: Int) throws -> Int {
        try connection.queryOne(
            PGRetentionSQL.pruneReconciliationState, [.integer(cutoff), .integer(Int64(limit))]) { $0.int(0) } ?? 0
    }

    /// How many dead letters there are (all apps); retention keeps every one.
    public func deadLetterCount() throws -> Int {
        try connection.queryOne(PGRetentionSQL.countDead) { $0.int(0) } ?? 0
    }
}

/// The retention queries, as SQLite's `RetentionSQL`; the state terms imply the partial indexes' conditions.
enum PGRetentionSQL {
    static let pruneFinished = """
        DELETE FROM deliveries WHERE id IN (
            SELECT id FROM deliveries WHERE state IN ('delivered', 'dropped') AND updated_at < $1 LIMIT $2)
        """

    static let countFinished = """
        SELECT count(*) FROM deliveries WHERE state IN ('delivered', 'dropped') AND updated_at < $1
        """

    static let messagePage = """
        SELECT max(id), max(created_at), count(*)
        FROM (SELECT id, created_at FROM messages WHERE id > $1 ORDER BY id LIMIT $2) AS page
        """

    static let pruneEmptyMessages = """
        DELETE FROM messages
        WHERE id > $1 AND id <= $2 AND created_at < $3 AND (idempotency_key IS NULL OR created_at <= $4)
          AND NOT EXISTS (SELECT 1 FROM deliveries WHERE message_id = messages.id)
        """

    /// Looks only at the oldest `limit` entries (ids grow with time), so a feed with nothing to trim costs no scan.
    static let pruneTokenEvents = """
        DELETE FROM token_events WHERE id IN (
            SELECT id FROM (SELECT id, at FROM token_events ORDER BY id LIMIT $1) AS oldest WHERE at < $2)
        """

    /// SQLite's two statements (tombstones, collapse heads) as one: two data-modifying `WITH`s, one round trip.
    static let pruneReconciliationState = """
        WITH tombstones AS (
            DELETE FROM token_tombstones WHERE (app, token) IN (
                SELECT app, token FROM token_tombstones WHERE at < $1 ORDER BY at LIMIT $2)
            RETURNING 1),
        heads AS (
            DELETE FROM collapse_heads WHERE (app, collapse_key, token) IN (
                SELECT app, collapse_key, token FROM collapse_heads WHERE created_at < $1 ORDER BY created_at LIMIT $2)
            RETURNING 1)
        SELECT (SELECT count(*) FROM tombstones) + (SELECT count(*) FROM heads)
        """

    /// `deliveries_dead` (or `deliveries_dead_by_app`), without SQLite's `INDEXED BY`.
    static let countDead = "SELECT count(*) FROM deliveries WHERE state = 'dead'"
}
