/// Where a message goes, as stored: tokens (given, or expanded from users inside the ingest transaction),
/// one topic, or one condition.
public enum StoredTarget: Sendable, Equatable {
    case tokens([String])
    case users([String])
    case topic(String)
    case condition(String)

    var kind: String {
        switch self {
        case .tokens, .users: "tokens"
        case .topic: "topic"
        case .condition: "condition"
        }
    }
}

/// A validated message ready to be stored.
public struct NewMessage: Sendable, Equatable {
    public var app: String
    public var idempotencyKey: String?
    /// The FCM message without its target, as JSON text.
    public var payload: String
    public var target: StoredTarget
    public var collapseKey: String?
    public var priority: String
    public var ttlSeconds: Int
    public var dryRun: Bool

    public init(
        app: String, idempotencyKey: String? = nil, payload: String, target: StoredTarget,
        collapseKey: String? = nil, priority: String = "normal", ttlSeconds: Int = 2_419_200, dryRun: Bool = false
    ) {
        self.app = app
        self.idempotencyKey = idempotencyKey
        self.payload = payload
        self.target = target
        self.collapseKey = collapseKey
        self.priority = priority
        self.ttlSeconds = ttlSeconds
        self.dryRun = dryRun
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
}

public struct MessageRecord: Sendable, Equatable {
    public var id: String
    public var app: String
    public var payload: String
    public var targetKind: String
    public var collapseKey: String?
    public var priority: String
    public var ttlSeconds: Int
    public var dryRun: Bool
    public var createdAt: Int64
    public var expiresAt: Int64
    public var deliveries: [DeliveryRecord]
}

public struct DeliveryRecord: Sendable, Equatable {
    public var id: Int64
    public var token: String
    public var state: String
    public var reason: String?
    public var attempts: Int
    public var nextAttemptAt: Int64
    public var fcmMessageID: String?
    public var canonicalToken: String?
    public var lastStatus: Int64?
    public var updatedAt: Int64
}

public struct TokenRecord: Sendable, Equatable {
    public var token: String
    public var app: String
    public var user: String?
    public var createdAt: Int64
    public var updatedAt: Int64
}
