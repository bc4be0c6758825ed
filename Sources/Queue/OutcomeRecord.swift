import Support

/// One entry of the outcome feed (`outcomes`, SPEC §23): what became of a delivery, in the order it was committed.
public struct OutcomeRecord: Sendable, Equatable {
    /// The feed's position; a cursor passes `after` a seq.
    public var seq: Int64
    /// When the delivery reached its final state (Unix ms).
    public var at: Int64
    public var messageID: String
    public var app: String
    public var token: String
    /// The user a `users` fan-out reached the token through, as the registry said at ingest.
    public var user: String?
    /// `delivered`, `dead` or `dropped`.
    public var state: DeliveryState
    public var reason: DeliveryReason?
    /// The provider's id for what it accepted: FCM's message id, APNs' `apns-id`, a push service's `Location`.
    public var providerMessageID: String?

    public init(
        seq: Int64, at: Int64, messageID: String, app: String, token: String, user: String?, state: DeliveryState,
        reason: DeliveryReason?, providerMessageID: String?
    ) {
        (self.seq, self.at, self.messageID, self.app, self.token) = (seq, at, messageID, app, token)
        (self.user, self.state, self.reason, self.providerMessageID) = (user, state, reason, providerMessageID)
    }
}

/// An outcome webhook's durable state (`outcome_webhooks`): how far its receiver has acknowledged the feed, the
/// batches sent past that and not yet acknowledged, and who sends it.
public struct OutcomeWebhookState: Sendable, Equatable {
    /// An app's name for its own webhook, `serviceWide` for the top-level one.
    public var name: String
    /// Every outcome up to this seq is acknowledged (or skipped).
    public var seq: Int64
    /// The last seq of each batch sent and not yet acknowledged, ascending: batch i holds the matching outcomes
    /// after `inFlight[i-1]` (after `seq` for the first) up to `inFlight[i]`.
    public var inFlight: [Int64]
    public var leaseOwner: String?
    public var leaseExpiresAt: Int64?
    /// Outcomes given up on because retention trimmed them before the receiver took them.
    public var skipped: Int64
    public var updatedAt: Int64
    /// The last failed attempt's answer (an HTTP status, or the transport's failure), and when it came.
    public var lastError: String?
    public var lastErrorAt: Int64?

    /// The name of the webhook set at the config file's top level, for every app without its own.
    public static let serviceWide = "*"

    public init(
        name: String, seq: Int64, inFlight: [Int64], leaseOwner: String?, leaseExpiresAt: Int64?, skipped: Int64,
        updatedAt: Int64, lastError: String? = nil, lastErrorAt: Int64? = nil
    ) {
        (self.name, self.seq, self.inFlight, self.leaseOwner) = (name, seq, inFlight, leaseOwner)
        (self.leaseExpiresAt, self.skipped, self.updatedAt) = (leaseExpiresAt, skipped, updatedAt)
        (self.lastError, self.lastErrorAt) = (lastError, lastErrorAt)
    }

    /// `in_flight` as stored: a JSON array of integers.
    public static func inFlight(stored text: String) -> [Int64] {
        ((try? JSON.parse(Array(text.utf8)))?.arrayValue ?? []).compactMap(\.int64Value)
    }

    public static func stored(inFlight: [Int64]) -> String {
        JSON.array(inFlight.map(JSON.int)).serialized()
    }
}

extension OutcomeRecord {
    /// A feed item as `GET /v1/outcomes`, `herald outcomes --json` and the outcome webhooks' `data` show it.
    public var json: JSON {
        .object([
            ("seq", .int(seq)),
            ("message_id", .string(messageID)),
            ("app", .string(app)),
            ("token", .string(token)),
            ("user", user.map(JSON.string) ?? .null),
            ("state", .string(state.rawValue)),
            ("reason", reason.map { .string($0.rawValue) } ?? .null),
            ("provider_message_id", providerMessageID.map(JSON.string) ?? .null),
            ("at", .int(at)),
        ])
    }
}
