import Queue

extension ClaimedMessage {
    /// Whole seconds left of the message's TTL at `now`, as every provider sends it; never the original TTL once
    /// time has passed.
    public func remainingTTL(now: Int64) -> Int {
        guard ttlSeconds > 0 else { return 0 }
        return Int(max(0, (expiresAt - now) / 1000))
    }
}
