import Queue
import Support

extension SQLiteQueueStore {
    /// A look-up per key: SQLite's statements cost no round trip.
    public func keyedMessages(_ keys: [MessageKey]) throws -> [MessageKey: KeyedMessage] {
        var found: [MessageKey: KeyedMessage] = [:]
        for key in keys {
            found[key] = try connection.queryOne(
                """
                SELECT id, rowid, created_at, idempotency_fingerprint,
                       (SELECT count(*) FROM deliveries WHERE message_id = messages.id)
                FROM messages WHERE app = ? AND idempotency_key = ?
                """, [.text(key.app), .text(key.key)]
            ) {
                KeyedMessage(
                    id: $0.string(0), rowID: $0.int64(1), createdAt: $0.int64(2), fingerprint: $0.optionalInt64(3),
                    deliveries: $0.int(4))
            }
        }
        return found
    }

    public func releaseIdempotencyKey(messageID: String) throws {
        try connection.run("UPDATE messages SET idempotency_key = NULL WHERE id = ?", .text(messageID))
    }

    /// One message after the other (SQLite's statements cost no round trip). SQLite has one writer, so a key is
    /// never taken meanwhile: never nil.
    public func storeMessages(_ inserts: [MessageInsert]) throws -> [StoredMessage?] {
        try inserts.map(storeMessage)
    }

    /// The message row, its deliveries (a statement each), and its collapse heads (one statement).
    private func storeMessage(_ insert: MessageInsert) throws -> StoredMessage {
        let message = insert.message
        try connection.run(
            """
            INSERT INTO messages (id, app, idempotency_key, idempotency_fingerprint, payload, target_kind, collapse_key,
                                  priority, ttl_seconds, dry_run, created_at, expires_at, format, token_field,
                                  send_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            .text(insert.id), .text(message.app), .optional(message.idempotencyKey), .optional(insert.fingerprint),
            .text(message.payload), .text(message.target.kind.rawValue), .optional(message.collapseKey),
            .text(message.priority.rawValue),
            .integer(Int64(message.ttlSeconds)), .integer(message.dryRun ? 1 : 0), .integer(insert.createdAt),
            .integer(insert.expiresAt), .text(message.format.rawValue), .text(message.tokenField.rawValue),
            .optional(insert.sendAt))
        let rowID = connection.lastInsertRowID
        let (id, app, rank, now) = (insert.id, message.app, insert.lane.rawValue, insert.createdAt)
        let deliveries: Int
        switch message.target {
        case .users(let users):
            deliveries = try insertDeliveries(
                toUsers: users, messageID: id, app: app, rank: rank, due: insert.dueAt, now: now)
        case .tokens(let tokens):
            deliveries = try insertDeliveries(
                to: tokens, messageID: id, app: app, rank: rank, due: insert.dueAt, now: now)
        case .topic(let target), .condition(let target):
            deliveries = try insertDeliveries(
                to: [target], messageID: id, app: app, rank: rank, due: insert.dueAt, now: now)
        }
        if let collapseKey = insert.collapseHeadKey, deliveries > 0 {
            try makeHeads(messageID: id, collapseKey: collapseKey, now: now)
        }
        return StoredMessage(rowID: rowID, deliveries: deliveries)
    }

    /// One queued delivery per target, in the order given, first due at `due`; returns how many.
    private func insertDeliveries(
        to targets: [String], messageID: String, app: String, rank: Int64, due: Int64, now: Int64
    ) throws -> Int {
        let insert = try connection.statement(
            """
            INSERT INTO deliveries
                (message_id, app, token, state, next_attempt_at, updated_at, priority_rank, created_at)
            VALUES (?, ?, ?, 'queued', ?, ?, ?, ?)
            """)
        for target in targets {
            try insert.execute([
                .text(messageID), .text(app), .text(target), .integer(due), .integer(now), .integer(rank),
                .integer(now),
            ])
        }
        return targets.count
    }

    /// One queued delivery per registered token of these users in `app` — in every app for `NewMessage.everyApp`,
    /// each delivery in its token's app (each token once: it has one user and one app) — in the order the tokens
    /// were first registered, each with the user it was reached through (the outcome feed's `user`); returns how
    /// many.
    ///
    /// One set-based statement, so a fan-out to a million tokens never passes through Swift. The tokens are read in
    /// rowid order (`rowid IN (…)` walks the sorted rowids the index gives), which visits each table page once:
    /// looked up user by user, a large fan-out reads one random page per token, several seconds for a million. Every
    /// app is every app `apps` knows (serve registers its apps there as it starts), each looked up through the same
    /// `(app, user)` index.
    private func insertDeliveries(
        toUsers users: [String], messageID: String, app: String, rank: Int64, due: Int64, now: Int64
    ) throws -> Int {
        let apps = app == NewMessage.everyApp ? "app IN (SELECT name FROM apps)" : "app = ?2"
        return try connection.run(
            """
            INSERT INTO deliveries
                (message_id, app, token, state, next_attempt_at, updated_at, priority_rank, created_at, user)
            SELECT ?1, app, token, 'queued', ?6, ?3, ?4, ?3, user FROM tokens
            WHERE rowid IN (
                SELECT rowid FROM tokens WHERE \(apps) AND user IN (SELECT value FROM json_each(?5))
            )
            ORDER BY rowid
            """, .text(messageID), .text(app), .integer(now), .integer(rank),
            .text(JSON.array(users.map(JSON.string)).serialized()), .integer(due))
    }

    /// Each delivery of this message becomes the collapse head for its target (the claim decides what a head
    /// supersedes, `CollapseHead.supersedes`). Set-based over the message's deliveries (in id order, so for a target
    /// named twice the later delivery is the head), and only for messages that have a collapse key.
    private func makeHeads(messageID: String, collapseKey: String, now: Int64) throws {
        try connection.run(
            """
            INSERT INTO collapse_heads (app, collapse_key, token, message_id, delivery_id, created_at)
            SELECT app, ?, token, message_id, id, ? FROM deliveries WHERE message_id = ? ORDER BY id
            ON CONFLICT (app, collapse_key, token) DO UPDATE SET
                message_id = excluded.message_id, delivery_id = excluded.delivery_id, created_at = excluded.created_at
            """, .text(collapseKey), .integer(now), .text(messageID))
    }

    /// The message and its deliveries, or nil.
    public func message(id: String) throws -> MessageRecord? {
        guard
            var record = try connection.queryOne(
                """
                SELECT id, app, payload, target_kind, collapse_key, priority, ttl_seconds, dry_run, created_at,
                       expires_at, format, token_field, send_at, cancelled_at
                FROM messages WHERE id = ?
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
            FROM deliveries WHERE message_id = ? ORDER BY id
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

    public func messageExists(id: String) throws -> Bool {
        try connection.queryOne("SELECT 1 FROM messages WHERE id = ?", [.text(id)], row: { _ in true }) ?? false
    }

    public func markCancelled(id: String, now: Int64) throws -> Bool {
        try connection.run(
            "UPDATE messages SET cancelled_at = coalesce(cancelled_at, ?) WHERE id = ?", .integer(now), .text(id)) > 0
    }

    /// `messages_scheduled`, from `now` on: only the messages still waiting are read.
    public func scheduledMessageCounts(now: Int64) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for (app, count) in try connection.query(
            """
            SELECT app, count(*) FROM messages INDEXED BY messages_scheduled
            WHERE send_at > ? AND cancelled_at IS NULL GROUP BY app
            """, [.integer(now)], row: { ($0.string(0), $0.int(1)) })
        {
            counts[app] = count
        }
        return counts
    }
}
