import Queue
import Support

extension SQLiteQueueStore {
    // MARK: - Dead letters

    /// Dead letters matching `filter`, the most recent deaths first.
    public func deadLetters(_ filter: DeadLetterFilter, limit: Int) throws -> [DeadLetterRecord] {
        let (condition, arguments) = filter.sql
        return try connection.query(
            DeadLetterSQL.list(condition), arguments + [.integer(Int64(limit))], row: DeadLetterRecord.init)
    }

    /// How many dead letters match `filter`, per app and reason.
    public func deadLetterGroups(_ filter: DeadLetterFilter) throws -> [DeadLetterGroup] {
        let (condition, arguments) = filter.sql
        return try connection.query(DeadLetterSQL.groups(condition), arguments) {
            DeadLetterGroup(
                app: $0.string(0), reason: $0.optionalString(1).map(DeliveryReason.init(stored:)), count: $0.int(2))
        }
    }

    /// How many dead letters match `filter` and belong to a message whose TTL has run out: requeued, they would
    /// only expire again, so `requeueDeadLetters` leaves them.
    public func expiredDeadLetterCount(_ filter: DeadLetterFilter, now: Int64) throws -> Int {
        let (condition, arguments) = filter.sql
        return try connection.queryOne(DeadLetterSQL.expired(condition), arguments + [.integer(now)]) { $0.int(0) } ?? 0
    }

    /// Puts up to `limit` dead letters matching `filter` back in the queue, due now, with `attempts = 0` and no
    /// reason; returns how many. Those whose message expired are left dead. Call inside a write transaction, and
    /// again until it returns 0: each call is one bounded batch, so the service is never blocked for long.
    public func requeueDeadLetters(_ filter: DeadLetterFilter, now: Int64, limit: Int) throws -> Int {
        let (condition, arguments) = filter.sql
        return try connection.run(
            DeadLetterSQL.requeue(condition),
            [.integer(now), .integer(now)] + arguments + [.integer(now), .integer(Int64(limit))])
    }

    public func deleteDeadLetters(_ filter: DeadLetterFilter, limit: Int) throws -> [String] {
        let (condition, arguments) = filter.sql
        return try connection.query(DeadLetterSQL.purge(condition), arguments + [.integer(Int64(limit))]) {
            $0.string(0)
        }
    }

    /// One statement per message (SQLite binds no arrays; the list is one batch of a purge).
    public func deleteEmptyMessages(_ ids: [String], keyHorizon: Int64) throws -> Int {
        var deleted = 0
        for id in ids {
            deleted += try connection.run(DeadLetterSQL.deleteEmptyMessage, .text(id), .integer(keyHorizon))
        }
        return deleted
    }
}

/// The dead-letter statements around a `DeadLetterFilter` condition on `deliveries AS d`.
enum DeadLetterSQL {
    static let columns = """
        d.id, d.message_id, d.app, d.token, d.reason, d.attempts, d.last_status, d.updated_at,
        m.created_at, m.expires_at, m.ttl_seconds
        """

    static func list(_ condition: String) -> String {
        """
        SELECT \(columns) FROM deliveries AS d JOIN messages AS m ON m.id = d.message_id
        WHERE \(condition) ORDER BY d.updated_at DESC, d.id DESC LIMIT ?
        """
    }

    static func groups(_ condition: String) -> String {
        """
        SELECT d.app, d.reason, count(*) FROM deliveries AS d WHERE \(condition)
        GROUP BY d.app, d.reason ORDER BY d.app, d.reason
        """
    }

    static func expired(_ condition: String) -> String {
        """
        SELECT count(*) FROM deliveries AS d JOIN messages AS m ON m.id = d.message_id
        WHERE \(condition) AND m.expires_at <= ?
        """
    }

    /// Arguments: now, now, the condition's, now, limit.
    static func requeue(_ condition: String) -> String {
        """
        UPDATE deliveries SET state = 'queued', reason = NULL, attempts = 0, next_attempt_at = ?, updated_at = ?,
                              lease_owner = NULL, lease_expires_at = NULL
        WHERE id IN (
            SELECT d.id FROM deliveries AS d JOIN messages AS m ON m.id = d.message_id
            WHERE \(condition) AND m.expires_at > ?
            LIMIT ?)
        """
    }

    static func purge(_ condition: String) -> String {
        """
        DELETE FROM deliveries WHERE id IN (SELECT d.id FROM deliveries AS d WHERE \(condition) LIMIT ?)
        RETURNING message_id
        """
    }

    static let deleteEmptyMessage = """
        DELETE FROM messages WHERE id = ? AND (idempotency_key IS NULL OR created_at <= ?)
          AND NOT EXISTS (SELECT 1 FROM deliveries WHERE message_id = messages.id)
        """
}

extension DeadLetterFilter {
    /// `terms` as the WHERE condition on `deliveries AS d`, with SQLite's `?` placeholders, and its arguments. Only
    /// fixed fragments and placeholders go into the SQL; every value is bound. `d.state = 'dead'` is written exactly
    /// as the partial indexes say it, so SQLite can use them.
    var sql: (condition: String, arguments: [SQLValue]) {
        var conditions = ["d.state = 'dead'"]
        var arguments: [SQLValue] = []
        func add(_ condition: String, _ values: [SQLValue]) {
            conditions.append(condition)
            arguments += values
        }
        for term in terms {
            switch term {
            case .app(let app): add("d.app = ?", [.text(app)])
            case .reason(let reason): add("d.reason = ?", [.text(reason)])
            case .diedSince(let time): add("d.updated_at >= ?", [.integer(time)])
            case .diedUntil(let time): add("d.updated_at <= ?", [.integer(time)])
            case .token(let token): add("d.token = ?", [.text(token)])
            case .after(let cursor):
                // Spelt out rather than as a row value: the first term bounds the index range.
                add("d.updated_at <= ? AND (d.updated_at < ? OR d.id < ?)",
                    [.integer(cursor.diedAt), .integer(cursor.diedAt), .integer(cursor.deliveryID)])
            case .deliveryIDs(let ids):
                let placeholders = Array(repeating: "?", count: ids.count).joined(separator: ", ")
                add("d.id IN (\(placeholders))", ids.map { .integer($0) })
            }
        }
        return (conditions.joined(separator: " AND "), arguments)
    }
}

extension DeadLetterRecord {
    /// From a row of `DeadLetterSQL.columns`.
    init(_ row: Statement) {
        self.init(
            deliveryID: row.int64(0), messageID: row.string(1), app: row.string(2), token: row.string(3),
            reason: row.optionalString(4).map(DeliveryReason.init(stored:)), attempts: row.int(5),
            lastStatus: row.optionalInt64(6), diedAt: row.int64(7),
            messageCreatedAt: row.int64(8), messageExpiresAt: row.int64(9), ttlSeconds: row.int(10))
    }
}
