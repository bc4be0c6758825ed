import Queue
import Support

/// Ingest's operations in PostgreSQL's SQL; the rule that combines them is Queue's (`Store+Ingest.swift`).
extension PGQueueStore {
    public func keyedMessage(app: String, key: String) throws -> KeyedMessage? {
        try connection.queryOne(
            """
            SELECT id, rowid, created_at, idempotency_fingerprint FROM messages
            WHERE app = $1 AND idempotency_key = $2
            """,
            [.text(app), .text(key)]
        ) {
            KeyedMessage(id: $0.string(0), rowID: $0.int64(1), createdAt: $0.int64(2), fingerprint: $0.optionalInt64(3))
        }
    }

    public func releaseIdempotencyKey(messageID: String) throws {
        try connection.run("UPDATE messages SET idempotency_key = NULL WHERE id = $1", .text(messageID))
    }

    public func deliveryCount(messageID: String) throws -> Int {
        try connection.queryOne(
            "SELECT count(*) FROM deliveries WHERE message_id = $1", [.text(messageID)]) { $0.int(0) } ?? 0
    }

    /// One statement, one round trip: the message, its deliveries, their collapse heads, and the wake-up (after the
    /// read of a `users` target's tokens). The wake-up notifies `readyChannel` with each app's name when any delivery
    /// was queued, so every Herald's `PGListener` wakes that app's claimers; PostgreSQL delivers it only if the
    /// transaction commits and folds identical ones (a group commit of a thousand inserts to one app sends one).
    ///
    /// Two Heralds taking the same key at once: the second insert waits for the first transaction, then inserts
    /// nothing (`ON CONFLICT DO NOTHING`, the `message` row set empty) and returns nil.
    public func storeMessage(_ insert: MessageInsert) throws -> StoredMessage? {
        let message = insert.message
        let targets: [String]
        // Each target's app: the message's, but for a fan-out to users in every app, each token's own.
        var apps: [String]?
        switch message.target {
        case .tokens(let tokens): targets = tokens
        case .topic(let topic): targets = [topic]
        case .condition(let condition): targets = [condition]
        case .users(let users):
            let found = try tokens(ofUsers: users, app: message.app)
            targets = found.map(\.token)
            if message.app == NewMessage.everyApp { apps = found.map(\.app) }
        }
        var arguments: [PGValue] = [
            .text(insert.id), .text(message.app), .optional(message.idempotencyKey), .optional(insert.fingerprint),
            .text(message.payload), .text(message.target.kind.rawValue), .optional(message.collapseKey),
            .text(message.priority.rawValue), .integer(Int64(message.ttlSeconds)), .integer(message.dryRun ? 1 : 0),
            .integer(insert.createdAt), .integer(insert.expiresAt), .text(message.format.rawValue),
            .text(message.tokenField.rawValue), .integer(insert.lane.rawValue), .array(targets),
            .text(Self.readyChannel), .array(apps ?? Array(repeating: message.app, count: targets.count)),
        ]
        if let collapseKey = insert.collapseHeadKey { arguments.append(.text(collapseKey)) }
        let inserted = try connection.queryOne(
            insert.collapseHeadKey == nil ? Self.insertMessageSQL : Self.insertMessageWithCollapseHeadsSQL, arguments
        ) { (rowID: $0.optionalInt64(0), deliveries: $0.int(1)) }
        guard let inserted, let rowID = inserted.rowID else { return nil }
        return StoredMessage(rowID: rowID, deliveries: inserted.deliveries)
    }

    /// `$1`–`$14` the message's columns, `$15` the priority rank, `$16` the targets, `$17` the wake-up channel, `$18`
    /// each target's app (the message's, or each token's own for a fan-out in every app: one wake-up per app). The
    /// deliveries' foreign key is checked at the end of the statement, when the message row is there.
    private static func insertMessageSQL(moreCTEs: String) -> String {
        """
        WITH message AS (
            INSERT INTO messages (id, app, idempotency_key, idempotency_fingerprint, payload, target_kind, collapse_key,
                                  priority, ttl_seconds, dry_run, created_at, expires_at, format, token_field)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
            ON CONFLICT (app, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
            RETURNING rowid),
        inserted AS (
            INSERT INTO deliveries (message_id, app, token, state, next_attempt_at, updated_at, priority_rank,
                                    created_at)
            SELECT $1::text, target.app, target.token, 'queued', $11::bigint, $11::bigint, $15::int, $11::bigint
            FROM message, unnest($16::text[], $18::text[]) WITH ORDINALITY AS target (token, app, position)
            ORDER BY target.position
            RETURNING id, token, app),\(moreCTEs)
        counted AS (SELECT count(*) AS n FROM inserted),
        notified AS (SELECT count(pg_notify($17, app)) AS apps FROM (SELECT DISTINCT app FROM inserted) AS woken)
        SELECT message.rowid, counted.n, notified.apps
        FROM counted CROSS JOIN notified LEFT JOIN message ON true
        """
    }

    private static let insertMessageSQL = insertMessageSQL(moreCTEs: "")

    /// With each target's collapse head (`$19` the key) pointing at its new delivery: the newest message with the key
    /// supersedes older ones still queued for the target while it will reach the device (the claim decides,
    /// `CollapseHead.supersedes`). A head whose dead or dropped delivery is deleted goes with it (the schema's
    /// `collapse_head_removed` trigger). A target named twice gets the head of its last delivery.
    private static let insertMessageWithCollapseHeadsSQL = insertMessageSQL(
        moreCTEs: """

            heads AS (
                INSERT INTO collapse_heads (app, collapse_key, token, message_id, delivery_id, created_at)
                SELECT DISTINCT ON (app, token) app, $19::text, token, $1::text, id, $11::bigint
                FROM inserted ORDER BY app, token, id DESC
                ON CONFLICT (app, collapse_key, token) DO UPDATE SET
                    message_id = excluded.message_id, delivery_id = excluded.delivery_id,
                    created_at = excluded.created_at),
        """)

    /// Every registered token of these users in `app` (in every app `apps` knows for `NewMessage.everyApp`), each
    /// once, in the order they were first registered (`tokens.rowid`, migration 0011): the order SQLite's fan-out
    /// has.
    func tokens(ofUsers users: [String], app: String) throws -> [(app: String, token: String)] {
        let everyApp = app == NewMessage.everyApp
        return try connection.query(
            """
            SELECT app, token FROM tokens
            WHERE \(everyApp ? "app IN (SELECT name FROM apps)" : "app = $2") AND "user" = ANY($1::text[])
            ORDER BY rowid
            """,
            everyApp ? [.array(users)] : [.array(users), .text(app)]) { (app: $0.string(0), token: $0.string(1)) }
    }

    public func messageExists(id: String) throws -> Bool {
        try connection.queryOne("SELECT 1 FROM messages WHERE id = $1", [.text(id)], row: { _ in true }) ?? false
    }

    /// An upsert keeps the row, and with it the `rowid` a `users` fan-out orders by.
    public func registerToken(_ token: String, app: String, user: String?, now: Int64) throws {
        try connection.run(
            """
            INSERT INTO tokens (token, app, "user", created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
            ON CONFLICT (token) DO UPDATE SET app = excluded.app, "user" = excluded."user",
                updated_at = excluded.updated_at
            """, .text(token), .text(app), .optional(user), .integer(now))
    }
}
