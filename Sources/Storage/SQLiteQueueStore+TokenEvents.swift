import Queue
import Support

extension SQLiteQueueStore {
    /// Events with an id above `after`, oldest first; with `apps`, only theirs (the feed walked by id, the others
    /// skipped: a tenant's poll reads what came since its last one).
    public func tokenEvents(after: Int64, limit: Int, apps: [String]?) throws -> [TokenEventRecord] {
        guard let apps else {
            return try connection.query(
                """
                SELECT id, at, app, token, kind, replacement, reason, message_id
                FROM token_events WHERE id > ? ORDER BY id LIMIT ?
                """, [.integer(after), .integer(Int64(limit))]
            , row: Self.tokenEvent)
        }
        return try connection.query(
            """
            SELECT id, at, app, token, kind, replacement, reason, message_id
            FROM token_events WHERE id > ? AND app IN (SELECT value FROM json_each(?)) ORDER BY id LIMIT ?
            """, [.integer(after), .text(JSON.array(apps.map(JSON.string)).serialized()), .integer(Int64(limit))]
        , row: Self.tokenEvent)
    }

    /// The latest events, newest first; with `before`, those with a smaller id (the next page back).
    public func recentTokenEvents(before: Int64?, limit: Int) throws -> [TokenEventRecord] {
        try connection.query(
            """
            SELECT id, at, app, token, kind, replacement, reason, message_id
            FROM token_events WHERE id < ? ORDER BY id DESC LIMIT ?
            """, [.integer(before ?? Int64.max), .integer(Int64(limit))]
        , row: Self.tokenEvent)
    }

    /// The events about one token of one app, newest first (`token_events_by_app_token`).
    public func tokenEvents(app: String, token: String, limit: Int) throws -> [TokenEventRecord] {
        try connection.query(
            TokenEventSQL.ofToken, [.text(app), .text(token), .integer(Int64(limit))], row: Self.tokenEvent)
    }

    /// A `token_events` row read as `id, at, app, token, kind, replacement, reason, message_id`.
    private static func tokenEvent(_ row: Statement) -> TokenEventRecord {
        TokenEventRecord(
            id: row.int64(0), at: row.int64(1), app: row.string(2), token: row.string(3),
            kind: TokenTombstone.Kind(stored: row.string(4)), replacement: row.optionalString(5),
            reason: row.optionalString(6).map(DeliveryReason.init(stored:)), messageID: row.optionalString(7))
    }
}

enum TokenEventSQL {
    /// Without the hint SQLite may walk the whole feed backwards by id for `ORDER BY id DESC LIMIT`, hoping to meet
    /// the token early: every event read for a token that has none. The token's few events, sorted, cost nothing.
    static let ofToken = """
        SELECT id, at, app, token, kind, replacement, reason, message_id
        FROM token_events INDEXED BY token_events_by_app_token
        WHERE app = ? AND token = ? ORDER BY id DESC LIMIT ?
        """
}
