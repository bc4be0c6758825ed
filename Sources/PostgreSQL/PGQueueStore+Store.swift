import Queue
import Support

// The rest of `Queue.Store` on PostgreSQL: the reads and maintenance operations ingest, the HTTP reads and the
// commands need besides the queue's own (`PGQueueStore.swift`, `PGQueueStore+Messages.swift`). Status, dead
// letters and retention have files of their own (`+Status`, `+DeadLetters`, `+Retention`). Each statement has the
// semantics of SQLite's (`SQLiteQueueStore+Messages.swift`, `+TokenListing.swift`, `+TokenEvents.swift`) and the
// same ordering, limits and cursors; the engine-neutral suites (`QueueStoreSuite`, `AdminStoreSuite`) hold both.
extension PGQueueStore: Store {
    public var location: String { connection.redactedURL }

    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try write { _ in try body() }
    }

    public func snapshot<T>(_ body: () throws -> T) throws -> T {
        try connection.transaction(isolation: .repeatableRead, body)
    }

    // MARK: Messages

    /// The message and its deliveries in id order, or nil.
    public func message(id: String) throws -> MessageRecord? {
        guard
            var record = try connection.queryOne(
                """
                SELECT id, app, payload, target_kind, collapse_key, priority, ttl_seconds, dry_run, created_at,
                       expires_at, format, token_field, send_at, cancelled_at
                FROM messages WHERE id = $1
                """, [.text(id)],
                row: {
                    MessageRecord(
                        id: $0.string(0), app: $0.string(1), payload: $0.string(2),
                        format: MessageFormat(rawValue: $0.string(10)) ?? .legacy,
                        targetKind: TargetKind(stored: $0.string(3)),
                        tokenField: TokenField(rawValue: $0.string(11)) ?? .token,
                        collapseKey: $0.optionalString(4), priority: Priority(stored: $0.string(5)),
                        ttlSeconds: $0.int(6),
                        dryRun: $0.int(7) != 0, createdAt: $0.int64(8), expiresAt: $0.int64(9),
                        sendAt: $0.optionalInt64(12), cancelledAt: $0.optionalInt64(13), deliveries: [])
                })
        else { return nil }
        record.deliveries = try connection.query(
            """
            SELECT id, token, state, reason, attempts, next_attempt_at, fcm_message_id, canonical_token, last_status,
                   updated_at, app
            FROM deliveries WHERE message_id = $1 ORDER BY id
            """, [.text(id)]
        ) {
            DeliveryRecord(
                id: $0.int64(0), token: $0.string(1), state: DeliveryState(stored: $0.string(2)),
                reason: $0.optionalString(3).map(DeliveryReason.init(stored:)), attempts: $0.int(4),
                nextAttemptAt: $0.int64(5),
                fcmMessageID: $0.optionalString(6), canonicalToken: $0.optionalString(7),
                lastStatus: $0.optionalInt64(8), updatedAt: $0.int64(9), app: $0.string(10))
        }
        return record
    }

    // MARK: Token registry

    public func token(_ token: String) throws -> TokenRecord? {
        try connection.queryOne(
            #"SELECT token, app, "user", created_at, updated_at FROM tokens WHERE token = $1"#, [.text(token)],
            row: Self.tokenRecord)
    }

    /// Removes `token` from the registry; false when it was not registered.
    public func deleteToken(_ token: String) throws -> Bool {
        try connection.run("DELETE FROM tokens WHERE token = $1", .text(token)) > 0
    }

    /// Registered tokens in token order, optionally of one app and one user, after `after` (for paging). One
    /// prepared statement per combination of filters given.
    ///
    /// The order is the database's collation for `text`, the one the primary key is sorted in, so a page is a
    /// range of that index rather than a sort of every token. Under the C (or C.UTF-8) locale that is SQLite's byte
    /// order; under another (en_US.UTF-8) mixed-case or punctuated tokens come in another order than on SQLite, but
    /// `after` pages through every token once all the same, since the cursor compares as the index sorts.
    public func tokens(app: String?, user: String?, after: String?, limit: Int) throws -> [TokenRecord] {
        var terms: [String] = []
        var arguments: [PGValue] = []
        func bind(_ value: PGValue) -> String {
            arguments.append(value)
            return "$\(arguments.count)"
        }
        if let app { terms.append("app = \(bind(.text(app)))") }
        if let user { terms.append(#""user" = \#(bind(.text(user)))"#) }
        if let after { terms.append("token > \(bind(.text(after)))") }
        let condition = terms.isEmpty ? "" : "WHERE " + terms.joined(separator: " AND ")
        let sql = #"SELECT token, app, "user", created_at, updated_at FROM tokens "#
            + "\(condition) ORDER BY token LIMIT \(bind(.integer(Int64(limit))))"
        return try connection.query(sql, arguments, row: Self.tokenRecord)
    }

    /// Events with an id above `after`, oldest first.
    public func tokenEvents(after: Int64, limit: Int) throws -> [TokenEventRecord] {
        try connection.query(
            """
            SELECT id, at, app, token, kind, replacement, reason, message_id
            FROM token_events WHERE id > $1 ORDER BY id LIMIT $2
            """, [.integer(after), .integer(Int64(limit))]
        , row: Self.tokenEvent)
    }

    /// The latest events, newest first; with `before`, those with a smaller id (the next page back).
    public func recentTokenEvents(before: Int64?, limit: Int) throws -> [TokenEventRecord] {
        try connection.query(
            """
            SELECT id, at, app, token, kind, replacement, reason, message_id
            FROM token_events WHERE id < $1 ORDER BY id DESC LIMIT $2
            """, [.integer(before ?? Int64.max), .integer(Int64(limit))]
        , row: Self.tokenEvent)
    }

    /// The events about one token of one app, newest first (`token_events_by_app_token`).
    public func tokenEvents(app: String, token: String, limit: Int) throws -> [TokenEventRecord] {
        try connection.query(
            """
            SELECT id, at, app, token, kind, replacement, reason, message_id
            FROM token_events WHERE app = $1 AND token = $2 ORDER BY id DESC LIMIT $3
            """, [.text(app), .text(token), .integer(Int64(limit))]
        , row: Self.tokenEvent)
    }

    /// A `token_events` row read as `id, at, app, token, kind, replacement, reason, message_id`.
    private static func tokenEvent(_ row: PGRow) -> TokenEventRecord {
        TokenEventRecord(
            id: row.int64(0), at: row.int64(1), app: row.string(2), token: row.string(3),
            kind: TokenTombstone.Kind(stored: row.string(4)), replacement: row.optionalString(5),
            reason: row.optionalString(6).map(DeliveryReason.init(stored:)), messageID: row.optionalString(7))
    }

    private static func tokenRecord(_ row: PGRow) -> TokenRecord {
        TokenRecord(
            token: row.string(0), app: row.string(1), user: row.optionalString(2), createdAt: row.int64(3),
            updatedAt: row.int64(4))
    }
}
