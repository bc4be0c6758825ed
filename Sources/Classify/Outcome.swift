/// How a request addressed FCM.
public enum TargetKind: Sendable, Equatable {
    case tokens, topic, condition
}

/// The body format a request was sent in; FCM answers in the same one.
public enum RequestFormat: Sendable, Equatable {
    case json, plainText
}

/// What FCM's answer means for one delivery (SPEC §6).
public enum Outcome: Sendable, Equatable {
    /// Sent. `canonicalToken` is the result's `registration_id`: the token to use from now on.
    case delivered(fcmMessageID: String?, canonicalToken: String?)
    /// The token is dead (app uninstalled): drop the delivery and delete the token.
    case notRegistered
    /// This token can never receive this sender's messages: a dead letter for this delivery.
    case deadToken(reason: String)
    /// The message itself is wrong: a dead letter for every delivery of the message.
    case deadMessage(reason: String)
    /// Try again later with exponential backoff.
    case retry(reason: String)
    /// Try again much later: FCM is rate limiting this device or topic.
    case retrySlow(reason: String)
    /// The sender's credentials are refused: pause the app; the attempt is not charged.
    case pauseApp(reason: String)
}

/// One outcome per target of a request, and what the answer says about the app as a whole.
public struct Classification: Sendable, Equatable {
    /// Exactly one per target, in request order.
    public var outcomes: [Outcome]
    /// From a `Retry-After` header: no request to the app before this Unix millisecond.
    public var retryAfterUntil: Int64?
    /// A 5xx, a transport failure or a `Retry-After`: the app's gate closes.
    public var closesGate: Bool

    public init(outcomes: [Outcome], retryAfterUntil: Int64? = nil, closesGate: Bool = false) {
        self.outcomes = outcomes
        self.retryAfterUntil = retryAfterUntil
        self.closesGate = closesGate
    }
}
