import Queue
import Support

extension SQLiteQueueStore {
    // MARK: - Outcome feed

    /// Outcomes after `after` in seq order: the primary key's range, or `outcomes_by_app`'s for one app.
    public func outcomes(after: Int64, app: String?, limit: Int) throws -> [OutcomeRecord] {
        guard let app else {
            return try connection.query(
                "\(OutcomeSQL.columns) WHERE seq > ? ORDER BY seq LIMIT ?", [.integer(after), .integer(Int64(limit))],
                row: Self.outcome)
        }
        return try connection.query(
            "\(OutcomeSQL.columns) WHERE app = ? AND seq > ? ORDER BY seq LIMIT ?",
            [.text(app), .integer(after), .integer(Int64(limit))], row: Self.outcome)
    }

    /// Writes the feed's entry of each delivery in `ids`, as its row now stands: every statement that ends a
    /// delivery calls this for the rows it ended, in the same transaction, so the feed is in commit order. (PostgreSQL
    /// writes the entries with a trigger; on SQLite a trigger on `deliveries.state` made every claim and answer run
    /// a trigger program per row and give up the one-pass update — about a third of the writer's time.)
    func recordOutcomes(of ids: [Int64]) throws {
        guard !ids.isEmpty else { return }
        let rows = RowSet(ids)
        // A range as `RowSet` takes it; a list joined rather than `IN`: ~1k instructions a row less here.
        let source = rows.range != nil
            ? "deliveries AS d WHERE \(rows.condition)"
            : "json_each(?) AS ended JOIN deliveries AS d ON d.id = ended.value"
        try connection.run(
            """
            INSERT INTO outcomes (at, delivery_id, message_id, app, token, user, state, reason, provider_message_id)
            SELECT d.updated_at, d.id, d.message_id, d.app, d.token, d.user, d.state, d.reason, d.fcm_message_id
            FROM \(source)
            """, rows.values)
    }

    /// Looks only at the oldest `limit` entries (seqs grow with time), as `pruneTokenEvents` does.
    public func pruneOutcomes(before cutoff: Int64, limit: Int) throws -> Int {
        try connection.run(
            """
            DELETE FROM outcomes WHERE seq IN (
                SELECT seq FROM (SELECT seq, at FROM outcomes ORDER BY seq LIMIT ?) WHERE at < ?)
            """, .integer(Int64(limit)), .integer(cutoff))
    }

    private static func outcome(_ row: Statement) -> OutcomeRecord {
        OutcomeRecord(
            seq: row.int64(0), at: row.int64(1), messageID: row.string(2), app: row.string(3), token: row.string(4),
            user: row.optionalString(5), state: DeliveryState(stored: row.string(6)),
            reason: row.optionalString(7).map(DeliveryReason.init(stored:)), providerMessageID: row.optionalString(8))
    }

    // MARK: - Outcome webhooks

    public func outcomeWebhooks() throws -> [OutcomeWebhookState] {
        try connection.query("\(OutcomeSQL.webhookColumns) ORDER BY name", row: Self.webhook)
    }

    public func leaseOutcomeWebhook(_ name: String, owner: String, until: Int64, now: Int64) throws
        -> OutcomeWebhookState?
    {
        try connection.run(OutcomeSQL.createWebhook, .text(name), .integer(now))
        return try connection.queryOne(
            """
            UPDATE outcome_webhooks SET lease_owner = ?1, lease_expires_at = ?2
            WHERE name = ?3 AND (lease_owner IS NULL OR lease_owner = ?1 OR lease_expires_at <= ?4)
            RETURNING name, seq, in_flight, lease_owner, lease_expires_at, skipped, updated_at, last_error, last_error_at
            """, [.text(owner), .integer(until), .text(name), .integer(now)], row: Self.webhook)
    }

    public func saveOutcomeWebhook(
        _ name: String, owner: String, seq: Int64, inFlight: [Int64], skipped: Int64, lastError: String?,
        until: Int64, now: Int64
    ) throws -> Bool {
        try connection.run(
            """
            UPDATE outcome_webhooks SET seq = ?1, in_flight = ?2, skipped = skipped + ?3, lease_expires_at = ?4,
                updated_at = ?5, last_error = coalesce(?8, last_error),
                last_error_at = CASE WHEN ?8 IS NULL THEN last_error_at ELSE ?5 END
            WHERE name = ?6 AND lease_owner = ?7
            """, .integer(seq), .text(OutcomeWebhookState.stored(inFlight: inFlight)), .integer(skipped),
            .integer(until), .integer(now), .text(name), .text(owner), lastError.map(SQLValue.text) ?? .null) > 0
    }

    private static func webhook(_ row: Statement) -> OutcomeWebhookState {
        OutcomeWebhookState(
            name: row.string(0), seq: row.int64(1), inFlight: OutcomeWebhookState.inFlight(stored: row.string(2)),
            leaseOwner: row.optionalString(3), leaseExpiresAt: row.optionalInt64(4), skipped: row.int64(5),
            updatedAt: row.int64(6), lastError: row.optionalString(7), lastErrorAt: row.optionalInt64(8))
    }
}

/// The outcome feed's statements; PostgreSQL's are the same but for their placeholders.
enum OutcomeSQL {
    static let columns = """
        SELECT seq, at, message_id, app, token, user, state, reason, provider_message_id FROM outcomes
        """

    static let webhookColumns = """
        SELECT name, seq, in_flight, lease_owner, lease_expires_at, skipped, updated_at, last_error, last_error_at FROM outcome_webhooks
        """

    /// A new webhook is acknowledged up to the feed's end: it sends what happens from now on. (`WHERE true` tells
    /// SQLite's parser that `ON CONFLICT` is the upsert's, not a join's.)
    static let createWebhook = """
        INSERT INTO outcome_webhooks (name, seq, updated_at)
        SELECT ?, coalesce(max(seq), 0), ? FROM outcomes WHERE true
        ON CONFLICT (name) DO NOTHING
        """
}
