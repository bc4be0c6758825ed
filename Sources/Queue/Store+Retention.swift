/// How long reconciliation's bookkeeping (token tombstones, collapse heads) is kept: FCM's longest TTL (4 weeks)
/// and a day of margin. Every delivery either could still affect was queued before it and has expired by then, and
/// a claim settles expiry before reconciliation, so trimming them changes no outcome.
public let reconciliationHorizonMillis: Int64 = (2_419_200 + 86_400) * 1000

/// Retention's rules, the same on every engine (`herald prune`, the service's housekeeping). Dead letters are never
/// deleted here: only `dead purge` deletes them.
extension Store {
    /// Looks at the next `limit` messages after `cursor` in id order (ids sort by creation time) and deletes those
    /// created before `cutoff` that have no delivery left, unless an idempotency key still answers with them.
    /// Returns how many it deleted and where to continue, or nil once it has reached messages created after
    /// `cutoff`. Start with `cursor` "". Call inside a write transaction.
    ///
    /// A message with a dead letter keeps it as a delivery, so it is never deleted here.
    public func pruneEmptyMessages(
        createdBefore cutoff: Int64, now: Int64, after cursor: String, limit: Int
    ) throws -> (deleted: Int, next: String?) {
        guard let page = try messagePage(after: cursor, limit: limit) else { return (0, nil) }
        let deleted = try deleteEmptyMessages(
            after: cursor, through: page.last, createdBefore: cutoff, keyHorizon: idempotencyHorizon(now: now))
        let done = page.count < limit || page.newestCreatedAt >= cutoff
        return (deleted, done ? nil : page.last)
    }

    /// Deletes up to `limit` entries of each feed backends follow — token events and outcomes — recorded before
    /// `cutoff`: the two share one retention (`serve --token-event-retention`, `prune --events-older-than`), and
    /// neither is read by the queue itself. Call inside a write transaction, and again until both return 0.
    public func pruneFeeds(before cutoff: Int64, limit: Int) throws -> (tokenEvents: Int, outcomes: Int) {
        (try pruneTokenEvents(before: cutoff, limit: limit), try pruneOutcomes(before: cutoff, limit: limit))
    }

    /// Deletes up to `limit` token tombstones and up to `limit` collapse heads older than
    /// `reconciliationHorizonMillis` before `now`; returns how many.
    public func pruneReconciliationState(now: Int64, limit: Int) throws -> Int {
        try pruneReconciliationState(before: now - reconciliationHorizonMillis, limit: limit)
    }
}

/// The next page of messages in id order, as retention walks them (`Store.messagePage`).
public struct MessagePage: Sendable, Equatable {
    /// The page's last (highest) id.
    public var last: String
    /// The latest `created_at` on the page.
    public var newestCreatedAt: Int64
    public var count: Int

    public init(last: String, newestCreatedAt: Int64, count: Int) {
        (self.last, self.newestCreatedAt, self.count) = (last, newestCreatedAt, count)
    }
}
