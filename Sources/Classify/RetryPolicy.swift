/// When to try a failed delivery again (SPEC §5). A pure function of its inputs and a random source.
///
/// Attempt n waits `d/2 + uniform(0, d/2)` with `d = min(cap, base·2^(n-1))`: exponential, capped, and jittered
/// independently per delivery so retries of one outage spread out. A `Retry-After` is a floor.
public struct RetryPolicy: Sendable, Equatable {
    public var baseMillis: Int64
    public var capMillis: Int64
    public var maxAttempts: Int
    /// The base for rate-limit errors (DeviceMessageRateExceeded, TopicsMessageRateExceeded).
    public var slowBaseMillis: Int64

    public init(baseMillis: Int64 = 1_000, capMillis: Int64 = 900_000, maxAttempts: Int = 12, slowBaseMillis: Int64 = 60_000) {
        self.baseMillis = baseMillis
        self.capMillis = capMillis
        self.maxAttempts = maxAttempts
        self.slowBaseMillis = slowBaseMillis
    }

    /// - Parameter attempts: attempts made so far, including the one that just failed (≥ 1).
    public func next(
        attempts: Int, slow: Bool, retryAfterUntil: Int64?, ttlSeconds: Int, expiresAt: Int64, now: Int64,
        using random: inout some RandomNumberGenerator
    ) -> RetryDecision {
        if ttlSeconds == 0 { return .dead(reason: "Expired") }  // "now or never": one prompt attempt
        if attempts >= maxAttempts { return .dead(reason: "MaxAttempts") }
        var wait = backoff(attempt: attempts, slow: slow, using: &random)
        if let retryAfterUntil {
            let floor = max(0, retryAfterUntil - now) + Int64.random(in: 0...1_000, using: &random)
            wait = max(wait, floor)
        }
        let at = now + wait
        return at >= expiresAt ? .dead(reason: "Expired") : .retry(at: at)
    }

    /// The wait before attempt `attempt + 1`, without the Retry-After floor.
    public func backoff(attempt: Int, slow: Bool, using random: inout some RandomNumberGenerator) -> Int64 {
        let base = slow ? slowBaseMillis : baseMillis
        let doublings = max(0, min(attempt - 1, 40))
        // Compare before shifting so a large attempt number cannot overflow.
        let d = base > (capMillis >> doublings) ? capMillis : min(capMillis, base << doublings)
        let half = d / 2
        return half + Int64.random(in: 0...(d - half), using: &random)
    }
}

public enum RetryDecision: Sendable, Equatable {
    case retry(at: Int64)
    /// `MaxAttempts` or `Expired`.
    case dead(reason: String)
}
