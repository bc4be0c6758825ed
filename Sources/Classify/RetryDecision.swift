import Support

/// What happens to a delivery after a retryable failure.
public enum RetryDecision: Sendable, Equatable {
    /// Queue it again, ready at this Unix millisecond.
    case retry(at: Int64)
    /// Give up: `.maxAttempts`, or `.expired` when the message's TTL ends before (or at) the next attempt.
    case dead(reason: DeliveryReason)
}
