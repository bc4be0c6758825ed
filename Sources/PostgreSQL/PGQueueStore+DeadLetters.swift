import Queue
import Support

// The dead-letter operations in PostgreSQL's SQL; the rules are Queue's (`Store+DeadLetters.swift`). The filter's
// terms (`DeadLetterFilter.terms`) become a condition numbered after each statement's own parameters.
extension PGQueueStore {
    /// Dead letters matching `filter`, the most recent deaths first.
    public func deadLetters(_ filter: DeadLetterFilter, limit: Int) throws -> [DeadLetterRecord] {
        let (condition, arguments) = filter.condition(parametersFrom: 2)
        return try connection.query(
            PGDeadLetterSQL.list(condition), [.integer(Int64(limit))] + arguments,
            row: Self.deadLetter)
    }

    /// How many dead letters match `filter`, per app and reason.
    public func deadLetterGroups(_ filter: DeadLetterFilter) throws -> [DeadLetterGroup] {
        let (condition, arguments) = filter.condition(parametersFrom: 1)
        return try connection.query(PGDeadLetterSQL.groups(condition), arguments) {
            DeadLetterGroup(
                app: $0.string(0), reason: $0.optionalString(1).map(DeliveryReason.init(stored:)), count: $0.int(2))
        }
    }

    /// How many dead letters match `filter` and belong to a message whose TTL has run out: requeued, they would
    /// only expire again, so `requeueDeadLetters` leaves them.
    public func expiredDeadLetterCount(_ filter: DeadLetterFilter, now: Int64) throws -> Int {
        let (condition, arguments) = filter.condition(parametersFrom: 2)
        return try connection.queryOne(
            PGDeadLetterSQL.expired(condition), [.integer(now)] + arguments) { $0.int(0) } ?? 0
    }

    /// Puts up to `limit` dead letters matching `filter` back in the queue, due now, with `attempts = 0` and no
    /// reason; returns how many. Those whose message expired are left dead. Call inside `write`, and again until
    /// it returns 0: each call is one bounded batch.
    public func requeueDeadLetters(_ filter: DeadLetterFilter, now: Int64, limit: Int) throws -> Int {
        let (condition, arguments) = filter.condition(parametersFrom: 3)
        let requeued = try connection.run(
            PGDeadLetterSQL.requeue(condition),
            [.integer(now), .integer(Int64(limit))] + arguments)
        // Every instance learns at commit that there is work again (not only at its next look, within a second).
        if requeued > 0 { try notifyReady(filter.app.map { [$0] } ?? apps().map(\.name)) }
        return requeued
    }

    public func deleteDeadLetters(_ filter: DeadLetterFilter, limit: Int) throws -> [String] {
        let (condition, arguments) = filter.condition(parametersFrom: 2)
        return try connection.query(PGDeadLetterSQL.purge(condition), [.integer(Int64(limit))] + arguments) {
            $0.string(0)
        }
    }

    /// One statement for them all (an array of their ids, sorted as they were before the move) rather than one each.
    public func deleteEmptyMessages(_ ids: [String], keyHorizon: Int64) throws -> Int {
        try connection.run(PGDeadLetterSQL.deleteEmptyMessages, .array(ids.sorted()), .integer(keyHorizon))
    }

    /// From a row of `PGDeadLetterSQL.columns`.
    private static func deadLetter(_ row: PGRow) -> DeadLetterRecord {
        DeadLetterRecord(
            deliveryID: row.int64(0), messageID: row.string(1), app: row.string(2), token: row.string(3),
            reason: row.optionalString(4).map(DeliveryReason.init(stored:)), attempts: row.int(5),
            lastStatus: row.optionalInt64(6), diedAt: row.int64(7),
            messageCreatedAt: row.int64(8), messageExpiresAt: row.int64(9), ttlSeconds: row.int(10))
    }
}

/// The dead-letter statements around a `DeadLetterFilter` condition on `deliveries AS d`, as SQLite's
/// `DeadLetterSQL`. Each statement's own parameters come first (`$1`, `$2`), the condition's after them.
enum PGDeadLetterSQL {
    static let columns = """
        d.id, d.message_id, d.app, d.token, d.reason, d.attempts, d.last_status, d.updated_at,
        m.created_at, m.expires_at, m.ttl_seconds
        """

    /// Parameters: limit, the condition's.
    static func list(_ condition: String) -> String {
        """
        SELECT \(columns) FROM deliveries AS d JOIN messages AS m ON m.id = d.message_id
        WHERE \(condition) ORDER BY d.updated_at DESC, d.id DESC LIMIT $1
        """
    }

    /// Parameters: the condition's. SQLite sorts text in bytes and NULL first; PostgreSQL is told to do the same
    /// (its default puts NULL last and sorts in the database's locale).
    static func groups(_ condition: String) -> String {
        """
        SELECT d.app, d.reason, count(*) FROM deliveries AS d WHERE \(condition)
        GROUP BY d.app, d.reason ORDER BY d.app COLLATE "C", d.reason COLLATE "C" NULLS FIRST
        """
    }

    /// Parameters: now, the condition's.
    static func expired(_ condition: String) -> String {
        """
        SELECT count(*) FROM deliveries AS d JOIN messages AS m ON m.id = d.message_id
        WHERE \(condition) AND m.expires_at <= $1
        """
    }

    /// Parameters: now, limit, the condition's. `FOR UPDATE` (not in SQLite's, whose one writer needs none) locks
    /// the rows it picks and, where another transaction changed one meanwhile, checks the condition again on its
    /// newest version: two operators requeueing at once, the second after a Herald already leased the row, leave
    /// that row alone. (A `state = 'dead'` on the UPDATE itself would do the same, but leads the planner to read
    /// every dead letter for a batch.)
    static func requeue(_ condition: String) -> String {
        """
        UPDATE deliveries SET state = 'queued', reason = NULL, attempts = 0, next_attempt_at = $1, updated_at = $1,
                              lease_owner = NULL, lease_expires_at = NULL
        WHERE id IN (
            SELECT d.id FROM deliveries AS d JOIN messages AS m ON m.id = d.message_id
            WHERE \(condition) AND m.expires_at > $1
            LIMIT $2
            FOR UPDATE OF d)
        """
    }

    /// Parameters: limit, the condition's. Locks and checks again as `requeue` does.
    static func purge(_ condition: String) -> String {
        """
        DELETE FROM deliveries
        WHERE id IN (SELECT d.id FROM deliveries AS d WHERE \(condition) LIMIT $1 FOR UPDATE)
        RETURNING message_id
        """
    }

    /// Parameters: the message ids (`text[]`), the oldest `created_at` whose idempotency key still answers.
    static let deleteEmptyMessages = """
        DELETE FROM messages WHERE id = ANY($1::text[]) AND (idempotency_key IS NULL OR created_at <= $2)
          AND NOT EXISTS (SELECT 1 FROM deliveries WHERE message_id = messages.id)
        """
}

extension DeadLetterFilter {
    /// `terms` as the WHERE condition on `deliveries AS d`, with numbered placeholders from `$first` on (`$3`, `$4`…
    /// for `first` 3), and its arguments; the statement's own parameters take the others. Only fixed fragments and
    /// placeholders go into the SQL; every value is bound. `d.state = 'dead'` is written as the partial indexes say
    /// it, so PostgreSQL sees that their condition holds.
    func condition(parametersFrom first: Int) -> (condition: String, arguments: [PGValue]) {
        var conditions = ["d.state = 'dead'"]
        var arguments: [PGValue] = []
        func bind(_ value: PGValue) -> String {
            arguments.append(value)
            return "$\(first + arguments.count - 1)"
        }
        for term in terms {
            switch term {
            case .app(let app): conditions.append("d.app = \(bind(.text(app)))")
            case .reason(let reason): conditions.append("d.reason = \(bind(.text(reason)))")
            case .diedSince(let time): conditions.append("d.updated_at >= \(bind(.integer(time)))")
            case .diedUntil(let time): conditions.append("d.updated_at <= \(bind(.integer(time)))")
            case .token(let token): conditions.append("d.token = \(bind(.text(token)))")
            case .after(let cursor):
                // Spelt out rather than as a row value: the first term bounds the index range.
                let (diedAt, same, id) = (
                    bind(.integer(cursor.diedAt)), bind(.integer(cursor.diedAt)), bind(.integer(cursor.deliveryID)))
                conditions.append("d.updated_at <= \(diedAt) AND (d.updated_at < \(same) OR d.id < \(id))")
            case .deliveryIDs(let ids):
                conditions.append("d.id IN (\(ids.map { bind(.integer($0)) }.joined(separator: ", ")))")
            }
        }
        return (conditions.joined(separator: " AND "), arguments)
    }
}
