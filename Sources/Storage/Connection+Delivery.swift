import Support

/// A delivery leased by the claimer.
public struct ClaimedDelivery: Sendable, Equatable {
    public var id: Int64
    public var messageID: String
    public var token: String
    /// Attempts already charged before this one.
    public var attempts: Int

    public init(id: Int64, messageID: String, token: String, attempts: Int) {
        self.id = id
        self.messageID = messageID
        self.token = token
        self.attempts = attempts
    }
}

/// What the sender needs of a claimed delivery's message.
public struct ClaimedMessage: Sendable, Equatable {
    public var id: String
    public var app: String
    public var payload: String
    public var targetKind: String
    public var ttlSeconds: Int
    public var dryRun: Bool
    public var expiresAt: Int64
    public var collapseKey: String?
    /// The shape of `payload` (SPEC §13): a provider renders legacy and v1 messages differently.
    public var format: MessageFormat
    /// Whether a device delivery's `token` is an FCM token or a Firebase Installation ID.
    public var tokenField: TokenField

    public init(
        id: String, app: String, payload: String, targetKind: String, ttlSeconds: Int, dryRun: Bool, expiresAt: Int64,
        collapseKey: String? = nil, format: MessageFormat = .legacy, tokenField: TokenField = .token
    ) {
        self.collapseKey = collapseKey
        self.format = format
        self.tokenField = tokenField
        self.id = id
        self.app = app
        self.payload = payload
        self.targetKind = targetKind
        self.ttlSeconds = ttlSeconds
        self.dryRun = dryRun
        self.expiresAt = expiresAt
    }
}

public struct ClaimResult: Sendable {
    /// Leased rows to send, oldest of the high-priority lane first.
    public var deliveries: [ClaimedDelivery] = []
    public var messages: [String: ClaimedMessage] = [:]
    /// Rows whose TTL ran out before they could be sent: now `dead`/`Expired`.
    public var expired = 0
    /// Rows that reconciliation settled without a send: a dead token, a duplicate after a canonical id, a
    /// superseded collapse_key. Now `dropped`.
    public var dropped = 0
    /// When the claim was short: the earliest `next_attempt_at` still queued for the app, if any.
    public var nextDueAt: Int64?
    /// The app as stored when the claim ran; a paused or gated app gets nothing.
    public var app: AppState?
}

/// The new state of one leased delivery after its attempt.
public enum DeliveryUpdate: Sendable, Equatable {
    case delivered(id: Int64, fcmMessageID: String?, canonicalToken: String?, status: Int?)
    /// Terminal with nothing to do: `NotRegistered`, `Collapsed`, `Replaced`, `Cancelled`.
    case dropped(id: Int64, reason: String, status: Int?)
    /// A dead letter; the attempt is charged.
    case dead(id: Int64, reason: String, status: Int?)
    /// The message itself is refused (MessageTooBig, InvalidDataKey, …): this delivery and every other still-queued
    /// delivery of the message become dead letters.
    case deadMessage(id: Int64, reason: String, status: Int?)
    /// Back to `queued` at `at`; the attempt is charged.
    case retry(id: Int64, at: Int64, reason: String, status: Int?)
    /// Back to `queued` now without charging an attempt (paused app, shutdown).
    case release(id: Int64)
    /// The message's TTL ran out before it could be sent: `dead`/`Expired`, no attempt charged.
    case expired(id: Int64)

    public var id: Int64 {
        switch self {
        case .delivered(let id, _, _, _), .dropped(let id, _, _), .dead(let id, _, _), .deadMessage(let id, _, _),
            .retry(let id, _, _, _), .release(let id), .expired(let id):
            id
        }
    }
}

extension DeliveryUpdate {
    /// For an update that ends the delivery: its terminal state, reason and status, and whether it charges an
    /// attempt. Only called for `.dropped`, `.dead`, `.deadMessage` and `.expired`.
    fileprivate var ending: (state: String, reason: String, status: Int?, charges: Bool) {
        switch self {
        case .dropped(_, let reason, let status): ("dropped", reason, status, true)
        case .dead(_, let reason, let status), .deadMessage(_, let reason, let status): ("dead", reason, status, true)
        case .expired: ("dead", "Expired", nil, false)
        case .delivered, .retry, .release: preconditionFailure("\(self) does not end a delivery this way")
        }
    }
}

/// What applying a batch of outcomes did.
public struct AppliedOutcomes: Sendable, Equatable {
    /// The deliveries that were still leased and got their new state.
    public var updated: [Int64] = []
    public var tokensDeleted = 0
    public var tokensReplaced = 0
    /// Deliveries that became dead letters, including other deliveries of a refused message.
    public var deadLetters = 0

    public init() {}
}

/// An app's delivery switches as stored in `apps`.
public struct AppState: Sendable, Equatable {
    public var name: String
    public var paused: Bool
    public var pauseReason: String?
    public var gateUntil: Int64
}

extension Connection {
    // MARK: - Claim

    /// Leases up to `limit` ready deliveries of `app` (high priority first, then oldest `next_attempt_at`) with one
    /// `UPDATE … RETURNING` per priority lane. Call inside a write transaction (`BEGIN IMMEDIATE`).
    /// Rows whose message expired are not leased for sending: they become `dead`/`Expired` here.
    public func claim(app: String, limit: Int, owner: String, leaseMillis: Int64, now: Int64) throws -> ClaimResult {
        var result = ClaimResult()
        // The apps row is the source of truth: a `pause` from the CLI holds even before the service has seen it.
        result.app = try appState(app)
        if let state = result.app, state.paused || state.gateUntil > now { return result }
        for rank: Int64 in [0, 1] where result.deliveries.count < limit {
            let claimed = try query(
                """
                UPDATE deliveries SET state = 'inflight', lease_owner = ?, lease_expires_at = ?, updated_at = ?
                WHERE id IN (
                    SELECT id FROM deliveries
                    WHERE app = ? AND priority_rank = ? AND state = 'queued' AND next_attempt_at <= ?
                    ORDER BY next_attempt_at LIMIT ?)
                RETURNING id, message_id, token, attempts
                """,
                [.text(owner), .integer(now + leaseMillis), .integer(now), .text(app), .integer(rank), .integer(now),
                 .integer(Int64(limit - result.deliveries.count))]
            ) { ClaimedDelivery(id: $0.int64(0), messageID: $0.string(1), token: $0.string(2), attempts: $0.int(3)) }
            // RETURNING gives no order guarantee: restore the claim order (ids grow with next_attempt_at for new rows).
            result.deliveries += claimed.sorted { $0.id < $1.id }
        }
        for delivery in result.deliveries where result.messages[delivery.messageID] == nil {
            result.messages[delivery.messageID] = try queryOne(
                """
                SELECT id, app, payload, target_kind, ttl_seconds, dry_run, expires_at, collapse_key, format, token_field
                FROM messages WHERE id = ?
                """,
                [.text(delivery.messageID)]
            ) {
                ClaimedMessage(
                    id: $0.string(0), app: $0.string(1), payload: $0.string(2), targetKind: $0.string(3),
                    ttlSeconds: $0.int(4), dryRun: $0.int(5) != 0, expiresAt: $0.int64(6),
                    collapseKey: $0.optionalString(7), format: MessageFormat(rawValue: $0.string(8)) ?? .legacy,
                    tokenField: TokenField(rawValue: $0.string(9)) ?? .token)
            }
        }
        // Expiry first: a row past its TTL is `Expired` whatever else might have settled it, so trimming the
        // bookkeeping that reconciliation reads (which only ever concerns rows older than the longest TTL) changes
        // no outcome. TTL 0 expires after `ttl_zero_window`.
        let expired = result.deliveries.filter { delivery in
            guard let message = result.messages[delivery.messageID] else { return true }
            return message.expiresAt <= now
        }
        if !expired.isEmpty {
            let ids = Set(expired.map(\.id))
            try apply(expired.map { .expired(id: $0.id) }, owner: owner, now: now)
            result.deliveries.removeAll { ids.contains($0.id) }
            result.expired = expired.count
        }
        try reconcileClaimed(&result, app: app, owner: owner, now: now)
        if result.deliveries.count + result.expired + result.dropped < limit {
            result.nextDueAt = try nextDue(app: app)
        }
        return result
    }

    /// The earliest `next_attempt_at` of the app's queued deliveries (two index probes, one per lane).
    public func nextDue(app: String) throws -> Int64? {
        var earliest: Int64?
        for rank: Int64 in [0, 1] {
            let due = try queryOne(
                """
                SELECT next_attempt_at FROM deliveries
                WHERE app = ? AND priority_rank = ? AND state = 'queued' ORDER BY next_attempt_at LIMIT 1
                """, [.text(app), .integer(rank)]) { $0.int64(0) }
            if let due { earliest = min(earliest ?? due, due) }
        }
        return earliest
    }

    // MARK: - Outcomes

    /// Writes the outcome of each leased delivery, and what it means for the token registry, in the caller's
    /// transaction. A row is only touched while it is still `inflight` under `owner`'s lease, so a late or repeated
    /// answer can never overwrite a row that was rescued or finished meanwhile, and applying the same outcomes
    /// twice changes nothing the second time (no duplicate events, no resurrected tokens).
    @discardableResult
    public func apply(
        _ updates: [DeliveryUpdate], owner: String, now: Int64, chargeAttempt: Bool = true
    ) throws -> AppliedOutcomes {
        let charge: Int64 = chargeAttempt ? 1 : 0
        // Only while the lease is held: owner and an unexpired lease (an expired one may be rescued at any moment).
        let guardClause = """
            WHERE id = ? AND state = 'inflight' AND lease_owner = ? AND lease_expires_at > ?
            RETURNING app, token, message_id
            """
        let lease = "lease_owner = NULL, lease_expires_at = NULL"
        var applied = AppliedOutcomes()
        // The common answer, a plain success, is written for the whole batch by one statement.
        var delivered: [JSON] = []
        for update in updates {
            if case .delivered(let id, let fcmMessageID, nil, let status) = update {
                delivered.append(.array([.int(id), fcmMessageID.map(JSON.string) ?? .null, status.map(JSON.int) ?? .null]))
                continue
            }
            let row: (app: String, token: String, messageID: String)?
            let returning: (Statement) -> (app: String, token: String, messageID: String) = {
                (app: $0.string(0), token: $0.string(1), messageID: $0.string(2))
            }
            switch update {
            case .delivered(let id, let fcmMessageID, let canonicalToken, let status):
                row = try queryOne(
                    """
                    UPDATE deliveries SET state = 'delivered', reason = NULL, attempts = attempts + ?, \(lease),
                        fcm_message_id = ?, canonical_token = ?, last_status = ?, updated_at = ? \(guardClause)
                    """,
                    [.integer(charge), .optional(fcmMessageID), .optional(canonicalToken),
                     .optional(status.map(Int64.init)), .integer(now), .integer(id), .text(owner), .integer(now)],
                    row: returning)
                if let row, let canonicalToken, canonicalToken != row.token {
                    if try replaceToken(row.token, with: canonicalToken, app: row.app, messageID: row.messageID, now: now) {
                        applied.tokensReplaced += 1
                    }
                }
            case .dropped, .dead, .deadMessage, .expired:
                let (state, reason, status, charges) = update.ending
                row = try queryOne(
                    """
                    UPDATE deliveries SET state = ?, reason = ?, attempts = attempts + ?, \(lease), last_status = ?,
                        updated_at = ? \(guardClause)
                    """,
                    [.text(state), .text(reason), .integer(charges ? charge : 0), .optional(status.map(Int64.init)),
                     .integer(now), .integer(update.id), .text(owner), .integer(now)], row: returning)
                guard let row else { break }
                if state == "dead" { applied.deadLetters += 1 }
                if case .dropped(_, "NotRegistered", _) = update {
                    if try forgetToken(row.token, app: row.app, messageID: row.messageID, now: now) {
                        applied.tokensDeleted += 1
                    }
                }
                if case .deadMessage(_, let reason, _) = update {
                    applied.deadLetters += try run(
                        """
                        UPDATE deliveries SET state = 'dead', reason = ?, updated_at = ?
                        WHERE message_id = ? AND state = 'queued'
                        """, .text(reason), .integer(now), .text(row.messageID))
                }
            case .retry(let id, let at, let reason, let status):
                row = try queryOne(
                    """
                    UPDATE deliveries SET state = 'queued', reason = ?, attempts = attempts + ?, next_attempt_at = ?,
                        \(lease), last_status = ?, updated_at = ? \(guardClause)
                    """,
                    [.text(reason), .integer(charge), .integer(at), .optional(status.map(Int64.init)), .integer(now),
                     .integer(id), .text(owner), .integer(now)], row: returning)
            case .release(let id):
                row = try queryOne(
                    "UPDATE deliveries SET state = 'queued', \(lease), updated_at = ? \(guardClause)",
                    [.integer(now), .integer(id), .text(owner), .integer(now)], row: returning)
            }
            if row != nil { applied.updated.append(update.id) }
        }
        if !delivered.isEmpty {
            applied.updated += try query(
                """
                UPDATE deliveries SET state = 'delivered', reason = NULL, attempts = attempts + ?, \(lease),
                    fcm_message_id = outcome.value ->> 1, canonical_token = NULL, last_status = outcome.value ->> 2,
                    updated_at = ?
                FROM json_each(?) AS outcome
                WHERE deliveries.id = outcome.value ->> 0 AND deliveries.state = 'inflight'
                    AND deliveries.lease_owner = ? AND deliveries.lease_expires_at > ?
                RETURNING deliveries.id
                """,
                [.integer(charge), .integer(now), .text(JSON.array(delivered).serialized()), .text(owner),
                 .integer(now)]) { $0.int64(0) }
        }
        return applied
    }

    // MARK: - Token registry reconciliation

    /// Applies what FCM said earlier about the claimed rows' tokens before any of them is sent:
    /// - a token replaced by a canonical id is retargeted to the newest replacement, or dropped as `Replaced`
    ///   where the same message already has a delivery to it;
    /// - a token reported `NotRegistered` (and not registered again since) is dropped as `NotRegistered`;
    /// - a delivery whose message is no longer the newest with its `collapse_key` for that token is dropped as
    ///   `Collapsed`.
    /// Doing this at claim time rather than when FCM answered keeps ingest free of a random-key index on tokens.
    func reconcileClaimed(_ result: inout ClaimResult, app: String, owner: String, now: Int64) throws {
        let anyTombstones = try queryOne("SELECT EXISTS (SELECT 1 FROM token_tombstones)") { $0.int(0) != 0 } ?? false
        var drops: [DeliveryUpdate] = []
        for index in result.deliveries.indices {
            let delivery = result.deliveries[index]
            guard let message = result.messages[delivery.messageID] else { continue }
            if let collapseKey = message.collapseKey,
               try isSuperseded(delivery, app: app, collapseKey: collapseKey, now: now) {
                drops.append(.dropped(id: delivery.id, reason: "Collapsed", status: nil))
                continue
            }
            guard anyTombstones, message.targetKind == "tokens" else { continue }
            var token = delivery.token
            var tombstone = try self.tombstone(app: app, token: token)
            for _ in 0..<8 {  // a chain of replacements, bounded against a cycle
                guard let found = tombstone, found.kind == "replaced", let next = found.replacement, next != token
                else { break }
                token = next
                tombstone = try self.tombstone(app: app, token: token)
            }
            if token != delivery.token {
                let duplicate = try queryOne(
                    "SELECT 1 FROM deliveries WHERE message_id = ? AND token = ? AND id != ? LIMIT 1",
                    [.text(delivery.messageID), .text(token), .integer(delivery.id)]) { _ in true } ?? false
                if duplicate {
                    drops.append(.dropped(id: delivery.id, reason: "Replaced", status: nil))
                    continue
                }
                try run("UPDATE deliveries SET token = ?, updated_at = ? WHERE id = ?",
                        .text(token), .integer(now), .integer(delivery.id))
                result.deliveries[index].token = token
            }
            if tombstone?.kind == "deleted", try self.token(token)?.app != app {
                drops.append(.dropped(id: delivery.id, reason: "NotRegistered", status: nil))
            }
        }
        guard !drops.isEmpty else { return }
        try apply(drops, owner: owner, now: now, chargeAttempt: false)
        let ids = Set(drops.map(\.id))
        result.deliveries.removeAll { ids.contains($0.id) }
        result.dropped = drops.count
    }

    /// Whether a newer message with the same `collapse_key` to the same target will really reach the device: its
    /// delivery is delivered, or still pending and not expired. (A head that ended dead or dropped is no longer in
    /// `collapse_heads`; one whose delivery row is gone was delivered and pruned.)
    private func isSuperseded(_ delivery: ClaimedDelivery, app: String, collapseKey: String, now: Int64) throws -> Bool {
        let head = try queryOne(
            """
            SELECT h.message_id, d.state, m.expires_at
            FROM collapse_heads AS h
            LEFT JOIN deliveries AS d ON d.id = h.delivery_id
            LEFT JOIN messages AS m ON m.id = h.message_id
            WHERE h.app = ? AND h.collapse_key = ? AND h.token = ?
            """, [.text(app), .text(collapseKey), .text(delivery.token)]
        ) { (messageID: $0.string(0), state: $0.optionalString(1), expiresAt: $0.optionalInt64(2)) }
        guard let head, head.messageID > delivery.messageID else { return false }
        switch head.state {
        case "delivered", nil: return true
        case "queued", "inflight": return (head.expiresAt ?? 0) > now
        default: return false
        }
    }

    /// FCM said the token is dead: remove it from the registry and record a `deleted` event. Other queued
    /// deliveries to it are dropped when claimed (`reconcileClaimed`), so it is never sent to again.
    /// Returns whether an event was written.
    func forgetToken(_ token: String, app: String, messageID: String, now: Int64) throws -> Bool {
        let registered = try run("DELETE FROM tokens WHERE token = ? AND app = ?", .text(token), .text(app)) > 0
        // A token the registry never held is still reported once, for backends that keep their own tables.
        guard try registered || self.tombstone(app: app, token: token)?.kind != "deleted" else { return false }
        try recordEvent(app: app, token: token, kind: "deleted", replacement: nil, reason: "NotRegistered",
                        messageID: messageID, now: now)
        return true
    }

    /// FCM named a canonical token: the registry row moves to it keeping its user (or merges into the row the new
    /// token already has) and a `replaced` event records old → new. Queued deliveries to the old token are
    /// retargeted when claimed (`reconcileClaimed`). Returns whether an event was written.
    func replaceToken(_ old: String, with new: String, app: String, messageID: String, now: Int64) throws -> Bool {
        var registryChanged = false
        if let existing = try token(old), existing.app == app {
            if try token(new) != nil {
                registryChanged = try run("DELETE FROM tokens WHERE token = ?", .text(old)) > 0
            } else {
                registryChanged = try run(
                    "UPDATE tokens SET token = ?, updated_at = ? WHERE token = ?", .text(new), .integer(now), .text(old)) > 0
            }
        }
        let known = try tombstone(app: app, token: old)
        guard registryChanged || known?.kind != "replaced" || known?.replacement != new else { return false }
        try recordEvent(app: app, token: old, kind: "replaced", replacement: new, reason: "CanonicalId",
                        messageID: messageID, now: now)
        return true
    }

    /// The latest thing FCM said about a token, kept for as long as a queued delivery could still need it.
    private func tombstone(app: String, token: String) throws -> (kind: String, replacement: String?)? {
        try queryOne(
            "SELECT kind, replacement FROM token_tombstones WHERE app = ? AND token = ?",
            [.text(app), .text(token)]) { (kind: $0.string(0), replacement: $0.optionalString(1)) }
    }

    /// Appends to the feed and keeps the token's tombstone, which is what claims read.
    private func recordEvent(
        app: String, token: String, kind: String, replacement: String?, reason: String, messageID: String, now: Int64
    ) throws {
        try run(
            """
            INSERT INTO token_events (at, app, token, kind, replacement, reason, message_id)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, .integer(now), .text(app), .text(token), .text(kind), .optional(replacement), .text(reason),
            .text(messageID))
        try run(
            """
            INSERT INTO token_tombstones (app, token, kind, replacement, at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (app, token) DO UPDATE SET kind = excluded.kind, replacement = excluded.replacement,
                at = excluded.at
            """, .text(app), .text(token), .text(kind), .optional(replacement), .integer(now))
    }

    // MARK: - Leases

    /// Extends to `until` the leases `owner` still holds on `ids` (rows it claimed and has not answered yet), so a
    /// row that waits long inside the process — behind slow answers, a gate, a full window — is never taken back by
    /// the rescuer while it is still going to be sent. Rows finished or taken back meanwhile are left alone.
    /// Returns how many leases were renewed.
    @discardableResult
    public func renewLeases(_ ids: [Int64], owner: String, until: Int64) throws -> Int {
        guard !ids.isEmpty else { return 0 }
        var list = "["
        list.reserveCapacity(ids.count * 8)
        for (index, id) in ids.enumerated() {
            if index > 0 { list += "," }
            list += String(id)
        }
        list += "]"
        return try run(
            """
            UPDATE deliveries SET lease_expires_at = ?
            WHERE id IN (SELECT value FROM json_each(?)) AND state = 'inflight' AND lease_owner = ?
            """, .integer(until), .text(list), .text(owner))
    }

    /// Returns to `queued` every delivery whose lease expired before `now` (the process that held it died
    /// mid-send). Each row is reset only if it is still `inflight` under the very lease that was read.
    @discardableResult
    public func rescueExpiredLeases(now: Int64) throws -> Int {
        let expired = try query(
            "SELECT id, lease_owner, lease_expires_at FROM deliveries WHERE state = 'inflight' AND lease_expires_at <= ?",
            [.integer(now)]
        ) { (id: $0.int64(0), owner: $0.string(1), expiresAt: $0.int64(2)) }
        var rescued = 0
        for lease in expired {
            rescued += try run(
                """
                UPDATE deliveries SET state = 'queued', lease_owner = NULL, lease_expires_at = NULL, updated_at = ?
                WHERE id = ? AND state = 'inflight' AND lease_owner = ? AND lease_expires_at = ?
                """, .integer(now), .integer(lease.id), .text(lease.owner), .integer(lease.expiresAt))
        }
        return rescued
    }

    /// Returns to `queued` every lease not held by `owner`: at start-up, with the database locked to this process,
    /// they belong to a process that is gone.
    @discardableResult
    public func releaseForeignLeases(owner: String, now: Int64) throws -> Int {
        try run(
            """
            UPDATE deliveries SET state = 'queued', lease_owner = NULL, lease_expires_at = NULL, updated_at = ?
            WHERE state = 'inflight' AND lease_owner IS NOT ?
            """, .integer(now), .text(owner))
    }

    // MARK: - Apps

    /// Gives `name` an `apps` row if it has none, once per connection rather than once per message. (`serve`
    /// creates the rows of its configured apps at start, so a rolled-back first insert cannot leave one out.)
    public func ensureApp(_ name: String) throws {
        guard !ensuredApps.contains(name) else { return }
        try run("INSERT OR IGNORE INTO apps (name) VALUES (?)", .text(name))
        ensuredApps.insert(name)
    }

    public func appState(_ name: String) throws -> AppState? {
        try queryOne("SELECT name, paused, pause_reason, gate_until FROM apps WHERE name = ?", [.text(name)]) {
            AppState(name: $0.string(0), paused: $0.int(1) != 0, pauseReason: $0.optionalString(2), gateUntil: $0.int64(3))
        }
    }

    public func apps() throws -> [AppState] {
        try query("SELECT name, paused, pause_reason, gate_until FROM apps ORDER BY name") {
            AppState(name: $0.string(0), paused: $0.int(1) != 0, pauseReason: $0.optionalString(2), gateUntil: $0.int64(3))
        }
    }

    /// Pauses `app`; returns false when it was already paused.
    @discardableResult
    public func pauseApp(_ app: String, reason: String, now: Int64) throws -> Bool {
        try ensureApp(app)
        return try run(
            "UPDATE apps SET paused = 1, pause_reason = ?, paused_at = ? WHERE name = ? AND paused = 0",
            .text(reason), .integer(now), .text(app)) > 0
    }

    /// Resumes `app` and opens its gate; returns false when it was not paused.
    @discardableResult
    public func resumeApp(_ app: String) throws -> Bool {
        try run(
            "UPDATE apps SET paused = 0, pause_reason = NULL, paused_at = NULL, gate_until = 0 WHERE name = ? AND paused = 1",
            .text(app)) > 0
    }

    /// Closes the app's gate until `until` (never shortens a gate already closed for longer).
    public func closeGate(_ app: String, until: Int64) throws {
        try ensureApp(app)
        try run("UPDATE apps SET gate_until = max(gate_until, ?) WHERE name = ?", .integer(until), .text(app))
    }
}
