import Support

/// Who a message goes to, as ingest validated it and storage keeps it: tokens, Herald's users (expanded to their
/// tokens inside the ingest transaction), one topic, or one condition.
public enum MessageTarget: Sendable, Equatable {
    /// From `to` (one token or notification key) or `registration_ids` (deduplicated, first occurrence kept;
    /// more than FCM's 1000 allowed, since Herald splits the requests).
    case tokens([String])
    /// Herald's extension: user ids (deduplicated, order kept) that expand to their registered tokens.
    case users([String])
    /// `to` naming a topic, kept as given: `/topics/news`.
    case topic(String)
    /// A topic condition, kept as given: `'a' in topics && ('b' in topics || 'c' in topics)`.
    case condition(String)

    public var kind: TargetKind {
        switch self {
        case .tokens, .users: .tokens
        case .topic: .topic
        case .condition: .condition
        }
    }

    /// Whether FCM applies its smaller payload limit (2048 bytes instead of 4096).
    public var isTopicOrCondition: Bool { kind != .tokens }
}

/// The shape a backend sent a message in (`messages.format`): how `payload` reads and how a provider renders it.
public enum MessageFormat: String, Sendable, Equatable {
    /// An FCM legacy message: `data`, `notification` and legacy options at the top level.
    case legacy
    /// The `message` object of an FCM HTTP v1 request: `data`, `notification`, `android`, `apns`, `webpush`, ...
    case v1
}

/// Which v1 field a device delivery's `token` goes in (`messages.token_field`).
public enum TokenField: String, Sendable, Equatable {
    /// An FCM registration token (legacy `to`/`registration_ids`, v1 `token`).
    case token
    /// A Firebase Installation ID (v1 `fid`), which only FCM HTTP v1 can address.
    case fid
}

/// A validated message ready to be stored.
public struct NewMessage: Sendable, Equatable {
    /// The `app` of a message to `users` that names none (SPEC §17): it reaches every registered token and
    /// subscription of those users in every app, each delivery in its token's app, and its `Idempotency-Key` is the
    /// backend's rather than an app's. No app can have this name (app names are `[A-Za-z0-9._-]`).
    public static let everyApp = "*"

    /// The app `users` fan out in, or `everyApp`.
    public var app: String
    public var idempotencyKey: String?
    /// The FCM message without its target, as JSON text, in `format`'s shape.
    public var payload: String
    public var format: MessageFormat
    public var target: MessageTarget
    /// For `.tokens` and `.users` targets: whether each device identifier is a token or an FID.
    public var tokenField: TokenField
    public var collapseKey: String?
    public var priority: Priority
    public var ttlSeconds: Int
    public var dryRun: Bool
    /// `send_at` as the backend gave it (Unix milliseconds): no delivery is sent before it, and the TTL counts from
    /// it; a past one means now (`MessageInsert`). Nil: now.
    public var sendAt: Int64?

    public init(
        app: String, idempotencyKey: String? = nil, payload: String, format: MessageFormat = .legacy,
        target: MessageTarget, tokenField: TokenField = .token, collapseKey: String? = nil,
        priority: Priority = .normal, ttlSeconds: Int = 2_419_200, dryRun: Bool = false, sendAt: Int64? = nil
    ) {
        self.app = app
        self.idempotencyKey = idempotencyKey
        self.payload = payload
        self.format = format
        self.target = target
        self.tokenField = tokenField
        self.collapseKey = collapseKey
        self.priority = priority
        self.ttlSeconds = ttlSeconds
        self.dryRun = dryRun
        self.sendAt = sendAt
    }
}

/// What ingest answers for a stored message.
public struct AcceptedMessage: Sendable, Equatable {
    public var id: String
    /// The message's SQLite `rowid` (`messages` is a rowid table): a positive integer that names the message while
    /// its row exists, for answers that need a number, such as `multicast_id` on `POST /fcm/send`.
    /// `SELECT id FROM messages WHERE rowid = ?` maps it back. `VACUUM` may renumber rowids, and the rowid of a
    /// deleted newest row may be given again, so `id` stays the name to keep.
    public var rowID: Int64
    public var deliveries: Int
    /// True when an earlier message with the same idempotency key was found instead.
    public var isRepeat: Bool

    public init(id: String, rowID: Int64, deliveries: Int, isRepeat: Bool) {
        self.id = id
        self.rowID = rowID
        self.deliveries = deliveries
        self.isRepeat = isRepeat
    }

    /// The answer to a later message that repeats this one's key.
    var asRepeat: AcceptedMessage {
        var answer = self
        answer.isRepeat = true
        return answer
    }
}

public struct MessageRecord: Sendable, Equatable {
    public var id: String
    public var app: String
    public var payload: String
    public var format: MessageFormat = .legacy
    public var targetKind: TargetKind
    public var tokenField: TokenField = .token
    public var collapseKey: String?
    public var priority: Priority
    public var ttlSeconds: Int
    public var dryRun: Bool
    public var createdAt: Int64
    public var expiresAt: Int64
    /// `messages.send_at`: when it was scheduled for, nil when it was sent at once.
    public var sendAt: Int64?
    /// `messages.cancelled_at`: when `DELETE /v1/messages/{id}` first cancelled it.
    public var cancelledAt: Int64?
    public var deliveries: [DeliveryRecord]

    public init(
        id: String, app: String, payload: String, format: MessageFormat = .legacy, targetKind: TargetKind,
        tokenField: TokenField = .token, collapseKey: String?, priority: Priority, ttlSeconds: Int, dryRun: Bool,
        createdAt: Int64, expiresAt: Int64, sendAt: Int64? = nil, cancelledAt: Int64? = nil,
        deliveries: [DeliveryRecord]
    ) {
        (self.id, self.app, self.payload, self.format, self.targetKind, self.tokenField) =
            (id, app, payload, format, targetKind, tokenField)
        (self.collapseKey, self.priority, self.ttlSeconds, self.dryRun) = (collapseKey, priority, ttlSeconds, dryRun)
        (self.createdAt, self.expiresAt, self.sendAt, self.cancelledAt, self.deliveries) =
            (createdAt, expiresAt, sendAt, cancelledAt, deliveries)
    }
}

public struct DeliveryRecord: Sendable, Equatable {
    public var id: Int64
    public var token: String
    public var state: DeliveryState
    public var reason: DeliveryReason?
    public var attempts: Int
    public var nextAttemptAt: Int64
    public var fcmMessageID: String?
    public var canonicalToken: String?
    public var lastStatus: Int64?
    public var updatedAt: Int64
    /// The app it is sent by: the message's, or its token's own for a message to users in every app (SPEC §17).
    public var app: String

    public init(
        id: Int64, token: String, state: DeliveryState, reason: DeliveryReason?, attempts: Int, nextAttemptAt: Int64,
        fcmMessageID: String?, canonicalToken: String?, lastStatus: Int64?, updatedAt: Int64, app: String = "default"
    ) {
        self.app = app
        (self.id, self.token, self.state, self.reason, self.attempts, self.nextAttemptAt) =
            (id, token, state, reason, attempts, nextAttemptAt)
        (self.fcmMessageID, self.canonicalToken, self.lastStatus, self.updatedAt) =
            (fcmMessageID, canonicalToken, lastStatus, updatedAt)
    }
}

public struct TokenRecord: Sendable, Equatable {
    public var token: String
    public var app: String
    public var user: String?
    public var createdAt: Int64
    public var updatedAt: Int64

    public init(token: String, app: String, user: String?, createdAt: Int64, updatedAt: Int64) {
        (self.token, self.app, self.user, self.createdAt, self.updatedAt) = (token, app, user, createdAt, updatedAt)
    }
}

/// One change reconciliation made to the token registry.
public struct TokenEventRecord: Sendable, Equatable {
    public var id: Int64
    public var at: Int64
    public var app: String
    public var token: String
    public var kind: TokenTombstone.Kind
    public var replacement: String?
    public var reason: DeliveryReason?
    public var messageID: String?

    public init(
        id: Int64, at: Int64, app: String, token: String, kind: TokenTombstone.Kind, replacement: String?,
        reason: DeliveryReason?, messageID: String?
    ) {
        (self.id, self.at, self.app, self.token, self.kind) = (id, at, app, token, kind)
        (self.replacement, self.reason, self.messageID) = (replacement, reason, messageID)
    }
}

/// How long a `time_to_live: 0` message may wait for its one attempt unless `serve` is told otherwise.
public let defaultTTLZeroWindowMillis: Int64 = 5_000
