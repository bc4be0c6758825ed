/// The classifier's answer for one FCM request.
public struct Classification: Sendable, Equatable {
    /// Exactly one per target, in request order.
    public var outcomes: [Outcome]
    /// Absolute Unix milliseconds from a `Retry-After` header, if one could be parsed.
    public var retryAfterUntil: Int64?
    /// A 5xx, a transport failure, a v1 quota error (`retrySlow`), or any parsable `Retry-After`: send nothing more
    /// to this app's endpoint before `retryAfterUntil` (or, without one, before a backoff: from a minute for a quota
    /// error).
    public var closesGate: Bool
    /// The endpoint says its credential was renewed too often (APNs' `TooManyProviderTokenUpdates`): the request is
    /// retried as its outcomes say, and the credential is kept longer before the next renewal.
    public var credentialRenewedTooOften: Bool

    public init(
        outcomes: [Outcome], retryAfterUntil: Int64? = nil, closesGate: Bool = false,
        credentialRenewedTooOften: Bool = false
    ) {
        self.outcomes = outcomes
        self.retryAfterUntil = retryAfterUntil
        self.closesGate = closesGate
        self.credentialRenewedTooOften = credentialRenewedTooOften
    }
}
