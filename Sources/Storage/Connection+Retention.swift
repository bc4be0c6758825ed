import Queue

extension Connection {
    // MARK: - Retention

    /// Deletes up to `limit` delivered or dropped deliveries last updated before `cutoff`; returns how many.
    /// Dead letters are never touched: only `dead purge` deletes them. Call inside a write transaction, and again
    /// until it returns 0: each call is one bounded batch (`deliveries_finished` finds it without a scan).
    public func pruneFinishedDeliveries(updatedBefore cutoff: Int64, limit: Int) throws -> Int {
        try run(RetentionSQL.pruneFinished, .integer(cutoff), .integer(Int64(limit)))
    }

    /// How many deliveries `pruneFinishedDeliveries` would delete.
    public func finishedDeliveryCount(updatedBefore cutoff: Int64) throws -> Int {
        try queryOne(RetentionSQL.countFinished, [.integer(cutoff)]) { $0.int(0) } ?? 0
    }

    /// Looks at the next `limit` messages after `cursor` in id order (ids sort by creation time) and deletes those
    /// created before `cutoff` that have no delivery left, unless an idempotency key still answers with them
    /// (created after `now` minus the 24 h window). Returns how many it deleted and where to continue, or nil once
    /// it has reached messages created after `cutoff`. Start with `cursor` "". Call inside a write transaction.
    ///
    /// A message with a dead letter keeps it as a delivery, so it is never deleted here.
    public func pruneEmptyMessages(
        createdBefore cutoff: Int64, now: Int64, after cursor: String, limit: Int
    ) throws -> (deleted: Int, next: String?) {
        let page = try queryOne(RetentionSQL.messagePage, [.text(cursor), .integer(Int64(limit))]) {
            (last: $0.optionalString(0), newest: $0.optionalInt64(1), count: $0.int(2))
        }
        guard let page, let last = page.last else { return (0, nil) }
        let deleted = try run(
            RetentionSQL.pruneEmptyMessages,
            .text(cursor), .text(last), .integer(cutoff), .integer(now - idempotencyWindowMillis))
        let done = page.count < limit || (page.newest ?? cutoff) >= cutoff
        return (deleted, done ? nil : last)
    }

    /// Deletes the oldest token-feed entries recorded before `cutoff`, up to `limit` of them; returns how many. The
    /// feed is only history for backends that follow it: claims read `token_tombstones`, so trimming it changes no
    /// outcome. Call again until it returns 0.
    public func pruneTokenEvents(before cutoff: Int64, limit: Int) throws -> Int {
        try run(RetentionSQL.pruneTokenEvents, .integer(Int64(limit)), .integer(cutoff))
    }

    /// Deletes up to `limit` token tombstones and up to `limit` collapse heads older than `reconciliationHorizon`
    /// before `now`; returns how many. Every delivery either could still affect was queued before it and has expired
    /// by then, and a claim settles expiry before reconciliation, so this changes no outcome.
    public func pruneReconciliationState(now: Int64, limit: Int) throws -> Int {
        let cutoff = now - reconciliationHorizonMillis
        return try run(RetentionSQL.pruneTombstones, .integer(cutoff), .integer(Int64(limit)))
            + run(RetentionSQL.pruneCollapseHeads, .integer(cutoff), .integer(Int64(limit)))
    }

    /// How many dead letters there are (all apps); retention keeps every one.
    public func deadLetterCount() throws -> Int {
        try queryOne(RetentionSQL.countDead) { $0.int(0) } ?? 0
    }
}

/// How long reconciliation's bookkeeping is kept: FCM's longest TTL (4 weeks) and a day of margin.
public let reconciliationHorizonMillis: Int64 = (2_419_200 + 86_400) * 1000

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
