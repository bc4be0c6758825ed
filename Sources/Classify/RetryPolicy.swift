/// When a retryable delivery is tried again (SPEC §5). Pure: it never sleeps, and its randomness comes from the
/// caller, so a seeded generator makes every decision reproducible.
///
/// ```swift
/// var random = SystemRandomNumberGenerator()
/// switch RetryPolicy().next(attempts: 3, slow: false, retryAfterUntil: nil, ttlSeconds: 3600,
///                           expiresAt: expiresAt, now: now, using: &random) {
/// case .retry(let at): ...        // now + 2…4 s
/// case .dead(let reason): ...     // .maxAttempts or .expired
/// }
/// ```
public struct RetryPolicy: Sendable {
    public var baseMillis: Int64
    public var capMillis: Int64
    public var maxAttempts: Int
    /// The base for rate-limit errors (`DeviceMessageRateExceeded`, `TopicsMessageRateExceeded`).
    public var slowBaseMillis: Int64

    public init(baseMillis: Int64 = 1_000, capMillis: Int64 = 900_000, maxAttempts: Int = 12,
                slowBaseMillis: Int64 = 60_000) {
        self.baseMillis = baseMillis
        self.capMillis = capMillis
        self.maxAttempts = maxAttempts
        self.slowBaseMillis = slowBaseMillis
    }

    /// The decision after a failed attempt.
    ///
    /// - `ttlSeconds == 0`: dead `Expired`; such a message gets one prompt attempt and no retry.
    /// - `attempts >= maxAttempts`: dead `MaxAttempts`.
    /// - Otherwise the wait is the backoff, raised to `retryAfterUntil - now` plus up to 1 s of jitter when a
    ///   `Retry-After` asks for longer; a retry time at or past `expiresAt` is dead `Expired`, since the message
    ///   would be expired before it could be sent.
    ///
    /// The generator is drawn once for the backoff, then once more only when `retryAfterUntil` is given.
    ///
    /// - Parameter attempts: attempts made so far including the one that just failed (≥ 1).
    public func next(
        attempts: Int, slow: Bool, retryAfterUntil: Int64?, ttlSeconds: Int, expiresAt: Int64,
        now: Int64, using random: inout some RandomNumberGenerator
    ) -> RetryDecision {
        if ttlSeconds == 0 { return .dead(reason: .expired) }
        if attempts >= maxAttempts { return .dead(reason: .maxAttempts) }
        var wait = backoff(attempt: attempts, slow: slow, using: &random)
        if let retryAfterUntil {
            let jitter = Int64.random(in: 0...1000, using: &random)
            let floor = retryAfterUntil.saturatingSubtract(now).saturatingAdd(jitter)
            wait = max(wait, floor)
        }
        let at = now.saturatingAdd(wait)
        return at >= expiresAt ? .dead(reason: .expired) : .retry(at: at)
    }

    /// The backoff wait for attempt `attempt` without the Retry-After floor: `d = min(cap, base·2^(n-1))`,
    /// wait = `d/2 + uniform(0, d - d/2)`, so it lies in `d/2…d`. `slow` uses `slowBaseMillis` as the base.
    /// Attempts below 1 count as 1; any attempt number is safe (the cap is applied before the shift overflows).
    public func backoff(attempt: Int, slow: Bool, using random: inout some RandomNumberGenerator) -> Int64 {
        let ceiling = ceiling(attempt: attempt, slow: slow)
        let half = ceiling / 2
        return half + Int64.random(in: 0...(ceiling - half), using: &random)
    }

    /// `d = min(cap, base·2^(n-1))`, never negative.
    func ceiling(attempt: Int, slow: Bool) -> Int64 {
        let base = max(0, slow ? slowBaseMillis : baseMillis)
        let cap = max(0, capMillis)
        let exponent = max(1, attempt) - 1
        guard base > 0 else { return 0 }
        guard base < cap, exponent < 63 else { return cap }
        let (product, overflow) = base.multipliedReportingOverflow(by: Int64(1) << exponent)
        return overflow ? cap : min(cap, product)
    }
}
