import Queue
import Storage
import Support

/// Ingest on PostgreSQL, with the semantics of SQLite's `Connection.insertMessage` (`Connection+Messages.swift`).
extension PGQueueStore {
    /// Stores a message and one queued delivery per target. Call inside `write`.
    ///
    /// When it queued any delivery, the same statement notifies `readyChannel` with the app's name, so every
    /// Herald's `PGListener` wakes that app's claimers. PostgreSQL delivers it only if the transaction commits
    /// (nothing for a rolled-back insert) and folds identical ones: a group commit of a thousand inserts to one
    /// app sends one.
    ///
    /// An idempotency key is scoped to the app. A repeat within the window with the same message returns the first
    /// one and stores nothing; the same key with a different message throws `IdempotencyConflict`. Two Heralds
    /// taking the same key at once store one message: the second insert waits for the first transaction and
    /// then answers as a repeat (or a conflict).
    ///
    /// `AcceptedMessage.rowID` is the message's `rowid` column (SQLite's implicit rowid).
    public func insertMessage(_ message: NewMessage, now: Int64) throws -> AcceptedMessage {
        let fingerprint = message.idempotencyKey.map { _ in message.fingerprint }
        if let key = message.idempotencyKey, let earlier = try earlierMessage(app: message.app, key: key,
                                                                              fingerprint: fingerprint, now: now) {
            return earlier
        }

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

        let id = MessageID.make(now: now)
        // TTL 0 is "now or never": it may wait for a send no longer than the window.
        let expiresAt = message.ttlSeconds == 0 ? now + ttlZeroWindowMillis : now + Int64(message.ttlSeconds) * 1000
        if message.app != NewMessage.everyApp { try ensureApp(message.app) }
        // A dry run reaches no device, so it supersedes nothing.
        let collapseKey = message.dryRun ? nil : message.collapseKey
        // One statement, one round trip: the message, its deliveries (none when the key was taken meanwhile: the
        // `message` row set is then empty), their collapse heads, and the wake-up.
        var arguments: [PGValue] = [
            .text(id), .text(message.app), .optional(message.idempotencyKey), .optional(fingerprint),
            .text(message.payload), .text(message.target.kind.rawValue), .optional(message.collapseKey),
            .text(message.priority.rawValue), .integer(Int64(message.ttlSeconds)), .integer(message.dryRun ? 1 : 0),
            .integer(now), .integer(expiresAt), .text(message.format.rawValue), .text(message.tokenField.rawValue),
            .integer(message.priority.lane.rawValue), .array(targets), .text(Self.readyChannel),
            .array(apps ?? Array(repeating: message.app, count: targets.count)),
        ]
        if let collapseKey { arguments.append(.text(collapseKey)) }
        let inserted = try connection.queryOne(
            collapseKey == nil ? Self.insertMessageSQL : Self.insertMessageWithCollapseHeadsSQL, arguments
        ) { (rowID: $0.optionalInt64(0), deliveries: $0.int(1)) }
        guard let inserted, let rowID = inserted.rowID else {
            // Another transaction committed the same key after our look-up: answer as for its message.
            guard let key = message.idempotencyKey,
                let earlier = try earlierMessage(app: message.app, key: key, fingerprint: fingerprint, now: now)
            else {
                throw PGError(sqlState: "23505", message: "the message could not be stored: its key was taken")
            }
            return earlier
        }
        return AcceptedMessage(id: id, rowID: rowID, deliveries: inserted.deliveries, isRepeat: false)
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

    /// The app's earlier message with `key` as a repeat, when it is within the window and the same message;
    /// nil when there is none or its key expired (then the key is freed, the old message keeping its rows).
    /// - Throws: `IdempotencyConflict` when the key names another message.
    private func earlierMessage(app: String, key: String, fingerprint: Int64?, now: Int64) throws -> AcceptedMessage? {
        guard let earlier = try connection.queryOne(
            """
            SELECT id, created_at, idempotency_fingerprint, rowid FROM messages
            WHERE app = $1 AND idempotency_key = $2
            """,
            [.text(app), .text(key)],
            row: { (id: $0.string(0), createdAt: $0.int64(1), fingerprint: $0.optionalInt64(2), rowID: $0.int64(3)) })
        else { return nil }
        guard earlier.createdAt > now - idempotencyWindowMillis else {
            try connection.run("UPDATE messages SET idempotency_key = NULL WHERE id = $1", .text(earlier.id))
            return nil
        }
        // Rows stored before fingerprints existed match any body, as they did then.
        guard earlier.fingerprint == nil || earlier.fingerprint == fingerprint else {
            throw IdempotencyConflict(key: key)
        }
        let count = try connection.queryOne(
            "SELECT count(*) FROM deliveries WHERE message_id = $1", [.text(earlier.id)]) { $0.int(0) } ?? 0
        return AcceptedMessage(id: earlier.id, rowID: earlier.rowID, deliveries: count, isRepeat: true)
    }

    /// Every registered token of these users in `app` (in every app `apps` knows for `NewMessage.everyApp`), each
    /// once, in the order they were first registered: the order SQLite's fan-out has.
    func tokens(ofUsers users: [String], app: String) throws -> [(app: String, token: String)] {
        let everyApp = app == NewMessage.everyApp
        return try connection.query(
            """
            SELECT app, token FROM tokens
            WHERE \(everyApp ? "app IN (SELECT name FROM apps)" : "app = $2") AND "user" = ANY($1::text[])
            ORDER BY created_at, token
            """,
            everyApp ? [.array(users)] : [.array(users), .text(app)]) { (app: $0.string(0), token: $0.string(1)) }
    }

    /// Drops the message's queued deliveries with reason `Cancelled`. Nil when there is no such message;
    /// otherwise how many were cancelled (deliveries already in flight or finished are left alone).
    public func cancelMessage(id: String, now: Int64) throws -> Int? {
        guard try connection.queryOne("SELECT 1 FROM messages WHERE id = $1", [.text(id)], row: { _ in true }) != nil
        else { return nil }
        return try connection.run(
            """
            UPDATE deliveries SET state = 'dropped', reason = 'Cancelled', updated_at = $1
            WHERE message_id = $2 AND state = 'queued'
            """, .integer(now), .text(id))
    }

    /// Registers `token` for `app` and `user`, or moves it to them.
    public func upsertToken(
        _ token: String, app: String, user: String?, now: Int64
    ) throws -> (TokenRecord, created: Bool) {
        let existing = try self.token(token)
        try connection.run(
            """
            INSERT INTO tokens (token, app, "user", created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
            ON CONFLICT (token) DO UPDATE SET app = excluded.app, "user" = excluded."user",
                updated_at = excluded.updated_at
            """, .text(token), .text(app), .optional(user), .integer(now))
        let record = TokenRecord(
            token: token, app: app, user: user, createdAt: existing?.createdAt ?? now, updatedAt: now)
        return (record, existing == nil)
    }
}
