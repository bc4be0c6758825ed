import Queue

extension Connection {
    // MARK: - Dead letters

    /// Dead letters matching `filter`, the most recent deaths first.
    public func deadLetters(_ filter: DeadLetterFilter, limit: Int) throws -> [DeadLetterRecord] {
        let (condition, arguments) = filter.sql
        return try query(
            DeadLetterSQL.list(condition), arguments + [.integer(Int64(limit))], row: DeadLetterRecord.init)
    }

    /// One dead letter by its delivery id; nil when there is no such delivery or it is not dead.
    public func deadLetter(id: Int64) throws -> DeadLetterRecord? {
        try deadLetters(DeadLetterFilter(deliveryIDs: [id]), limit: 1).first
    }

    /// How many dead letters match `filter`, per app and reason.
    public func deadLetterGroups(_ filter: DeadLetterFilter) throws -> [DeadLetterGroup] {
        let (condition, arguments) = filter.sql
        return try query(DeadLetterSQL.groups(condition), arguments) {
            DeadLetterGroup(app: $0.string(0), reason: $0.optionalString(1), count: $0.int(2))
        }
    }

    /// How many dead letters match `filter` and belong to a message whose TTL has run out: requeued, they would
    /// only expire again, so `requeueDeadLetters` leaves them.
    public func expiredDeadLetterCount(_ filter: DeadLetterFilter, now: Int64) throws -> Int {
        let (condition, arguments) = filter.sql
        return try queryOne(DeadLetterSQL.expired(condition), arguments + [.integer(now)]) { $0.int(0) } ?? 0
    }

    /// Puts up to `limit` dead letters matching `filter` back in the queue, due now, with `attempts = 0` and no
    /// reason; returns how many. Those whose message expired are left dead. Call inside a write transaction, and
    /// again until it returns 0: each call is one bounded batch, so the service is never blocked for long.
    public func requeueDeadLetters(_ filter: DeadLetterFilter, now: Int64, limit: Int) throws -> Int {
        let (condition, arguments) = filter.sql
        return try run(
            DeadLetterSQL.requeue(condition),
            [.integer(now), .integer(now)] + arguments + [.integer(now), .integer(Int64(limit))])
    }

    /// Deletes up to `limit` dead letters matching `filter`, and their messages when nothing else of them is left
    /// (and no idempotency key still answers with them). Call inside a write transaction, and again until it
    /// returns 0 deliveries.
    public func purgeDeadLetters(
        _ filter: DeadLetterFilter, now: Int64, limit: Int
    ) throws -> (deliveries: Int, messages: Int) {
        let (condition, arguments) = filter.sql
        let messageIDs = try query(DeadLetterSQL.purge(condition), arguments + [.integer(Int64(limit))]) {
            $0.string(0)
        }
        var messages = 0
        for id in Set(messageIDs) {
            messages += try run(DeadLetterSQL.deleteEmptyMessage, .text(id), .integer(now - idempotencyWindowMillis))
        }
        return (messageIDs.count, messages)
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
    /// The WHERE condition on `deliveries AS d` and its arguments, with SQLite's `?` placeholders.
    var sql: (condition: String, arguments: [SQLValue]) { condition { _ in "?" } }

    /// The WHERE condition on `deliveries AS d` and its arguments, with numbered placeholders from `$first` on
    /// (`$3`, `$4`… for `first` 3), as PostgreSQL writes them; the statement's own parameters take the others.
    public func condition(parametersFrom first: Int) -> (condition: String, arguments: [SQLValue]) {
        condition { "$\(first + $0)" }
    }

    /// Only fixed fragments and placeholders (`placeholder(n)` for the n-th argument, from 0) go into the SQL; every
    /// value is bound. `d.state = 'dead'` is written exactly as the partial indexes say it, so SQLite can use them
    /// (and PostgreSQL sees that their condition holds).
    private func condition(_ placeholder: (Int) -> String) -> (condition: String, arguments: [SQLValue]) {
        var terms = ["d.state = 'dead'"]
        var arguments: [SQLValue] = []
        func bind(_ value: SQLValue) -> String {
            arguments.append(value)
            return placeholder(arguments.count - 1)
        }
        if let app { terms.append("d.app = \(bind(.text(app)))") }
        if let reason { terms.append("d.reason = \(bind(.text(reason)))") }
        if let diedSince { terms.append("d.updated_at >= \(bind(.integer(diedSince)))") }
        if let diedUntil { terms.append("d.updated_at <= \(bind(.integer(diedUntil)))") }
        if let token { terms.append("d.token = \(bind(.text(token)))") }
        if let after {
            // Spelt out rather than as a row value: the first term bounds the index range on either engine.
            let diedAt = bind(.integer(after.diedAt))
            let same = bind(.integer(after.diedAt))
            let id = bind(.integer(after.deliveryID))
            terms.append("d.updated_at <= \(diedAt) AND (d.updated_at < \(same) OR d.id < \(id))")
        }
        if !deliveryIDs.isEmpty {
            terms.append("d.id IN (\(deliveryIDs.map { bind(.integer($0)) }.joined(separator: ", ")))")
        }
        return (terms.joined(separator: " AND "), arguments)
    }
}

extension DeadLetterRecord {
    /// From a row of `DeadLetterSQL.columns`.
    init(_ row: Statement) {
        self.init(
            deliveryID: row.int64(0), messageID: row.string(1), app: row.string(2), token: row.string(3),
            reason: row.optionalString(4), attempts: row.int(5), lastStatus: row.optionalInt64(6), diedAt: row.int64(7),
            messageCreatedAt: row.int64(8), messageExpiresAt: row.int64(9), ttlSeconds: row.int(10))
    }
}
