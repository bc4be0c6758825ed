/// The claim's rules, the same on every engine: which rows are leased, and what is settled before anything is sent.
extension QueueStore {
    /// Leases up to `limit` ready deliveries of `app` (high priority first, then oldest `next_attempt_at`).
    /// Call inside a write transaction. Before anything is sent, in this order:
    /// - rows whose message expired (TTL 0: its `ttl_zero_window`) become `dead`/`Expired`;
    /// - what FCM said earlier about their tokens, and newer messages with their `collapse_key`, are applied
    ///   (`reconcileClaimed`).
    /// A paused or gated app gets nothing: the `apps` row is the source of truth, so a `pause` from the CLI holds
    /// even before the service has seen it.
    public func claim(app: String, limit: Int, owner: String, leaseMillis: Int64, now: Int64) throws -> ClaimResult {
        var result = ClaimResult()
        result.app = try appState(app)
        if let state = result.app, state.paused || state.gateUntil > now { return result }
        for lane in PriorityLane.allCases where result.deliveries.count < limit {
            result.deliveries += try leaseReady(
                app: app, lane: lane, limit: limit - result.deliveries.count, owner: owner, leaseMillis: leaseMillis,
                now: now)
        }
        // A message's deliveries come out of the index together (a multicast's 1000 in a row): the set and the
        // look-ups below hash a message id once per run of them, not once per delivery.
        var messageIDs: [String] = []
        var seen = Set<String>()
        var previous: String?
        for delivery in result.deliveries where delivery.messageID != previous {
            previous = delivery.messageID
            if seen.insert(delivery.messageID).inserted { messageIDs.append(delivery.messageID) }
        }
        result.messages = try claimedMessages(ids: messageIDs)
        // Expiry first: a row past its TTL is `Expired` whatever else might have settled it, so trimming the
        // bookkeeping that reconciliation reads (which only ever concerns rows older than the longest TTL) changes
        // no outcome.
        var lookup = MessageLookup(result.messages)
        let expired = result.deliveries.filter { delivery in
            guard let message = lookup[delivery.messageID] else { return true }
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

    /// The earliest `next_attempt_at` of the app's queued deliveries, over both lanes.
    public func nextDue(app: String) throws -> Int64? {
        try PriorityLane.allCases.compactMap { try nextDue(app: app, lane: $0) }.min()
    }

    /// Applies what FCM said earlier about the claimed rows' tokens before any of them is sent:
    /// - a delivery superseded by a newer message with its `collapse_key` that will reach the device is dropped
    ///   as `Collapsed`;
    /// - a token replaced by a canonical id is retargeted to the newest replacement, or dropped as `Replaced`
    ///   where the same message already has a delivery to it;
    /// - a token reported `NotRegistered` (and not registered again since) is dropped as `NotRegistered`.
    /// Doing this at claim time rather than when FCM answered keeps ingest free of a random-key index on tokens.
    func reconcileClaimed(_ result: inout ClaimResult, app: String, owner: String, now: Int64) throws {
        let anyTombstones = try hasTombstones()
        var drops: [DeliveryUpdate] = []
        var lookup = MessageLookup(result.messages)
        for index in result.deliveries.indices {
            let delivery = result.deliveries[index]
            guard let message = lookup[delivery.messageID] else { continue }
            if let collapseKey = message.collapseKey,
               let head = try collapseHead(app: app, collapseKey: collapseKey, token: delivery.token),
               head.supersedes(delivery.messageID, now: now) {
                drops.append(.dropped(id: delivery.id, reason: .collapsed, status: nil))
                continue
            }
            guard anyTombstones, message.targetKind == .tokens else { continue }
            var token = delivery.token
            var tombstone = try self.tombstone(app: app, token: token)
            for _ in 0..<8 {  // a chain of replacements, bounded against a cycle
                guard let found = tombstone, found.kind == .replaced, let next = found.replacement, next != token
                else { break }
                token = next
                tombstone = try self.tombstone(app: app, token: token)
            }
            if token != delivery.token {
                if try messageTargets(delivery.messageID, token: token, besides: delivery.id) {
                    drops.append(.dropped(id: delivery.id, reason: .replaced, status: nil))
                    continue
                }
                try retarget(delivery: delivery.id, to: token, now: now)
                result.deliveries[index].token = token
            }
            if tombstone?.kind == .deleted, try registeredApp(of: token) != app {
                drops.append(.dropped(id: delivery.id, reason: .notRegistered, status: nil))
            }
        }
        guard !drops.isEmpty else { return }
        try apply(drops, owner: owner, now: now, chargeAttempt: false)
        let ids = Set(drops.map(\.id))
        result.deliveries.removeAll { ids.contains($0.id) }
        result.dropped = drops.count
    }
}

extension CollapseHead {
    /// Whether this newer message will really reach the device, so an older one (`messageID`) is superseded: it is
    /// delivered, or still pending and not expired. A dry run never becomes a head, and one that ended dead or
    /// dropped stopped being one; a head whose row was pruned was delivered. A head scheduled for later (`send_at`)
    /// supersedes nothing before its time: until then the older message is the latest the device can have.
    func supersedes(_ messageID: String, now: Int64) -> Bool {
        guard self.messageID > messageID else { return false }
        switch state {
        case .delivered?, nil: return true
        case .queued?, .inflight?: return (expiresAt ?? 0) > now && (sendAt ?? 0) <= now
        case .dead?, .dropped?: return false
        }
    }
}

/// A claim's messages by id, remembering the last one asked for: consecutive deliveries of one message (which share
/// one id string) cost one hash of it, not one each.
private struct MessageLookup {
    private let messages: [String: ClaimedMessage]
    private var lastID: String?
    private var lastMessage: ClaimedMessage?

    init(_ messages: [String: ClaimedMessage]) { self.messages = messages }

    subscript(id: String) -> ClaimedMessage? {
        mutating get {
            if id != lastID {
                lastID = id
                lastMessage = messages[id]
            }
            return lastMessage
        }
    }
}
