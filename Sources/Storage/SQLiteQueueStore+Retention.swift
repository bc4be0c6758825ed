import Queue

extension SQLiteQueueStore {
    // MARK: - Retention

    /// Deletes up to `limit` delivered or dropped deliveries last updated before `cutoff`; returns how many.
    /// Dead letters are never touched: only `dead purge` deletes them. Call inside a write transaction, and again
    /// until it returns 0: each call is one bounded batch (`deliveries_finished` finds it without a scan).
    public func pruneFinishedDeliveries(updatedBefore cutoff: Int64, limit: Int) throws -> Int {
        try connection.run(RetentionSQL.pruneFinished, .integer(cutoff), .integer(Int64(limit)))
    }

    /// How many deliveries `pruneFinishedDeliveries` would delete.
    public func finishedDeliveryCount(updatedBefore cutoff: Int64) throws -> Int {
        try connection.queryOne(RetentionSQL.countFinished, [.integer(cutoff)]) { $0.int(0) } ?? 0
    }

    public func messagePage(after cursor: String, limit: Int) throws -> MessagePage? {
        try connection.queryOne(RetentionSQL.messagePage, [.text(cursor), .integer(Int64(limit))]) { row in
            row.optionalString(0).map { MessagePage(last: $0, newestCreatedAt: row.int64(1), count: row.int(2)) }
        } ?? nil
    }

    public func deleteEmptyMessages(
        after cursor: String, through last: String, createdBefore cutoff: Int64, keyHorizon: Int64
    ) throws -> Int {
        try connection.run(
            RetentionSQL.pruneEmptyMessages, .text(cursor), .text(last), .integer(cutoff), .integer(keyHorizon))
    }

    /// Deletes the oldest token-feed entries recorded before `cutoff`, up to `limit` of them; returns how many. The
    /// feed is only history for backends that follow it: claims read `token_tombstones`, so trimming it changes no
    /// outcome. Call again until it returns 0.
    public func pruneTokenEvents(before cutoff: Int64, limit: Int) throws -> Int {
        try connection.run(RetentionSQL.pruneTokenEvents, .integer(Int64(limit)), .integer(cutoff))
    }

    /// Two statements, tombstones then collapse heads, each bounded by `limit`.
    public func pruneReconciliationState(before cutoff: Int64, limit: Int) throws -> Int {
        try connection.run(RetentionSQL.pruneTombstones, .integer(cutoff), .integer(Int64(limit)))
            + connection.run(RetentionSQL.pruneCollapseHeads, .integer(cutoff), .integer(Int64(limit)))
    }

    /// How many dead letters there are (all apps); retention keeps every one.
    public func deadLetterCount() throws -> Int {
        try connection.queryOne(RetentionSQL.countDead) { $0.int(0) } ?? 0
    }
}

/// The retention queries. The state terms are written exactly as the partial indexes' WHERE clauses: SQLite uses a
/// partial index only when the query repeats its condition (`IN ('dropped', 'delivered')` would scan the table).
enum RetentionSQL {
    static let pruneFinished = """
        DELETE FROM deliveries WHERE id IN (
            SELECT id FROM deliveries WHERE state IN ('delivered', 'dropped') AND updated_at < ? LIMIT ?)
        """

    static let countFinished = """
        SELECT count(*) FROM deliveries WHERE state IN ('delivered', 'dropped') AND updated_at < ?
        """

    static let messagePage = """
        SELECT max(id), max(created_at), count(*)
        FROM (SELECT id, created_at FROM messages WHERE id > ? ORDER BY id LIMIT ?)
        """

    static let pruneEmptyMessages = """
        DELETE FROM messages
        WHERE id > ? AND id <= ? AND created_at < ? AND (idempotency_key IS NULL OR created_at <= ?)
          AND NOT EXISTS (SELECT 1 FROM deliveries WHERE message_id = messages.id)
        """

    /// Looks only at the oldest `limit` entries (ids grow with time), so a feed with nothing to trim costs no scan.
    static let pruneTokenEvents = """
        DELETE FROM token_events WHERE id IN (
            SELECT id FROM (SELECT id, at FROM token_events ORDER BY id LIMIT ?) WHERE at < ?)
        """

    static let pruneTombstones = """
        DELETE FROM token_tombstones WHERE (app, token) IN (
            SELECT app, token FROM token_tombstones WHERE at < ? ORDER BY at LIMIT ?)
        """

    static let pruneCollapseHeads = """
        DELETE FROM collapse_heads WHERE (app, collapse_key, token) IN (
            SELECT app, collapse_key, token FROM collapse_heads WHERE created_at < ? ORDER BY created_at LIMIT ?)
        """

    static let countDead = "SELECT count(*) FROM deliveries INDEXED BY deliveries_dead WHERE state = 'dead'"
}
