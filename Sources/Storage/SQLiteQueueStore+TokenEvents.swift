import Queue

extension SQLiteQueueStore {
    /// Events with an id above `after`, oldest first.
    public func tokenEvents(after: Int64, limit: Int) throws -> [TokenEventRecord] {
        try connection.query(
            """
            SELECT id, at, app, token, kind, replacement, reason, message_id
            FROM token_events WHERE id > ? ORDER BY id LIMIT ?
            """, [.integer(after), .integer(Int64(limit))]
        ) {
            TokenEventRecord(
                id: $0.int64(0), at: $0.int64(1), app: $0.string(2), token: $0.string(3), kind: $0.string(4),
                replacement: $0.optionalString(5), reason: $0.optionalString(6), messageID: $0.optionalString(7))
        }
    }

    /// The latest events, newest first; with `before`, those with a smaller id (the next page back).
    public func recentTokenEvents(before: Int64?, limit: Int) throws -> [TokenEventRecord] {
        try connection.query(
            """
            SELECT id, at, app, token, kind, replacement, reason, message_id
            FROM token_events WHERE id < ? ORDER BY id DESC LIMIT ?
            """, [.integer(before ?? Int64.max), .integer(Int64(limit))]
        ) {
            TokenEventRecord(
                id: $0.int64(0), at: $0.int64(1), app: $0.string(2), token: $0.string(3), kind: $0.string(4),
                replacement: $0.optionalString(5), reason: $0.optionalString(6), messageID: $0.optionalString(7))
        }
    }

    /// The events about one token of one app, newest first (`token_events_by_app_token`).
    public func tokenEvents(app: String, token: String, limit: Int) throws -> [TokenEventRecord] {
        try connection.query(TokenEventSQL.ofToken, [.text(app), .text(token), .integer(Int64(limit))]) {
            TokenEventRecord(
                id: $0.int64(0), at: $0.int64(1), app: $0.string(2), token: $0.string(3), kind: $0.string(4),
                replacement: $0.optionalString(5), reason: $0.optionalString(6), messageID: $0.optionalString(7))
        }
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
