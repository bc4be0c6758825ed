/// A send-rate limit: `ratePerSecond` tokens a second, up to a burst of 50 ms worth (at least one). Pure: the
/// caller passes the clock in, so any count over any window can be checked without waiting.
///
/// ```swift
/// var bucket = TokenBucket(ratePerSecond: 500)
/// if bucket.take(now: Clock.nowMillis()) { send() } else { wake(at: bucket.nextTokenAt(now: now)) }
/// ```
///
/// Over any window of `t` ms, at most `burst + ratePerSecond × t / 1000` tokens are taken.
struct TokenBucket: Sendable {
    let ratePerSecond: Double
    let burst: Double
    private var tokens: Double
    private var updatedAt: Int64?

    init(ratePerSecond: Double) {
        precondition(ratePerSecond > 0, "a rate limit must be positive")
        self.ratePerSecond = ratePerSecond
        // Small enough that a second never carries much more than the rate, large enough that a high rate is
        // paced by a timer every few milliseconds rather than for every request.
        burst = max(1, ratePerSecond / 20)
        tokens = burst
    }

    /// Takes a token if one is there.
    mutating func take(now: Int64) -> Bool {
        refill(now: now)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    /// When the next token will be there (now, if one is).
    mutating func nextTokenAt(now: Int64) -> Int64 {
        refill(now: now)
        guard tokens < 1 else { return now }
        return now + Int64(((1 - tokens) * 1000 / ratePerSecond).rounded(.up))
    }

    private mutating func refill(now: Int64) {
        if let updatedAt, now > updatedAt {
            tokens = min(burst, tokens + Double(now - updatedAt) * ratePerSecond / 1000)
        }
        if updatedAt.map({ now > $0 }) ?? true { updatedAt = now }
    }
}
