import Support

/// The named operations a database engine gives the queue (as River's driver interface does): each is one
/// statement, or a few, of that engine's SQL, and decides nothing. The rules that combine them — what a claim
/// settles before anything is sent, what an answer does to the token registry — are written once, over this
/// protocol, in `QueueStore+Claim.swift` and `QueueStore+Outcomes.swift`. SQLite's translation is
/// `Storage/SQLiteQueueStore.swift`, PostgreSQL's `PostgreSQL/PGQueueStore.swift`.
///
/// Every operation runs in the caller's write transaction. Outcome operations touch a row only while its lease is
/// held (`HeldLease`: still in flight under the same owner), so a late or repeated answer never overwrites a row
/// that was rescued or finished meanwhile.
public protocol QueueStore: AnyObject {
    // MARK: Apps

    /// The app's switches as stored; nil for an app never seen.
    func appState(_ name: String) throws -> AppState?

    // MARK: Claim

    /// Leases up to `limit` ready rows (`queued`, due at `now`) of `app` in one lane for `leaseMillis` on the
    /// engine's lease clock (see `renewLeases`), the oldest `next_attempt_at` first, and returns them in that order
    /// (PostgreSQL sorts its `RETURNING` by `next_attempt_at, id`).
    func leaseReady(
        app: String, lane: PriorityLane, limit: Int, owner: String, leaseMillis: Int64, now: Int64
    ) throws -> [ClaimedDelivery]
    /// What the sender needs of a message; nil when it is gone.
    func claimedMessage(id: String) throws -> ClaimedMessage?
    /// `claimedMessage` for each of `ids`, by id (a message that is gone is absent). An engine may read them in one
    /// statement; by default it is one look-up each.
    func claimedMessages(ids: [String]) throws -> [String: ClaimedMessage]
    /// The earliest `next_attempt_at` of the app's queued rows in one lane.
    func nextDue(app: String, lane: PriorityLane) throws -> Int64?
    /// The head of (`app`, `collapseKey`, `token`), if any.
    func collapseHead(app: String, collapseKey: String, token: String) throws -> CollapseHead?
    /// Whether any token has a tombstone (a cheap check that skips every per-row look-up when none has).
    func hasTombstones() throws -> Bool
    func tombstone(app: String, token: String) throws -> TokenTombstone?
    /// Whether `messageID` has a delivery to `token` other than `deliveryID`.
    func messageTargets(_ messageID: String, token: String, besides deliveryID: Int64) throws -> Bool
    /// Points a leased delivery at another token (a canonical id).
    func retarget(delivery id: Int64, to token: String, now: Int64) throws

    // MARK: Outcomes

    /// `delivered`, with FCM's message id and canonical token; `charge` attempts added.
    func markDelivered(
        _ id: Int64, fcmMessageID: String?, canonicalToken: String?, status: Int?, charge: Int64, lease: HeldLease
    ) throws -> LeasedRow?
    /// Many plain successes at once (no canonical token); returns the ids written.
    func markDelivered(
        _ rows: [(id: Int64, fcmMessageID: String?, status: Int?)], charge: Int64, lease: HeldLease
    ) throws -> [Int64]
    /// `dead` or `dropped` with `reason`.
    func markEnded(
        _ id: Int64, state: DeliveryState, reason: DeliveryReason, status: Int?, charge: Int64, lease: HeldLease
    ) throws -> LeasedRow?
    /// Back to `queued`, due at `at`, with the error that made it retry.
    func markRetry(
        _ id: Int64, at: Int64, reason: DeliveryReason, status: Int?, charge: Int64, lease: HeldLease
    ) throws -> LeasedRow?
    /// Back to `queued` as it was before the claim, nothing charged (a paused app, a shutdown).
    func markReleased(_ id: Int64, lease: HeldLease) throws -> LeasedRow?
    /// Back to `queued`, due at `until`, nothing charged; `reason` and `status`, when given, become the row's last
    /// error (otherwise it keeps the one it had).
    func markDeferred(_ id: Int64, until: Int64, reason: DeliveryReason?, status: Int?, lease: HeldLease) throws
        -> LeasedRow?
    /// Every still-queued delivery of the message ends in `state` (`dead` or `dropped`) with `reason`, those to
    /// `app` only when one is given; returns how many.
    func endQueuedDeliveries(
        of messageID: String, app: String?, state: DeliveryState, reason: DeliveryReason, now: Int64
    ) throws -> Int

    // MARK: Leases

    // A lease is stamped, renewed and found expired on one clock, the engine's lease clock. SQLite, which one
    // process uses at a time, takes the `now` it is given. PostgreSQL, shared by instances whose clocks may
    // disagree, uses its own (`PGQueueStore.leaseClock`), so an instance whose clock runs ahead never takes back
    // another's live lease, and one whose clock lags never stamps a lease that looks expired to the others.

    /// Extends the leases `owner` still holds on `ids` to `leaseMillis` from now; returns how many.
    func renewLeases(_ ids: [Int64], owner: String, leaseMillis: Int64, now: Int64) throws -> Int
    /// Returns to `queued` every row whose lease expired by now, each only if still under the very lease that was
    /// read; returns how many.
    func rescueExpiredLeases(now: Int64) throws -> Int
    /// Returns to `queued` every lease not held by `owner`; returns how many.
    func releaseForeignLeases(owner: String, now: Int64) throws -> Int

    // MARK: Token registry

    /// Removes the token from `app`'s registry — when `unchangedSince` is given, only if it was not registered
    /// (again) after that time; whether a row went.
    func unregister(_ token: String, app: String, unchangedSince: Int64?) throws -> Bool
    /// The app a token is registered to, if any.
    func registeredApp(of token: String) throws -> String?
    /// Renames a registered token, keeping its user; whether a row changed.
    func renameRegistration(_ old: String, to new: String, now: Int64) throws -> Bool
    /// Deletes a registered token whatever its app; whether a row changed.
    func deleteRegistration(_ token: String) throws -> Bool
    /// Appends the event to the feed and makes it the token's tombstone.
    func record(_ event: TokenEvent, now: Int64) throws
}

extension QueueStore {
    public func claimedMessages(ids: [String]) throws -> [String: ClaimedMessage] {
        var messages: [String: ClaimedMessage] = [:]
        for id in ids where messages[id] == nil {
            messages[id] = try claimedMessage(id: id)
        }
        return messages
    }
}
