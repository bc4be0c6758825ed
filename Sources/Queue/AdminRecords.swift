import Support

/// What `herald status` shows for one app: its switches, its backlog, and what finished in the last minute.
public struct AppStatus: Sendable, Equatable {
    public var name: String
    public var paused: Bool
    public var pauseReason: String?
    public var pausedAt: Int64?
    /// No request to the app's endpoint before this time (Retry-After, 5xx, a transport fault); 0 when open.
    public var gateUntil: Int64
    /// What closed the gate last (`reset`, `timeout`, `http_503`, `retry_after`, `quota`, …), and when it closed:
    /// kept while it stays closed, nil until a gate ever closes.
    public var gateReason: GateReason?
    public var gatedAt: Int64?
    /// Queued deliveries, due or not.
    public var queued: Int
    /// Queued deliveries whose `next_attempt_at` has come.
    public var ready: Int
    /// Messages waiting for their `send_at` (not cancelled); a message to users in every app counts in every app.
    public var scheduledMessages: Int = 0
    /// The earliest `next_attempt_at` of the ready rows: how long the oldest ready delivery has been waiting.
    public var oldestReadySince: Int64?
    public var inflight: Int
    public var dead: Int
    /// Deliveries that became delivered, dead or dropped in the last minute (by `updated_at`).
    public var finishedLastMinute: FinishedCounts
    /// A Web Push app's push-service origins that are gated or paused now (SPEC §19), by origin.
    public var origins: [OriginSwitch]

    public init(
        name: String, paused: Bool = false, pauseReason: String? = nil, pausedAt: Int64? = nil, gateUntil: Int64 = 0,
        gateReason: GateReason? = nil, gatedAt: Int64? = nil, queued: Int = 0, ready: Int = 0,
        oldestReadySince: Int64? = nil, inflight: Int = 0, dead: Int = 0,
        finishedLastMinute: FinishedCounts = FinishedCounts(), origins: [OriginSwitch] = []
    ) {
        self.origins = origins
        self.name = name
        self.paused = paused
        self.pauseReason = pauseReason
        self.pausedAt = pausedAt
        self.gateUntil = gateUntil
        self.gateReason = gateReason
        self.gatedAt = gatedAt
        self.queued = queued
        self.ready = ready
        self.oldestReadySince = oldestReadySince
        self.inflight = inflight
        self.dead = dead
        self.finishedLastMinute = finishedLastMinute
    }
}

/// Deliveries that reached each terminal state.
public struct FinishedCounts: Sendable, Equatable {
    public var delivered = 0
    public var dead = 0
    public var dropped = 0

    public init(delivered: Int = 0, dead: Int = 0, dropped: Int = 0) {
        self.delivered = delivered
        self.dead = dead
        self.dropped = dropped
    }
}

/// One row of the `queue_depth` view.
public struct QueueDepthRow: Sendable, Equatable {
    public var app: String
    public var state: DeliveryState
    public var count: Int
    /// `created_at` of the oldest delivery in that state.
    public var oldest: Int64

    public init(app: String, state: DeliveryState, count: Int, oldest: Int64) {
        (self.app, self.state, self.count, self.oldest) = (app, state, count, oldest)
    }
}

/// A delivery in state `dead`, with what an operator needs to decide about it.
public struct DeadLetterRecord: Sendable, Equatable {
    public var deliveryID: Int64
    public var messageID: String
    public var app: String
    public var token: String
    public var reason: DeliveryReason?
    public var attempts: Int
    public var lastStatus: Int64?
    /// When the delivery became dead (`updated_at`).
    public var diedAt: Int64
    public var messageCreatedAt: Int64
    public var messageExpiresAt: Int64
    public var ttlSeconds: Int

    public init(
        deliveryID: Int64, messageID: String, app: String, token: String, reason: DeliveryReason?, attempts: Int,
        lastStatus: Int64?, diedAt: Int64, messageCreatedAt: Int64, messageExpiresAt: Int64, ttlSeconds: Int
    ) {
        (self.deliveryID, self.messageID, self.app, self.token, self.reason, self.attempts, self.lastStatus) =
            (deliveryID, messageID, app, token, reason, attempts, lastStatus)
        (self.diedAt, self.messageCreatedAt, self.messageExpiresAt, self.ttlSeconds) =
            (diedAt, messageCreatedAt, messageExpiresAt, ttlSeconds)
    }

    /// Whether sending it again would only expire it again (the claim's rule: a TTL of 0 is never "expired").
    public func isExpired(now: Int64) -> Bool { messageExpiresAt <= now }
}

/// Which dead letters a `dead` command or the console acts on. Every filter given must match; none given matches all.
public struct DeadLetterFilter: Sendable, Equatable {
    public var app: String?
    public var reason: String?
    /// Only dead letters that died at or after this time.
    public var diedSince: Int64?
    /// Only dead letters that died at or before this time: "all that match" stays the set that matched when an
    /// operator asked, so a row requeued by one chunk that dies again is not requeued again by the next.
    public var diedUntil: Int64?
    /// Only dead letters to this token (or topic, or condition).
    public var token: String?
    /// Only these delivery ids (empty: any).
    public var deliveryIDs: [Int64]
    /// Only those listed after this one, in the listing's order (newest death first): the key of a page.
    public var after: DeadLetterCursor?

    public init(
        app: String? = nil, reason: String? = nil, diedSince: Int64? = nil, diedUntil: Int64? = nil,
        token: String? = nil, deliveryIDs: [Int64] = [], after: DeadLetterCursor? = nil
    ) {
        self.app = app
        self.reason = reason
        self.diedSince = diedSince
        self.diedUntil = diedUntil
        self.token = token
        self.deliveryIDs = deliveryIDs
        self.after = after
    }
}

/// Where a page of dead letters ends: the last row's time of death and delivery id, the listing's sort key.
public struct DeadLetterCursor: Sendable, Equatable {
    public var diedAt: Int64
    public var deliveryID: Int64

    public init(diedAt: Int64, deliveryID: Int64) {
        (self.diedAt, self.deliveryID) = (diedAt, deliveryID)
    }

    /// The cursor after `record`.
    public init(_ record: DeadLetterRecord) {
        self.init(diedAt: record.diedAt, deliveryID: record.deliveryID)
    }

    /// `DIEDAT.ID`, as the console's API writes it (`after=`).
    public var text: String { "\(diedAt).\(deliveryID)" }

    public init?(text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let diedAt = Int64(parts[0]), let id = Int64(parts[1]), diedAt >= 0, id >= 0 else {
            return nil
        }
        self.init(diedAt: diedAt, deliveryID: id)
    }
}

/// How many dead letters of one app died of one reason.
public struct DeadLetterGroup: Sendable, Equatable {
    public var app: String
    public var reason: DeliveryReason?
    public var count: Int

    public init(app: String, reason: DeliveryReason?, count: Int) {
        (self.app, self.reason, self.count) = (app, reason, count)
    }
}
