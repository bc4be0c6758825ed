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
    public var targetKind: TargetKind
    public var ttlSeconds: Int
    public var dryRun: Bool
    public var expiresAt: Int64
    public var collapseKey: String?
    /// The shape of `payload` (SPEC §13): a provider renders legacy and v1 messages differently.
    public var format: MessageFormat
    /// Whether a device delivery's `token` is an FCM token or a Firebase Installation ID.
    public var tokenField: TokenField

    public init(
        id: String, app: String, payload: String, targetKind: TargetKind, ttlSeconds: Int, dryRun: Bool,
        expiresAt: Int64, collapseKey: String? = nil, format: MessageFormat = .legacy, tokenField: TokenField = .token
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

    public init() {}
}

/// The new state of one leased delivery after its attempt.
public enum DeliveryUpdate: Sendable, Equatable {
    case delivered(id: Int64, fcmMessageID: String?, canonicalToken: String?, status: Int?)
    /// Terminal with nothing to do: `NotRegistered`, `Collapsed`, `Replaced`, `Cancelled`.
    case dropped(id: Int64, reason: DeliveryReason, status: Int?)
    /// A dead letter; the attempt is charged.
    case dead(id: Int64, reason: DeliveryReason, status: Int?)
    /// The message itself is refused (MessageTooBig, InvalidDataKey, …): this delivery and every other still-queued
    /// delivery of the message become dead letters.
    case deadMessage(id: Int64, reason: DeliveryReason, status: Int?)
    /// Back to `queued` at `at`; the attempt is charged.
    case retry(id: Int64, at: Int64, reason: DeliveryReason, status: Int?)
    /// Back to `queued` now without charging an attempt (paused app, shutdown).
    case release(id: Int64)
    /// Back to `queued`, due at `until`, without charging an attempt: its push-service origin is gated or paused, or
    /// holds its share of the app's requests (unsent: no `reason`), or refused the sender (`reason`, `status` kept as
    /// the row's last error).
    case deferred(id: Int64, until: Int64, reason: DeliveryReason?, status: Int?)
    /// The message's TTL ran out before it could be sent: `dead`/`Expired`, no attempt charged.
    case expired(id: Int64)
    /// The provider says the token is gone or can never work (APNs' 410, `BadDeviceToken`): the delivery ends in
    /// `state` (`dropped` or `dead`) and the token is deleted from the registry — with `since` (Apple's timestamp),
    /// only if it was not registered again after that time.
    case forgetToken(id: Int64, state: DeliveryState, reason: DeliveryReason, status: Int?, since: Int64?)

    public var id: Int64 {
        switch self {
        case .delivered(let id, _, _, _), .dropped(let id, _, _), .dead(let id, _, _), .deadMessage(let id, _, _),
            .retry(let id, _, _, _), .release(let id), .expired(let id), .forgetToken(let id, _, _, _, _),
            .deferred(let id, _, _, _):
            id
        }
    }
}

extension DeliveryUpdate {
    /// For an update that ends the delivery: its terminal state, reason and status, and whether it charges an
    /// attempt. Only called for `.dropped`, `.dead`, `.deadMessage`, `.expired` and `.forgetToken`.
    var ending: (state: DeliveryState, reason: DeliveryReason, status: Int?, charges: Bool) {
        switch self {
        case .dropped(_, let reason, let status): (.dropped, reason, status, true)
        case .dead(_, let reason, let status), .deadMessage(_, let reason, let status): (.dead, reason, status, true)
        case .expired: (.dead, .expired, nil, false)
        case .forgetToken(_, let state, let reason, let status, _): (state, reason, status, true)
        case .delivered, .retry, .release, .deferred: preconditionFailure("\(self) does not end a delivery this way")
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

    public init(name: String, paused: Bool, pauseReason: String?, gateUntil: Int64) {
        self.name = name
        self.paused = paused
        self.pauseReason = pauseReason
        self.gateUntil = gateUntil
    }
}

/// One push-service origin of a Web Push app that is gated or paused, as stored in `app_origins` (SPEC §19): the
/// fault domain below the app.
public struct OriginSwitch: Sendable, Equatable {
    public var app: String
    /// `https://host[:port]` of the subscriptions' endpoints.
    public var origin: String
    /// No request to this origin before this time; 0 when open.
    public var gateUntil: Int64
    public var gateReason: GateReason?
    /// When the gate closed, kept while it stays closed.
    public var gatedAt: Int64?
    /// Paused after refusing the sender for several subscriptions in a row, until the app is resumed.
    public var paused: Bool
    public var pauseReason: String?
    public var pausedAt: Int64?

    public init(
        app: String, origin: String, gateUntil: Int64 = 0, gateReason: GateReason? = nil, gatedAt: Int64? = nil,
        paused: Bool = false, pauseReason: String? = nil, pausedAt: Int64? = nil
    ) {
        self.app = app
        self.origin = origin
        self.gateUntil = gateUntil
        self.gateReason = gateReason
        self.gatedAt = gatedAt
        self.paused = paused
        self.pauseReason = pauseReason
        self.pausedAt = pausedAt
    }
}


/// Where a delivery is in its life (SPEC §4): `queued` → `inflight` → `delivered` | `dead` | `dropped`.
public enum DeliveryState: String, Sendable, CaseIterable {
    case queued, inflight, delivered, dead, dropped

    /// `delivered`, `dead` and `dropped` end a delivery; `dead` waits for an operator.
    public var isTerminal: Bool { self == .delivered || self == .dead || self == .dropped }

    /// A `deliveries.state` as read back. The schema's CHECK admits these five only, and a binary refuses a schema
    /// other than its own, so any other text is a broken database.
    public init(stored text: String) {
        guard let state = DeliveryState(rawValue: text) else {
            preconditionFailure("deliveries.state '\(text)' is not one of the states the schema allows")
        }
        self = state
    }
}

/// The claim's two lanes: high priority first, then normal (`deliveries.priority_rank`).
public enum PriorityLane: Int64, Sendable, CaseIterable {
    case high = 0
    case normal = 1
}

/// The newest message with a `collapse_key` to one target, as the claim reads it.
public struct CollapseHead: Sendable, Equatable {
    public var messageID: String
    /// Its delivery's state; nil when the row is gone (pruned: it was delivered, since deleting a dead or dropped
    /// row deletes its head too, the schema's `collapse_head_removed` trigger).
    public var state: DeliveryState?
    public var expiresAt: Int64?
    /// Its message's `send_at`: until then it is not sent, and supersedes nothing.
    public var sendAt: Int64?

    public init(messageID: String, state: DeliveryState?, expiresAt: Int64?, sendAt: Int64? = nil) {
        self.messageID = messageID
        self.state = state
        self.expiresAt = expiresAt
        self.sendAt = sendAt
    }
}

/// What FCM last said about a token (`token_tombstones`).
public struct TokenTombstone: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// `NotRegistered` / `UNREGISTERED`.
        case deleted
        /// A canonical id: `replacement` is the token to use.
        case replaced

        /// A `kind` of `token_events` or `token_tombstones` as read back. The schema's CHECK admits these two only,
        /// and a binary refuses a schema other than its own, so any other text is a broken database.
        public init(stored text: String) {
            guard let kind = Kind(rawValue: text) else {
                preconditionFailure("token event kind '\(text)' is not one of the kinds the schema allows")
            }
            self = kind
        }
    }

    public var kind: Kind
    public var replacement: String?

    public init(kind: Kind, replacement: String?) {
        self.kind = kind
        self.replacement = replacement
    }
}

/// A change reconciliation makes to a token: a `token_events` entry and the token's tombstone.
public struct TokenEvent: Sendable, Equatable {
    public var app: String
    public var token: String
    public var tombstone: TokenTombstone
    public var reason: DeliveryReason
    public var messageID: String
}

/// The row an outcome was written to, for what it means to the token registry.
public struct LeasedRow: Sendable, Equatable {
    public var app: String
    public var token: String
    public var messageID: String

    public init(app: String, token: String, messageID: String) {
        self.app = app
        self.token = token
        self.messageID = messageID
    }
}

/// A lease as an outcome must still find it: the row still `inflight` under `owner`. An expired lease that nobody
/// took back is still the owner's: its answer is true, and refusing it would only have the row sent again (after a
/// database outage longer than the lease, every answer of the outage). Once the rescuer or another instance took
/// the row, the answer is refused. `now` is the outcome's `updated_at`.
public struct HeldLease: Sendable, Equatable {
    public var owner: String
    public var now: Int64

    public init(owner: String, now: Int64) {
        self.owner = owner
        self.now = now
    }
}
