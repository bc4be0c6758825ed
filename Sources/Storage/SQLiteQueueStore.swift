import CSQLite
import Queue
import Support

/// SQLite's translation of the queue's operations (`Queue.Store`), beside PostgreSQL's `PGQueueStore`: one statement
/// each, or a few, on SPEC §4's tables, deciding nothing. The rules that combine them are Queue's
/// (`QueueStore+Claim.swift`, `QueueStore+Outcomes.swift`, `Store+Ingest.swift`, `Store+DeadLetters.swift`,
/// `Store+Retention.swift`, `Store+Status.swift`).
///
/// Like the connection it wraps, a store is used by one thread at a time: the writer's thread (`DatabaseWriter`),
/// a reader's (`DatabaseReaders`), or a command's.
///
///     let store = SQLiteQueueStore(connection: try Connection(path: "herald.db"))
///     let accepted = try store.transaction { try store.insertMessage(message, now: Clock.nowMillis()) }
public final class SQLiteQueueStore {
    public let connection: Connection
    /// How long after acceptance a `time_to_live: 0` message may still be sent (`serve --ttl-zero-window`).
    public var ttlZeroWindowMillis: Int64 = defaultTTLZeroWindowMillis
    /// Apps this store has already made sure have an `apps` row (rows are never deleted).
    var ensuredApps: Set<String> = []

    /// Wraps `connection`, whose database `Migrator` has brought up to date.
    public init(connection: Connection) {
        self.connection = connection
    }
}

// MARK: - QueueStore

extension SQLiteQueueStore: QueueStore {
    // MARK: - Claim

    /// A `SELECT` on the `deliveries_ready` partial index (`app, priority_rank, next_attempt_at`), then one
    /// `UPDATE` of the rows it found by rowid. (`UPDATE … WHERE id IN (SELECT … LIMIT) RETURNING …` did the same
    /// with an ephemeral table of the ids and another of the rows returned: ~2k more instructions per row.) Both
    /// run in the writer's transaction, so nothing can take the rows in between.
    public func leaseReady(
        app: String, lane: PriorityLane, limit: Int, owner: String, leaseMillis: Int64, now: Int64
    ) throws -> [ClaimedDelivery] {
        var previous: String?
        let ready = try connection.query(
            """
            SELECT id, message_id, token, attempts FROM deliveries
            WHERE app = ? AND priority_rank = ? AND state = 'queued' AND next_attempt_at <= ?
            ORDER BY next_attempt_at LIMIT ?
            """,
            [.text(app), .integer(lane.rawValue), .integer(now), .integer(Int64(limit))]
        ) { row in
            let message = row.string(1, reusing: previous)
            previous = message
            return ClaimedDelivery(id: row.int64(0), messageID: message, token: row.string(2), attempts: row.int(3))
        }
        guard !ready.isEmpty else { return [] }
        let rows = RowSet(ready.map(\.id))
        let leased = try connection.run(
            """
            UPDATE deliveries SET state = 'inflight', lease_owner = ?, lease_expires_at = ?, updated_at = ?
            WHERE \(rows.condition) AND state = 'queued'
            """, [.text(owner), .integer(now + leaseMillis), .integer(now)] + rows.values)
        guard leased == ready.count else {
            throw SQLiteError(
                code: SQLITE_INTERNAL, message: "leased \(leased) of the \(ready.count) ready deliveries just read")
        }
        return ready
    }

    public func claimedMessage(id: String) throws -> ClaimedMessage? {
        try connection.queryOne(
            """
            SELECT id, app, payload, target_kind, ttl_seconds, dry_run, expires_at, collapse_key, format, token_field
            FROM messages WHERE id = ?
            """,
            [.text(id)], row: Self.claimedMessage)
    }

    /// One statement for a whole claim's messages: with one message per token, a look-up each was a statement
    /// per send. A join from the list rather than `id IN (SELECT value FROM json_each(?))`, which first copies the
    /// list into a temporary b-tree: 3–5k instructions less per send in `Benchmarks/v1.sh` (`ids` holds each id
    /// once).
    public func claimedMessages(ids: [String]) throws -> [String: ClaimedMessage] {
        guard !ids.isEmpty else { return [:] }
        let list = JSON.array(ids.map(JSON.string)).serialized()
        let found = try connection.query(
            """
            SELECT m.id, m.app, m.payload, m.target_kind, m.ttl_seconds, m.dry_run, m.expires_at, m.collapse_key,
                m.format, m.token_field
            FROM json_each(?) AS wanted JOIN messages AS m ON m.id = wanted.value
            """,
            [.text(list)], row: Self.claimedMessage)
        var messages: [String: ClaimedMessage] = [:]
        messages.reserveCapacity(found.count)
        for message in found { messages[message.id] = message }
        return messages
    }

    private static func claimedMessage(_ row: Statement) -> ClaimedMessage {
        ClaimedMessage(
            id: row.string(0), app: row.string(1), payload: row.string(2),
            targetKind: TargetKind(stored: row.string(3)),
            ttlSeconds: row.int(4), dryRun: row.int(5) != 0, expiresAt: row.int64(6),
            collapseKey: row.optionalString(7), format: MessageFormat(rawValue: row.string(8)) ?? .legacy,
            tokenField: TokenField(rawValue: row.string(9)) ?? .token)
    }

    public func nextDue(app: String, lane: PriorityLane) throws -> Int64? {
        try connection.queryOne(
            """
            SELECT next_attempt_at FROM deliveries
            WHERE app = ? AND priority_rank = ? AND state = 'queued' ORDER BY next_attempt_at LIMIT 1
            """, [.text(app), .integer(lane.rawValue)]) { $0.int64(0) }
    }

    public func collapseHead(app: String, collapseKey: String, token: String) throws -> CollapseHead? {
        try connection.queryOne(
            """
            SELECT h.message_id, d.state, m.expires_at, m.send_at
            FROM collapse_heads AS h
            LEFT JOIN deliveries AS d ON d.id = h.delivery_id
            LEFT JOIN messages AS m ON m.id = h.message_id
            WHERE h.app = ? AND h.collapse_key = ? AND h.token = ?
            """, [.text(app), .text(collapseKey), .text(token)]
        ) {
            CollapseHead(
                messageID: $0.string(0), state: $0.optionalString(1).flatMap(DeliveryState.init(rawValue:)),
                expiresAt: $0.optionalInt64(2), sendAt: $0.optionalInt64(3))
        }
    }

    public func hasTombstones() throws -> Bool {
        try connection.queryOne("SELECT EXISTS (SELECT 1 FROM token_tombstones)") { $0.int(0) != 0 } ?? false
    }

    public func tombstone(app: String, token: String) throws -> TokenTombstone? {
        try connection.queryOne(
            "SELECT kind, replacement FROM token_tombstones WHERE app = ? AND token = ?", [.text(app), .text(token)]
        ) { row in
            TokenTombstone.Kind(rawValue: row.string(0)).map {
                TokenTombstone(kind: $0, replacement: row.optionalString(1))
            }
        } ?? nil
    }

    public func messageTargets(_ messageID: String, token: String, besides deliveryID: Int64) throws -> Bool {
        try connection.queryOne(
            "SELECT 1 FROM deliveries WHERE message_id = ? AND token = ? AND id != ? LIMIT 1",
            [.text(messageID), .text(token), .integer(deliveryID)]) { _ in true } ?? false
    }

    public func retarget(delivery id: Int64, to token: String, now: Int64) throws {
        try connection.run(
            "UPDATE deliveries SET token = ?, updated_at = ? WHERE id = ?", .text(token), .integer(now), .integer(id))
    }

    // MARK: - Outcomes

    /// Every outcome statement ends so: only while the lease is held, and saying which row it wrote.
    private static let heldLease = """
        WHERE id = ? AND state = 'inflight' AND lease_owner = ?
        RETURNING app, token, message_id
        """

    private static func leasedRow(_ row: Statement) -> LeasedRow {
        LeasedRow(app: row.string(0), token: row.string(1), messageID: row.string(2))
    }

    public func markDelivered(
        _ id: Int64, fcmMessageID: String?, canonicalToken: String?, status: Int?, charge: Int64, lease: HeldLease
    ) throws -> LeasedRow? {
        let row = try connection.queryOne(
            """
            UPDATE deliveries SET state = 'delivered', reason = NULL, attempts = attempts + ?, lease_owner = NULL,
                lease_expires_at = NULL, fcm_message_id = ?, canonical_token = ?, last_status = ?, updated_at = ?
            \(Self.heldLease)
            """,
            [.integer(charge), .optional(fcmMessageID), .optional(canonicalToken), .optional(status.map(Int64.init)),
             .integer(lease.now), .integer(id), .text(lease.owner)],
            row: Self.leasedRow)
        if row != nil { try recordOutcomes(of: [id]) }
        return row
    }

    /// One `UPDATE` per status in the batch (all 200 in practice), or per status and provider message id when the
    /// rows share a few (`sharedNameStatements`): HMS names a whole request of up to 1000 tokens with one
    /// `requestId`, and a batch holds the answers of a few requests. Rows under one name go in as one JSON array of
    /// ids and the name as one value, `UPDATE … WHERE id IN (SELECT value FROM json_each(?))`. Rows with names of
    /// their own (FCM's per-token message ids) go in as one JSON object, `{"<id>": "<FCM message id>" | null, …}`,
    /// joined with `UPDATE … FROM json_each`: `json_each` hands over each key and value as plain SQL values, where an
    /// array of `[id, name, status]` triples cost three `->>` parses per row (~6k instructions per row more); the
    /// join itself costs ~8k instructions a row more than the array, which is why the array is taken whenever it
    /// can be. The statements return nothing (a `RETURNING` row costs ~2.5k instructions): when one wrote as many
    /// rows as it was given, it wrote them all; when fewer (leases lost meanwhile), the rows now holding this very
    /// answer are the ones it wrote. Then the feed entries of the rows written.
    public func markDelivered(
        _ rows: [(id: Int64, fcmMessageID: String?, status: Int?)], charge: Int64, lease: HeldLease
    ) throws -> [Int64] {
        var byStatus: [Int?: [(id: Int64, fcmMessageID: String?, status: Int?)]] = [:]
        for row in rows { byStatus[row.status, default: []].append(row) }
        var written: [Int64] = []
        written.reserveCapacity(rows.count)
        for (status, rows) in byStatus {
            let status = SQLValue.optional(status.map(Int64.init))
            var byName: [String?: [Int64]] = [:]
            for row in rows {
                byName[row.fcmMessageID, default: []].append(row.id)
                if byName.count > Self.sharedNameStatements { break }
            }
            if byName.count > Self.sharedNameStatements {
                let ids = try markDelivered(named: rows, status: status, charge: charge, lease: lease)
                try recordOutcomes(of: ids)
                written += ids
            } else {
                for (name, ids) in byName {
                    let ids = try markDelivered(ids, fcmMessageID: name, status: status, charge: charge, lease: lease)
                    try recordOutcomes(of: ids)
                    written += ids
                }
            }
        }
        return written
    }

    /// The most provider message ids a batch of one status may share and still be written one statement per id.
    static let sharedNameStatements = 8

    /// `rows` delivered under one provider message id (or none), as one `RowSet`.
    private func markDelivered(
        _ rows: [Int64], fcmMessageID: String?, status: SQLValue, charge: Int64, lease: HeldLease
    ) throws -> [Int64] {
        let name = SQLValue.optional(fcmMessageID)
        let set = RowSet(rows)
        let count = try connection.run(
            """
            UPDATE deliveries SET state = 'delivered', reason = NULL, attempts = attempts + ?, lease_owner = NULL,
                lease_expires_at = NULL, fcm_message_id = ?, canonical_token = NULL, last_status = ?, updated_at = ?
            WHERE \(set.condition) AND state = 'inflight' AND lease_owner = ?
            """, [.integer(charge), name, status, .integer(lease.now)] + set.values + [.text(lease.owner)])
        if count == rows.count { return rows }
        return try connection.query(
            """
            SELECT id FROM deliveries
            WHERE \(set.condition) AND state = 'delivered' AND lease_owner IS NULL
                AND updated_at = ? AND last_status IS ? AND fcm_message_id IS ?
            """,
            set.values + [.integer(lease.now), status, name]) { $0.int64(0) }
    }

    /// `rows` delivered under their own provider message ids: one JSON object of id → name.
    private func markDelivered(
        named rows: [(id: Int64, fcmMessageID: String?, status: Int?)], status: SQLValue, charge: Int64,
        lease: HeldLease
    ) throws -> [Int64] {
        var object: [UInt8] = [UInt8(ascii: "{")]
        object.reserveCapacity(rows.count * 64)
        for (index, row) in rows.enumerated() {
            if index > 0 { object.append(UInt8(ascii: ",")) }
            object.append(UInt8(ascii: "\""))
            object += String(row.id).utf8
            object += "\":".utf8
            if let name = row.fcmMessageID { appendJSONString(name, to: &object) } else { object += "null".utf8 }
        }
        object.append(UInt8(ascii: "}"))
        let outcomes = SQLValue.text(String(decoding: object, as: UTF8.self))
        let count = try connection.run(
            """
            UPDATE deliveries SET state = 'delivered', reason = NULL, attempts = attempts + ?, lease_owner = NULL,
                lease_expires_at = NULL, fcm_message_id = outcome.value, canonical_token = NULL,
                last_status = ?, updated_at = ?
            FROM json_each(?) AS outcome
            WHERE deliveries.id = CAST(outcome.key AS INTEGER) AND deliveries.state = 'inflight'
                AND deliveries.lease_owner = ?
            """,
            [.integer(charge), status, .integer(lease.now), outcomes, .text(lease.owner)])
        if count == rows.count { return rows.map(\.id) }
        return try connection.query(
            """
            SELECT deliveries.id FROM json_each(?) AS outcome
            JOIN deliveries ON deliveries.id = CAST(outcome.key AS INTEGER)
            WHERE deliveries.state = 'delivered' AND deliveries.lease_owner IS NULL
                AND deliveries.updated_at = ? AND deliveries.last_status IS ?
                AND deliveries.fcm_message_id IS outcome.value
            """,
            [outcomes, .integer(lease.now), status]) { $0.int64(0) }
    }

    public func markEnded(
        _ id: Int64, state: DeliveryState, reason: DeliveryReason, status: Int?, charge: Int64, lease: HeldLease
    ) throws -> LeasedRow? {
        let row = try connection.queryOne(
            """
            UPDATE deliveries SET state = ?, reason = ?, attempts = attempts + ?, lease_owner = NULL,
                lease_expires_at = NULL, last_status = ?, updated_at = ?
            \(Self.heldLease)
            """,
            [.text(state.rawValue), .text(reason.rawValue), .integer(charge), .optional(status.map(Int64.init)),
             .integer(lease.now), .integer(id), .text(lease.owner)],
            row: Self.leasedRow)
        if row != nil, state.isTerminal { try recordOutcomes(of: [id]) }
        return row
    }

    public func markRetry(
        _ id: Int64, at: Int64, reason: DeliveryReason, status: Int?, charge: Int64, lease: HeldLease
    ) throws -> LeasedRow? {
        try connection.queryOne(
            """
            UPDATE deliveries SET state = 'queued', reason = ?, attempts = attempts + ?, next_attempt_at = ?,
                lease_owner = NULL, lease_expires_at = NULL, last_status = ?, updated_at = ?
            \(Self.heldLease)
            """,
            [.text(reason.rawValue), .integer(charge), .integer(at), .optional(status.map(Int64.init)),
             .integer(lease.now), .integer(id), .text(lease.owner)],
            row: Self.leasedRow)
    }

    public func markReleased(_ id: Int64, lease: HeldLease) throws -> LeasedRow? {
        try connection.queryOne(
            """
            UPDATE deliveries SET state = 'queued', lease_owner = NULL, lease_expires_at = NULL, updated_at = ?
            \(Self.heldLease)
            """,
            [.integer(lease.now), .integer(id), .text(lease.owner)], row: Self.leasedRow)
    }

    public func markDeferred(
        _ id: Int64, until: Int64, reason: DeliveryReason?, status: Int?, lease: HeldLease
    ) throws -> LeasedRow? {
        try connection.queryOne(
            """
            UPDATE deliveries SET state = 'queued', next_attempt_at = ?, reason = coalesce(?, reason),
                last_status = coalesce(?, last_status), lease_owner = NULL, lease_expires_at = NULL, updated_at = ?
            \(Self.heldLease)
            """,
            [.integer(until), .optional(reason?.rawValue), .optional(status.map(Int64.init)), .integer(lease.now),
             .integer(id), .text(lease.owner)],
            row: Self.leasedRow)
    }

    public func endQueuedDeliveries(
        of messageID: String, app: String?, state: DeliveryState, reason: DeliveryReason, now: Int64
    ) throws -> Int {
        let ended = try connection.query(
            """
            UPDATE deliveries SET state = ?1, reason = ?2, updated_at = ?3
            WHERE message_id = ?4 AND (?5 IS NULL OR app = ?5) AND state = 'queued'
            RETURNING id
            """,
            [.text(state.rawValue), .text(reason.rawValue), .integer(now), .text(messageID), .optional(app)]
        ) { $0.int64(0) }
        if state.isTerminal { try recordOutcomes(of: ended) }
        return ended.count
    }

    /// Which rows a statement takes, given their ids: `id BETWEEN ? AND ?` when the ids are consecutive and
    /// ascending (a multicast's claim or request), a walk along the table; else `id IN (SELECT value FROM
    /// json_each(?))`, which first builds a temporary index of the list and then looks each id up (~3k instructions
    /// a row more in `Benchmarks/hms.sh`'s claims and answers of 1000 consecutive rows).
    struct RowSet {
        /// The condition, with its parameters as `values` (in this order).
        let condition: String
        let values: [SQLValue]
        /// The ids' range, when they make one (`[7, 8, 9]`; not duplicates, gaps or another order).
        let range: ClosedRange<Int64>?

        init(_ ids: [Int64]) {
            range = Self.consecutive(ids)
            if let range {
                condition = "id BETWEEN ? AND ?"
                values = [.integer(range.lowerBound), .integer(range.upperBound)]
            } else {
                condition = "id IN (SELECT value FROM json_each(?))"
                values = [.idList(ids)]
            }
        }

        private static func consecutive(_ ids: [Int64]) -> ClosedRange<Int64>? {
            guard let first = ids.first, first <= Int64.max - Int64(ids.count - 1) else { return nil }
            for (offset, id) in ids.enumerated() where id != first + Int64(offset) { return nil }
            return first...(first + Int64(ids.count - 1))
        }
    }

    // MARK: - Leases

    /// The ids go in as one JSON array (`json_each`), so any number of them is one prepared statement.
    @discardableResult
    public func renewLeases(_ ids: [Int64], owner: String, leaseMillis: Int64, now: Int64) throws -> Int {
        guard !ids.isEmpty else { return 0 }
        return try connection.run(
            """
            UPDATE deliveries SET lease_expires_at = ?
            WHERE id IN (SELECT value FROM json_each(?)) AND state = 'inflight' AND lease_owner = ?
            """, .integer(now + leaseMillis), .idList(ids), .text(owner))
    }

    @discardableResult
    public func rescueExpiredLeases(now: Int64) throws -> Int {
        let expired = try connection.query(
            """
            SELECT id, lease_owner, lease_expires_at FROM deliveries
            WHERE state = 'inflight' AND lease_expires_at <= ?
            """,
            [.integer(now)]
        ) { (id: $0.int64(0), owner: $0.string(1), expiresAt: $0.int64(2)) }
        var rescued = 0
        for lease in expired {
            rescued += try connection.run(
                """
                UPDATE deliveries SET state = 'queued', lease_owner = NULL, lease_expires_at = NULL, updated_at = ?
                WHERE id = ? AND state = 'inflight' AND lease_owner = ? AND lease_expires_at = ?
                """, .integer(now), .integer(lease.id), .text(lease.owner), .integer(lease.expiresAt))
        }
        return rescued
    }

    /// At start-up, with the database locked to this process (`<db>.lock`), every other lease belongs to a process
    /// that is gone.
    @discardableResult
    public func releaseForeignLeases(owner: String, now: Int64) throws -> Int {
        try connection.run(
            """
            UPDATE deliveries SET state = 'queued', lease_owner = NULL, lease_expires_at = NULL, updated_at = ?
            WHERE state = 'inflight' AND lease_owner IS NOT ?
            """, .integer(now), .text(owner))
    }

    // MARK: - Token registry

    public func unregister(_ token: String, app: String, unchangedSince: Int64?) throws -> Bool {
        try connection.run(
            "DELETE FROM tokens WHERE token = ? AND app = ? AND updated_at <= ?", .text(token), .text(app),
            .integer(unchangedSince ?? Int64.max)) > 0
    }

    public func registeredApp(of token: String) throws -> String? {
        try connection.queryOne("SELECT app FROM tokens WHERE token = ?", [.text(token)]) { $0.string(0) }
    }

    public func renameRegistration(_ old: String, to new: String, now: Int64) throws -> Bool {
        try connection.run(
            "UPDATE tokens SET token = ?, updated_at = ? WHERE token = ?", .text(new), .integer(now), .text(old)) > 0
    }

    public func deleteRegistration(_ token: String) throws -> Bool {
        try connection.run("DELETE FROM tokens WHERE token = ?", .text(token)) > 0
    }

    public func record(_ event: TokenEvent, now: Int64) throws {
        let (kind, replacement) = (event.tombstone.kind.rawValue, event.tombstone.replacement)
        try connection.run(
            """
            INSERT INTO token_events (at, app, token, kind, replacement, reason, message_id)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, .integer(now), .text(event.app), .text(event.token), .text(kind), .optional(replacement),
            .text(event.reason.rawValue), .text(event.messageID))
        try connection.run(
            """
            INSERT INTO token_tombstones (app, token, kind, replacement, at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (app, token) DO UPDATE SET kind = excluded.kind, replacement = excluded.replacement,
                at = excluded.at
            """, .text(event.app), .text(event.token), .text(kind), .optional(replacement), .integer(now))
    }
}

extension SQLiteQueueStore: Store {
    public var location: String { connection.path }

    public func transaction<T>(_ body: () throws -> T) throws -> T { try connection.transaction(body) }

    public func snapshot<T>(_ body: () throws -> T) throws -> T { try connection.snapshot(body) }
}
