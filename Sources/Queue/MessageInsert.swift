/// A message as ingest decided to store it (`Store+Ingest.swift`): every column an engine writes, nothing left for
/// the engine to decide. Its targets are `message.target`'s; a `users` target is expanded by the engine, inside the
/// same statement or transaction, to every registered token of those users (in `message.app`, or in every app for
/// `NewMessage.everyApp`, each delivery in its token's app), each token once, in the order the tokens were first
/// registered (README: "in the order the tokens were first registered").
public struct MessageInsert: Sendable {
    public var message: NewMessage
    /// A new `MessageID`.
    public var id: String
    /// The fingerprint stored with an idempotency key; nil without one.
    public var fingerprint: Int64?
    public var createdAt: Int64
    /// `messages.send_at`: the `send_at` given, or acceptance when that is past (a past one means now); nil when
    /// none was given.
    public var sendAt: Int64?
    /// When its deliveries are first due (`next_attempt_at`): `sendAt`, else acceptance. A scheduled delivery waits
    /// in the claim's index as a retry does, so the claim stays one range scan.
    public var dueAt: Int64
    /// When its deliveries expire: the TTL after `dueAt`, or for TTL 0 ("now or never") the end of the store's
    /// `ttlZeroWindowMillis` after it.
    public var expiresAt: Int64
    /// The claim lane its deliveries wait in (`deliveries.priority_rank`), from the message's priority.
    public var lane: PriorityLane
    /// The `collapse_key` each of its deliveries becomes the head of (the newest message to that target with the
    /// key); nil for a message without one and for a dry run, which reaches no device and so supersedes nothing.
    public var collapseHeadKey: String?

    public init(
        _ message: NewMessage, id: String, fingerprint: Int64?, createdAt now: Int64, ttlZeroWindowMillis: Int64
    ) {
        self.message = message
        self.id = id
        self.fingerprint = fingerprint
        createdAt = now
        sendAt = message.sendAt.map { max($0, now) }
        dueAt = sendAt ?? now
        expiresAt = dueAt + (message.ttlSeconds == 0 ? ttlZeroWindowMillis : Int64(message.ttlSeconds) * 1000)
        lane = message.priority.lane
        collapseHeadKey = message.dryRun ? nil : message.collapseKey
    }
}

/// What an engine stored for a `MessageInsert`.
public struct StoredMessage: Sendable, Equatable {
    /// `messages.rowid` (`AcceptedMessage.rowID`).
    public var rowID: Int64
    public var deliveries: Int

    public init(rowID: Int64, deliveries: Int) {
        (self.rowID, self.deliveries) = (rowID, deliveries)
    }
}
