import Queue
import Support

/// PostgreSQL's translation of the queue's operations (`Queue.Store`): one statement each, prepared once per
/// session with bound parameters, deciding nothing. The rules that combine them (`claim`, `apply`, `insertMessage`,
/// `purgeDeadLetters`, `pruneEmptyMessages`, `appStatuses`) are Queue's, the same as on SQLite
/// (`SQLiteQueueStore`).
///
/// Several Heralds may share one database: the claim leases with `FOR UPDATE SKIP LOCKED`, so two instances never
/// lease the same row, and every outcome is guarded on the lease still being held, which PostgreSQL re-checks on
/// the newest row version when another transaction changed the row meanwhile (READ COMMITTED).
///
/// Like the connection it wraps, a store is used by one thread at a time, never from Swift concurrency's
/// cooperative pool (libpq blocks). The queue's rules assume one transaction per `claim` or `apply` call: run
/// them through `write`.
///
///     let store = PGQueueStore(connection: try PGConnection(url: url))
///     let claimed = try store.write { try $0.claim(app: "default", limit: 100, owner: id, leaseMillis: 60_000,
///                                                  now: Clock.nowMillis()) }
public final class PGQueueStore {
    public let connection: PGConnection
    /// How long a `time_to_live: 0` message may wait for its one attempt (SQLite's `SQLiteQueueStore` has the same).
    public var ttlZeroWindowMillis: Int64 = defaultTTLZeroWindowMillis
    /// The clock leases are stamped, renewed and found expired on.
    public var leaseClock = LeaseClock.database
    /// Apps known to have an `apps` row, so ingest inserts it once per store rather than once per message.
    private var ensuredApps: Set<String> = []

    /// Wraps `connection`, whose database `PGMigrator` has brought up to date.
    public init(connection: PGConnection) {
        self.connection = connection
    }

    /// Runs `body` in one transaction (READ COMMITTED): committed when it returns, rolled back when it throws.
    @discardableResult
    public func write<T>(_ body: (PGQueueStore) throws -> T) throws -> T {
        do {
            return try connection.transaction { try body(self) }
        } catch {
            forgetEnsuredApps()
            throw error
        }
    }

    /// Whose clock leases run on.
    public enum LeaseClock: Sendable {
        /// PostgreSQL's (`statement_timestamp()`): instances sharing the queue agree on when a lease runs out
        /// whatever their own clocks say. NTP keeps clocks within milliseconds, but a VM restored from a snapshot
        /// or a host without it may be minutes off, and an instance ahead would take back live leases: duplicates.
        case database
        /// The `now` each call is given, as on SQLite: for tests that move time forward by hand.
        case caller
    }

    /// The lease clock as a statement parameter: NULL stands for the database's.
    private func leaseTime(_ now: Int64) -> PGValue {
        leaseClock == .caller ? .integer(now) : .null
    }

    /// Forgets which apps have an `apps` row. Call after any rollback, of a whole transaction or to a savepoint:
    /// a row inserted by the undone writes is gone again, and the next insert for its app must create it anew.
    func forgetEnsuredApps() {
        ensuredApps.removeAll()
    }
}

// MARK: - QueueStore

extension PGQueueStore: QueueStore {
    public func appState(_ name: String) throws -> AppState? {
        try connection.queryOne(
            "SELECT name, paused, pause_reason, gate_until FROM apps WHERE name = $1", [.text(name)], row: Self.app)
    }

    /// One `UPDATE … RETURNING` whose sub-select walks the `deliveries_ready` partial index (`app, priority_rank,
    /// next_attempt_at`) in order and skips rows another transaction holds, so concurrent claims (another Herald
    /// on the same queue) take disjoint rows instead of waiting for each other (`PGLeaseSQL.leaseReady`).
    public func leaseReady(
        app: String, lane: PriorityLane, limit: Int, owner: String, leaseMillis: Int64, now: Int64
    ) throws -> [ClaimedDelivery] {
        let claimed = try connection.query(
            PGLeaseSQL.leaseReady,
            [.text(owner), .integer(leaseMillis), .integer(now), .text(app), .integer(lane.rawValue),
             .integer(Int64(limit)), leaseTime(now)]
        ) { row in
            (next: row.int64(4),
             delivery: ClaimedDelivery(id: row.int64(0), messageID: row.string(1), token: row.string(2),
                                       attempts: row.int(3)))
        }
        // RETURNING gives no order guarantee: restore the claim's.
        return claimed.sorted { ($0.next, $0.delivery.id) < ($1.next, $1.delivery.id) }.map(\.delivery)
    }

    public func claimedMessage(id: String) throws -> ClaimedMessage? {
        try claimedMessages(ids: [id])[id]
    }

    /// One statement for a claim's messages: a look-up each would be a round trip each, on the writer's connection.
    public func claimedMessages(ids: [String]) throws -> [String: ClaimedMessage] {
        let found = try connection.query(
            """
            SELECT id, app, payload, target_kind, ttl_seconds, dry_run, expires_at, collapse_key, format, token_field
            FROM messages WHERE id = ANY($1::text[])
            """,
            [.array(ids)]
        ) {
            ClaimedMessage(
                id: $0.string(0), app: $0.string(1), payload: $0.string(2),
                targetKind: TargetKind(stored: $0.string(3)),
                ttlSeconds: $0.int(4), dryRun: $0.int(5) != 0, expiresAt: $0.int64(6),
                collapseKey: $0.optionalString(7), format: MessageFormat(rawValue: $0.string(8)) ?? .legacy,
                tokenField: TokenField(rawValue: $0.string(9)) ?? .token)
        }
        return Dictionary(found.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    public func nextDue(app: String, lane: PriorityLane) throws -> Int64? {
        try connection.queryOne(
            """
            SELECT next_attempt_at FROM deliveries
            WHERE app = $1 AND priority_rank = $2 AND state = 'queued' ORDER BY next_attempt_at LIMIT 1
            """, [.text(app), .integer(lane.rawValue)]) { $0.int64(0) }
    }

    public func collapseHead(app: String, collapseKey: String, token: String) throws -> CollapseHead? {
        try connection.queryOne(
            """
            SELECT h.message_id, d.state, m.expires_at, m.send_at
            FROM collapse_heads AS h
            LEFT JOIN deliveries AS d ON d.id = h.delivery_id
            LEFT JOIN messages AS m ON m.id = h.message_id
            WHERE h.app = $1 AND h.collapse_key = $2 AND h.token = $3
            """, [.text(app), .text(collapseKey), .text(token)]
        ) {
            CollapseHead(
                messageID: $0.string(0), state: $0.optionalString(1).flatMap(DeliveryState.init(rawValue:)),
                expiresAt: $0.optionalInt64(2), sendAt: $0.optionalInt64(3))
        }
    }

    public func hasTombstones() throws -> Bool {
        try connection.queryOne("SELECT EXISTS (SELECT 1 FROM token_tombstones)") { $0.bool(0) } ?? false
    }

    public func tombstone(app: String, token: String) throws -> TokenTombstone? {
        try connection.queryOne(
            "SELECT kind, replacement FROM token_tombstones WHERE app = $1 AND token = $2", [.text(app), .text(token)]
        ) { row in
            TokenTombstone.Kind(rawValue: row.string(0)).map {
                TokenTombstone(kind: $0, replacement: row.optionalString(1))
            }
        } ?? nil
    }

    public func messageTargets(_ messageID: String, token: String, besides deliveryID: Int64) throws -> Bool {
        try connection.queryOne(
            "SELECT 1 FROM deliveries WHERE message_id = $1 AND token = $2 AND id <> $3 LIMIT 1",
            [.text(messageID), .text(token), .integer(deliveryID)]) { _ in true } ?? false
    }

    public func retarget(delivery id: Int64, to token: String, now: Int64) throws {
        try connection.run(
            "UPDATE deliveries SET token = $1, updated_at = $2 WHERE id = $3", .text(token), .integer(now),
            .integer(id))
    }

    // MARK: Outcomes
    //
    // Every outcome statement (`PGLeaseSQL`) finds its row by primary key, ends with the held-lease guard (`state
    // is 'inflight' AND lease_owner = …`) and says which row it wrote.

    public func markDelivered(
        _ id: Int64, fcmMessageID: String?, canonicalToken: String?, status: Int?, charge: Int64, lease: HeldLease
    ) throws -> LeasedRow? {
        try connection.queryOne(
            PGLeaseSQL.markDelivered,
            [.integer(charge), .optional(fcmMessageID), .optional(canonicalToken), .optional(status.map(Int64.init)),
             .integer(lease.now), .integer(id), .text(lease.owner)],
            row: Self.leasedRow)
    }

    /// One `UPDATE … FROM unnest(…)` for the batch: three arrays, one primary-key look-up per element. Returns
    /// the ids written in the order given.
    public func markDelivered(
        _ rows: [(id: Int64, fcmMessageID: String?, status: Int?)], charge: Int64, lease: HeldLease
    ) throws -> [Int64] {
        guard !rows.isEmpty else { return [] }
        let written = Set(try connection.query(
            PGLeaseSQL.markManyDelivered,
            [.integer(charge), .integer(lease.now), .array(rows.map(\.id)), .array(rows.map(\.fcmMessageID)),
             .array(rows.map { $0.status.map(Int64.init) }), .text(lease.owner)]) { $0.int64(0) })
        return rows.map(\.id).filter { written.contains($0) }
    }

    public func markEnded(
        _ id: Int64, state: DeliveryState, reason: DeliveryReason, status: Int?, charge: Int64, lease: HeldLease
    ) throws -> LeasedRow? {
        try connection.queryOne(
            PGLeaseSQL.markEnded,
            [.text(state.rawValue), .text(reason.rawValue), .integer(charge), .optional(status.map(Int64.init)),
             .integer(lease.now), .integer(id), .text(lease.owner)],
            row: Self.leasedRow)
    }

    public func markRetry(
        _ id: Int64, at: Int64, reason: DeliveryReason, status: Int?, charge: Int64, lease: HeldLease
    ) throws -> LeasedRow? {
        try connection.queryOne(
            PGLeaseSQL.markRetry,
            [.text(reason.rawValue), .integer(charge), .integer(at), .optional(status.map(Int64.init)),
             .integer(lease.now), .integer(id), .text(lease.owner)],
            row: Self.leasedRow)
    }

    public func markReleased(_ id: Int64, lease: HeldLease) throws -> LeasedRow? {
        try connection.queryOne(
            PGLeaseSQL.markReleased,
            [.integer(lease.now), .integer(id), .text(lease.owner)], row: Self.leasedRow)
    }

    public func markDeferred(
        _ id: Int64, until: Int64, reason: DeliveryReason?, status: Int?, lease: HeldLease
    ) throws -> LeasedRow? {
        try connection.queryOne(
            PGLeaseSQL.markDeferred,
            [.integer(until), .optional(reason?.rawValue), .optional(status.map(Int64.init)), .integer(lease.now),
             .integer(id), .text(lease.owner)],
            row: Self.leasedRow)
    }

    public func endQueuedDeliveries(
        of messageID: String, app: String?, state: DeliveryState, reason: DeliveryReason, now: Int64
    ) throws -> Int {
        try connection.run(
            """
            UPDATE deliveries SET state = $1, reason = $2, updated_at = $3
            WHERE message_id = $4 AND ($5::text IS NULL OR app = $5) AND state = 'queued'
            """,
            .text(state.rawValue), .text(reason.rawValue), .integer(now), .text(messageID), .optional(app))
    }

    // MARK: Leases

    /// The ids go in as one `bigint[]`, so any number of them is one prepared statement.
    @discardableResult
    public func renewLeases(_ ids: [Int64], owner: String, leaseMillis: Int64, now: Int64) throws -> Int {
        guard !ids.isEmpty else { return 0 }
        return try connection.run(
            PGLeaseSQL.renewLeases, .integer(leaseMillis), .array(ids), .text(owner), leaseTime(now))
    }

    /// One statement (SQLite reads the leases first, then updates each under the lease it read): when an owner
    /// renews or answers a row meanwhile, PostgreSQL waits for that transaction and re-checks the condition on the
    /// row's newest version, so a lease renewed in time, or a row already finished, is left alone.
    @discardableResult
    public func rescueExpiredLeases(now: Int64) throws -> Int {
        try connection.run(PGLeaseSQL.rescueExpiredLeases, .integer(now), leaseTime(now))
    }

    /// Only for a database this process alone uses: where several Heralds share the queue, the other owners'
    /// leases are live, and an instance that died has its leases taken back by `rescueExpiredLeases` once they
    /// expire.
    @discardableResult
    public func releaseForeignLeases(owner: String, now: Int64) throws -> Int {
        try connection.run(
            """
            UPDATE deliveries SET state = 'queued', lease_owner = NULL, lease_expires_at = NULL, updated_at = $1
            WHERE state = 'inflight' AND lease_owner IS DISTINCT FROM $2
            """, .integer(now), .text(owner))
    }

    // MARK: Token registry

    public func unregister(_ token: String, app: String, unchangedSince: Int64?) throws -> Bool {
        try connection.run(
            "DELETE FROM tokens WHERE token = $1 AND app = $2 AND updated_at <= $3", .text(token), .text(app),
            .integer(unchangedSince ?? Int64.max)) > 0
    }

    public func registeredApp(of token: String) throws -> String? {
        try connection.queryOne("SELECT app FROM tokens WHERE token = $1", [.text(token)]) { $0.string(0) }
    }

    public func renameRegistration(_ old: String, to new: String, now: Int64) throws -> Bool {
        try connection.run(
            "UPDATE tokens SET token = $1, updated_at = $2 WHERE token = $3", .text(new), .integer(now), .text(old))
            > 0
    }

    public func deleteRegistration(_ token: String) throws -> Bool {
        try connection.run("DELETE FROM tokens WHERE token = $1", .text(token)) > 0
    }

    /// The event and the tombstone in one statement (a data-modifying `WITH`), one round trip.
    public func record(_ event: TokenEvent, now: Int64) throws {
        try connection.run(
            """
            WITH event AS (
                INSERT INTO token_events (at, app, token, kind, replacement, reason, message_id)
                VALUES ($1, $2, $3, $4, $5, $6, $7))
            INSERT INTO token_tombstones (app, token, kind, replacement, at) VALUES ($2, $3, $4, $5, $1)
            ON CONFLICT (app, token) DO UPDATE SET kind = excluded.kind, replacement = excluded.replacement,
                at = excluded.at
            """,
            .integer(now), .text(event.app), .text(event.token), .text(event.tombstone.kind.rawValue),
            .optional(event.tombstone.replacement), .text(event.reason.rawValue), .text(event.messageID))
    }

    // MARK: Rows

    private static func app(_ row: PGRow) -> AppState {
        AppState(name: row.string(0), paused: row.int(1) != 0, pauseReason: row.optionalString(2),
                 gateUntil: row.int64(3))
    }

    private static func leasedRow(_ row: PGRow) -> LeasedRow {
        LeasedRow(app: row.string(0), token: row.string(1), messageID: row.string(2))
    }
}

// MARK: - Apps

extension PGQueueStore {
    /// Gives `name` an `apps` row if it has none, once per store rather than once per message.
    public func ensureApp(_ name: String) throws {
        guard !ensuredApps.contains(name) else { return }
        try connection.run("INSERT INTO apps (name) VALUES ($1) ON CONFLICT DO NOTHING", .text(name))
        ensuredApps.insert(name)
    }

    public func apps() throws -> [AppState] {
        try connection.query("SELECT name, paused, pause_reason, gate_until FROM apps ORDER BY name", row: Self.app)
    }

    /// Pauses `app`; returns false when it was already paused.
    @discardableResult
    public func pauseApp(_ app: String, reason: String, now: Int64) throws -> Bool {
        try ensureApp(app)
        return try connection.run(
            "UPDATE apps SET paused = 1, pause_reason = $1, paused_at = $2 WHERE name = $3 AND paused = 0",
            .text(reason), .integer(now), .text(app)) > 0
    }

    /// Resumes `app` and opens its gate, and forgets its gated and paused origins; returns false when neither it nor
    /// any of its origins was paused.
    @discardableResult
    public func resumeApp(_ app: String) throws -> Bool {
        let pausedOrigins = try connection.queryOne(
            "SELECT count(*) FROM app_origins WHERE app = $1 AND paused = 1", [.text(app)]) { $0.int(0) } ?? 0
        _ = try connection.run("DELETE FROM app_origins WHERE app = $1", .text(app))
        return try connection.run(
            """
            UPDATE apps SET paused = 0, pause_reason = NULL, paused_at = NULL, gate_until = 0, gate_reason = NULL,
                gated_at = NULL
            WHERE name = $1 AND paused = 1
            """, .text(app)) > 0 || pausedOrigins > 0
    }

    /// Closes the app's gate until `until` for `reason` (never shortens a gate already closed for longer). A gate
    /// still closed at `now` keeps the time it closed; an open one closes at `now`.
    public func closeGate(_ app: String, until: Int64, reason: GateReason, now: Int64) throws {
        try ensureApp(app)
        try connection.run(
            """
            UPDATE apps SET gate_until = $1, gate_reason = $2,
                gated_at = CASE WHEN gate_until <= $3 OR gated_at IS NULL THEN $3 ELSE gated_at END
            WHERE name = $4 AND gate_until < $1
            """,
            .integer(until), .text(reason.rawValue), .integer(now), .text(app))
    }

    // MARK: Origins

    public func closeOriginGate(_ app: String, origin: String, until: Int64, reason: GateReason, now: Int64) throws {
        _ = try connection.run(
            """
            INSERT INTO app_origins AS o (app, origin, gate_until, gate_reason, gated_at) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (app, origin) DO UPDATE SET gate_until = $3, gate_reason = $4,
                gated_at = CASE WHEN o.gate_until <= $5 OR o.gated_at IS NULL THEN $5 ELSE o.gated_at END
            WHERE o.gate_until < $3
            """,
            .text(app), .text(origin), .integer(until), .text(reason.rawValue), .integer(now))
    }

    @discardableResult
    public func pauseOrigin(_ app: String, origin: String, reason: String, now: Int64) throws -> Bool {
        try connection.run(
            """
            INSERT INTO app_origins AS o (app, origin, paused, pause_reason, paused_at) VALUES ($1, $2, 1, $3, $4)
            ON CONFLICT (app, origin) DO UPDATE SET paused = 1, pause_reason = $3, paused_at = $4 WHERE o.paused = 0
            """,
            .text(app), .text(origin), .text(reason), .integer(now)) > 0
    }

    public func originSwitches(app: String?, now: Int64) throws -> [OriginSwitch] {
        try connection.query(
            """
            SELECT app, origin, gate_until, gate_reason, gated_at, paused, pause_reason, paused_at FROM app_origins
            WHERE ($1::text IS NULL OR app = $1) AND (paused = 1 OR gate_until > $2) ORDER BY app, origin
            """,
            [.optional(app), .integer(now)]
        ) { row in
            OriginSwitch(
                app: row.string(0), origin: row.string(1), gateUntil: row.int64(2),
                gateReason: row.optionalString(3).map(GateReason.init(stored:)), gatedAt: row.optionalInt64(4),
                paused: row.int(5) != 0, pauseReason: row.optionalString(6), pausedAt: row.optionalInt64(7))
        }
    }

    @discardableResult
    public func forgetOpenOrigins(now: Int64) throws -> Int {
        try connection.run("DELETE FROM app_origins WHERE paused = 0 AND gate_until <= $1", .integer(now))
    }
}
