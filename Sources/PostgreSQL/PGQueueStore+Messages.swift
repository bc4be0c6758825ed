import Queue
import Support

/// Ingest's operations in PostgreSQL's SQL; the rule that combines them is Queue's (`Store+Ingest.swift`).
extension PGQueueStore {
    /// One statement for every key of a group's messages.
    public func keyedMessages(_ keys: [MessageKey]) throws -> [MessageKey: KeyedMessage] {
        let found = try connection.query(
            """
            SELECT m.app, m.idempotency_key, m.id, m.rowid, m.created_at, m.idempotency_fingerprint,
                   (SELECT count(*) FROM deliveries AS d WHERE d.message_id = m.id)
            FROM unnest($1::text[], $2::text[]) AS wanted (app, key)
            JOIN messages AS m ON m.app = wanted.app AND m.idempotency_key = wanted.key
            WHERE m.idempotency_key IS NOT NULL
            """,
            [.array(keys.map(\.app)), .array(keys.map(\.key))]
        ) {
            (MessageKey(app: $0.string(0), key: $0.string(1)),
             KeyedMessage(
                id: $0.string(2), rowID: $0.int64(3), createdAt: $0.int64(4), fingerprint: $0.optionalInt64(5),
                deliveries: $0.int(6)))
        }
        return Dictionary(found, uniquingKeysWith: { first, _ in first })
    }

    public func releaseIdempotencyKey(messageID: String) throws {
        try connection.run("UPDATE messages SET idempotency_key = NULL WHERE id = $1", .text(messageID))
    }

    /// The most messages one statement of `storeMessages` takes: a group's messages go in statements of this many,
    /// so no statement's parameters grow without bound.
    static let messagesPerStatement = 2000

    /// One statement per `messagesPerStatement` messages, whatever their targets: the messages, their deliveries
    /// (a `users` target expanded in the statement), their collapse heads, and the wake-up. The wake-up notifies
    /// `readyChannel` with each app's name when any delivery was queued, so every Herald's `PGListener` wakes that
    /// app's claimers; PostgreSQL delivers it only if the transaction commits and folds identical ones (a group
    /// commit of a thousand messages to one app sends one).
    ///
    /// Two Heralds taking the same key at once: the second insert waits for the first transaction, then inserts
    /// nothing for that message (`ON CONFLICT DO NOTHING`; its deliveries join no `message` row) and answers nil.
    public func storeMessages(_ inserts: [MessageInsert]) throws -> [StoredMessage?] {
        var stored: [StoredMessage?] = []
        stored.reserveCapacity(inserts.count)
        for start in stride(from: 0, to: inserts.count, by: Self.messagesPerStatement) {
            let chunk = inserts[start..<min(start + Self.messagesPerStatement, inserts.count)]
            stored += try connection.query(Self.storeMessagesSQL, Self.arguments(chunk)) { row in
                row.optionalInt64(0).map { StoredMessage(rowID: $0, deliveries: row.int(1)) }
            }
        }
        return stored
    }

    /// `storeMessagesSQL`'s parameters: one array per column of the messages (`$1`–`$16`), the explicit targets as
    /// (message position, token) pairs (`$17`, `$18`), the users of `users` targets likewise (`$19`, `$20`), the
    /// wake-up channel, `NewMessage.everyApp`, and the messages' `send_at` and first due times (`$23`, `$24`).
    private static func arguments(_ inserts: ArraySlice<MessageInsert>) -> [PGValue] {
        var (targetOf, targets, userOf, users): ([Int64], [String], [Int64], [String]) = ([], [], [], [])
        for (position, insert) in zip(Int64(1)..., inserts) {
            switch insert.message.target {
            case .tokens(let tokens):
                targetOf += repeatElement(position, count: tokens.count)
                targets += tokens
            case .topic(let target), .condition(let target):
                targetOf.append(position)
                targets.append(target)
            case .users(let named):
                userOf += repeatElement(position, count: named.count)
                users += named
            }
        }
        let messages = inserts.map(\.message)
        return [
            .array(inserts.map(\.id)), .array(messages.map(\.app)), .array(messages.map(\.idempotencyKey)),
            .array(inserts.map(\.fingerprint)), .array(messages.map(\.payload)),
            .array(messages.map(\.target.kind.rawValue)), .array(messages.map(\.collapseKey)),
            .array(messages.map(\.priority.rawValue)), .array(messages.map { Int64($0.ttlSeconds) }),
            .array(messages.map { $0.dryRun ? Int64(1) : 0 }), .array(inserts.map(\.createdAt)),
            .array(inserts.map(\.expiresAt)), .array(messages.map(\.format.rawValue)),
            .array(messages.map(\.tokenField.rawValue)), .array(inserts.map(\.lane.rawValue)),
            .array(inserts.map(\.collapseHeadKey)), .array(targetOf), .array(targets), .array(userOf), .array(users),
            .text(readyChannel), .text(NewMessage.everyApp), .array(inserts.map(\.sendAt)),
            .array(inserts.map(\.dueAt)),
        ]
    }

    /// Each message's deliveries in the order of its targets (for `users`, each token once, in the order of their
    /// first registration, `tokens.rowid`: the order SQLite's fan-out has; in every app `apps` knows for
    /// `NewMessage.everyApp`, each delivery in its token's app), messages in the order given, so delivery ids follow
    /// both. Each delivery becomes its target's collapse head for the message's head key: of several for one target
    /// and key, the last (a newer message supersedes older ones still queued while it will reach the device; the
    /// claim decides, `CollapseHead.supersedes`). A head whose dead or dropped delivery is deleted goes with it (the
    /// schema's `collapse_head_removed` trigger). The deliveries' foreign key is checked at the end of the
    /// statement, when the message rows are there. One row per message, in order: its `rowid` (NULL when its key
    /// was taken) and how many deliveries it got.
    private static let storeMessagesSQL = """
        WITH input AS (
            SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[],
                                 $7::text[], $8::text[], $9::int[], $10::int[], $11::bigint[], $12::bigint[],
                                 $13::text[], $14::text[], $15::int[], $16::text[], $23::bigint[], $24::bigint[])
                WITH ORDINALITY AS m (id, app, idempotency_key, fingerprint, payload, target_kind, collapse_key,
                                      priority, ttl_seconds, dry_run, created_at, expires_at, format, token_field,
                                      rank, head_key, send_at, due_at, position)),
        message AS (
            INSERT INTO messages (id, app, idempotency_key, idempotency_fingerprint, payload, target_kind, collapse_key,
                                  priority, ttl_seconds, dry_run, created_at, expires_at, format, token_field, send_at)
            SELECT id, app, idempotency_key, fingerprint, payload, target_kind, collapse_key, priority, ttl_seconds,
                   dry_run, created_at, expires_at, format, token_field, send_at
            FROM input ORDER BY position
            ON CONFLICT (app, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
            RETURNING id, rowid),
        wanted AS (
            SELECT DISTINCT input.position, input.app, named."user"
            FROM unnest($19::bigint[], $20::text[]) AS named (position, "user")
            JOIN input ON input.position = named.position),
        target AS (
            SELECT target.position, input.app, target.token, target.ordinal, NULL::text AS "user"
            FROM unnest($17::bigint[], $18::text[]) WITH ORDINALITY AS target (position, token, ordinal)
            JOIN input ON input.position = target.position
            UNION ALL
            SELECT wanted.position, token.app, token.token, token.rowid, token."user"
            FROM wanted JOIN tokens AS token ON token.app = wanted.app AND token."user" = wanted."user"
            WHERE wanted.app <> $22
            UNION ALL
            SELECT wanted.position, token.app, token.token, token.rowid, token."user"
            FROM wanted JOIN tokens AS token ON token."user" = wanted."user"
            WHERE wanted.app = $22 AND token.app IN (SELECT name FROM apps)),
        inserted AS (
            INSERT INTO deliveries (message_id, app, token, state, next_attempt_at, updated_at, priority_rank,
                                    created_at, "user")
            SELECT input.id, target.app, target.token, 'queued', input.due_at, input.created_at, input.rank,
                   input.created_at, target."user"
            FROM target JOIN input ON input.position = target.position JOIN message ON message.id = input.id
            ORDER BY target.position, target.ordinal
            RETURNING id, message_id, app, token),
        heads AS (
            INSERT INTO collapse_heads (app, collapse_key, token, message_id, delivery_id, created_at)
            SELECT DISTINCT ON (inserted.app, input.head_key, inserted.token)
                   inserted.app, input.head_key, inserted.token, inserted.message_id, inserted.id, input.created_at
            FROM inserted JOIN input ON input.id = inserted.message_id
            WHERE input.head_key IS NOT NULL
            ORDER BY inserted.app, input.head_key, inserted.token, inserted.id DESC
            ON CONFLICT (app, collapse_key, token) DO UPDATE SET
                message_id = excluded.message_id, delivery_id = excluded.delivery_id,
                created_at = excluded.created_at),
        counted AS (SELECT message_id, count(*) AS n FROM inserted GROUP BY message_id),
        notified AS (SELECT count(pg_notify($21, app)) AS apps FROM (SELECT DISTINCT app FROM inserted) AS woken)
        SELECT message.rowid, coalesce(counted.n, 0), notified.apps
        FROM input LEFT JOIN message ON message.id = input.id LEFT JOIN counted ON counted.message_id = input.id
        CROSS JOIN notified
        ORDER BY input.position
        """

    public func messageExists(id: String) throws -> Bool {
        try connection.queryOne("SELECT 1 FROM messages WHERE id = $1", [.text(id)], row: { _ in true }) ?? false
    }

    public func markCancelled(id: String, now: Int64) throws -> Bool {
        try connection.run(
            "UPDATE messages SET cancelled_at = coalesce(cancelled_at, $1) WHERE id = $2", .integer(now), .text(id)) > 0
    }

    /// `messages_scheduled`, from `now` on: only the messages still waiting are read.
    public func scheduledMessageCounts(now: Int64) throws -> [String: Int] {
        let rows = try connection.query(
            "SELECT app, count(*) FROM messages WHERE send_at > $1 AND cancelled_at IS NULL GROUP BY app",
            [.integer(now)], row: { ($0.string(0), $0.int(1)) })
        return Dictionary(rows, uniquingKeysWith: +)
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
