import Support

/// Everything Herald asks of a database, on either engine: the queue's operations (`QueueStore`) and what ingest,
/// the HTTP reads and the maintenance commands need besides. SQLite's `SQLiteQueueStore` and PostgreSQL's
/// `PGQueueStore` conform; the service and every command hold an `any Store` and never know which engine they talk to.
///
/// Like the connections behind it, a store is used by one thread at a time, never from Swift concurrency's
/// cooperative pool (both engines' calls block).
public protocol Store: QueueStore {
    /// Where the data lives, fit for messages and logs: a file path, or a connection string without its password.
    var location: String { get }
    /// How long a `time_to_live: 0` message may wait for its one attempt.
    var ttlZeroWindowMillis: Int64 { get set }

    /// Runs `body` in a write transaction: committed when it returns, rolled back when it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T
    /// Runs `body` in a read transaction, so several reads see one state of the database.
    func snapshot<T>(_ body: () throws -> T) throws -> T

    // MARK: Messages

    // Ingest's rule is `insertMessage` (`Store+Ingest.swift`); these are its operations.

    /// The messages these keys name (`messages.idempotency_key`), those that name one.
    func keyedMessages(_ keys: [MessageKey]) throws -> [MessageKey: KeyedMessage]
    /// Frees an expired key: its message keeps its rows, and the key may name a new one.
    func releaseIdempotencyKey(messageID: String) throws
    /// Writes each message, one queued delivery per target in `insert.lane` (a `users` target expanded as
    /// `MessageInsert` says), and with `collapseHeadKey` each delivery as its target's collapse head (a later one in
    /// `inserts` heading the same target and key wins); PostgreSQL also wakes the apps' claimers at commit. Answers
    /// in order; nil, with nothing written for that message, when its key was taken by another transaction since
    /// `keyedMessages` looked (only where writers run concurrently).
    func storeMessages(_ inserts: [MessageInsert]) throws -> [StoredMessage?]
    func message(id: String) throws -> MessageRecord?
    func messageExists(id: String) throws -> Bool
    /// Stamps the message's `cancelled_at` with `now` unless it has one; false when there is no such message.
    func markCancelled(id: String, now: Int64) throws -> Bool
    /// Messages whose `send_at` is after `now` and that were not cancelled, per `messages.app` (`NewMessage.everyApp`
    /// for a message to users in every app).
    func scheduledMessageCounts(now: Int64) throws -> [String: Int]

    // MARK: Token registry

    /// Registers `token` for `app` and `user`, or moves it to them; its `created_at` (and its place in a `users`
    /// fan-out) stays what its first registration made it. The rule that answers with the record is `upsertToken`
    /// (`Store+Tokens.swift`).
    func registerToken(_ token: String, app: String, user: String?, now: Int64) throws
    func token(_ token: String) throws -> TokenRecord?
    func deleteToken(_ token: String) throws -> Bool
    func tokens(app: String?, user: String?, after: String?, limit: Int) throws -> [TokenRecord]
    /// Events with an id above `after`, oldest first; with `apps`, only theirs (a per-tenant token's feed).
    func tokenEvents(after: Int64, limit: Int, apps: [String]?) throws -> [TokenEventRecord]
    /// The feed's latest events, newest first, those with an id below `before` when given (paging back).
    func recentTokenEvents(before: Int64?, limit: Int) throws -> [TokenEventRecord]
    /// The feed's events about one token of one app, newest first.
    func tokenEvents(app: String, token: String, limit: Int) throws -> [TokenEventRecord]

    // MARK: Outcomes

    /// The outcome feed: outcomes with a seq above `after`, of `app` only when given, in seq (commit) order.
    func outcomes(after: Int64, app: String?, limit: Int) throws -> [OutcomeRecord]
    /// The outcome webhooks' states, by name.
    func outcomeWebhooks() throws -> [OutcomeWebhookState]
    /// Takes (or renews) the lease on webhook `name` for `owner` until `until`, unless another owner's lease is still
    /// good at `now`; creates its row first, acknowledged up to the feed's end (a new webhook starts from now).
    /// Returns its state while `owner` holds it, nil when another does.
    func leaseOutcomeWebhook(_ name: String, owner: String, until: Int64, now: Int64) throws -> OutcomeWebhookState?
    /// Stores how far webhook `name` has got (and `lastError`, at `now`, when an attempt failed since the last save),
    /// renewing `owner`'s lease until `until`; false (nothing changed) when `owner` no longer holds it.
    func saveOutcomeWebhook(
        _ name: String, owner: String, seq: Int64, inFlight: [Int64], skipped: Int64, lastError: String?,
        until: Int64, now: Int64
    ) throws -> Bool

    // MARK: Apps

    func ensureApp(_ name: String) throws
    func apps() throws -> [AppState]
    /// The apps stored in the database (SPEC §22), by name.
    func appDefinitions() throws -> [AppDefinitionRecord]
    /// Each stored app's version, by name: what an instance reads every few seconds to see a change.
    func appDefinitionVersions() throws -> [String: Int64]
    /// Stores `record` as app `record.name`'s definition (a new one, or replacing the one stored), its version one
    /// above the row's; returns the record as stored and whether it is new.
    func putAppDefinition(_ record: AppDefinitionRecord) throws -> (stored: AppDefinitionRecord, created: Bool)
    /// Removes app `name`'s stored definition (its pause state stays); false when it has none.
    func removeAppDefinition(_ name: String, now: Int64) throws -> Bool
    func pauseApp(_ app: String, reason: String, now: Int64) throws -> Bool
    /// Resumes `app`, opens its gate, and resumes (forgets) its gated and paused origins; returns false when
    /// neither the app nor any of its origins was paused.
    func resumeApp(_ app: String) throws -> Bool
    /// Closes the app's gate until `until`, for `reason`, unless it is already closed as long; `now` is when it
    /// closed, kept while the gate stays closed (`herald status`: gated since).
    func closeGate(_ app: String, until: Int64, reason: GateReason, now: Int64) throws
    /// Closes the gate of one push-service origin of `app` as `closeGate` does the app's.
    func closeOriginGate(_ app: String, origin: String, until: Int64, reason: GateReason, now: Int64) throws
    /// Pauses one push-service origin of `app` until the app is resumed; returns false when it was already paused.
    func pauseOrigin(_ app: String, origin: String, reason: String, now: Int64) throws -> Bool
    /// The origins that are gated or paused, of `app` or of every app, by app and origin. Rows whose gate opened by
    /// `now` and that are not paused are left out (and deleted by `forgetOpenOrigins`).
    func originSwitches(app: String?, now: Int64) throws -> [OriginSwitch]
    /// Deletes the origins whose gate opened by `now` and that are not paused; returns how many.
    func forgetOpenOrigins(now: Int64) throws -> Int

    // MARK: API tokens

    // The rule that checks a new token's apps is `createAPIToken` (`Store+APITokens.swift`).

    func insertAPIToken(_ token: APITokenRecord) throws
    /// Every token, revoked ones too unless `activeOnly`, oldest first.
    func apiTokens(activeOnly: Bool) throws -> [APITokenRecord]
    /// Revokes the token with this id; false when there is none, or it was revoked already.
    func revokeAPIToken(id: String, now: Int64) throws -> Bool
    /// Moves each token's `last_used_at` forward to the time given (never back).
    func markAPITokensUsed(_ uses: [(id: String, at: Int64)]) throws

    // MARK: Status

    // The rule that joins these is `appStatuses` (`Store+Status.swift`).

    /// Every app's switches (name, pause, gate), by name, with no figures yet.
    func appSwitches() throws -> [AppStatus]
    /// The app's queued deliveries, and those of them due at `now`.
    func backlog(app: String, now: Int64) throws -> (queued: Int, ready: Int)
    /// In-flight deliveries per app.
    func inflightCounts() throws -> [String: Int]
    /// Dead letters per app; with `since`, only those that died at or after it.
    func deadCounts(since: Int64?) throws -> [String: Int]
    /// Deliveries that became delivered or dropped at or after `since`, per app and state.
    func finishedCounts(since: Int64) throws -> [(app: String, state: DeliveryState, count: Int)]
    func queueDepth() throws -> [QueueDepthRow]

    // MARK: Dead letters

    // Each engine writes `DeadLetterFilter.terms` as its SQL condition; the rules are in `Store+DeadLetters.swift`.

    /// Dead letters matching `filter`, the most recent deaths first.
    func deadLetters(_ filter: DeadLetterFilter, limit: Int) throws -> [DeadLetterRecord]
    /// How many dead letters match `filter`, per app and reason (by app, then reason, a missing reason first, in
    /// bytes).
    func deadLetterGroups(_ filter: DeadLetterFilter) throws -> [DeadLetterGroup]
    /// How many dead letters match `filter` and belong to a message whose TTL has run out: requeued, they would
    /// only expire again, so `requeueDeadLetters` leaves them.
    func expiredDeadLetterCount(_ filter: DeadLetterFilter, now: Int64) throws -> Int
    /// Puts up to `limit` dead letters matching `filter` whose message has not expired back in the queue, due
    /// `now`, with `attempts = 0` and no reason; returns how many. Call inside a write transaction, and again until
    /// it returns 0: each call is one bounded batch.
    func requeueDeadLetters(_ filter: DeadLetterFilter, now: Int64, limit: Int) throws -> Int
    /// Deletes up to `limit` dead letters matching `filter`; returns the message id of each (one per row).
    func deleteDeadLetters(_ filter: DeadLetterFilter, limit: Int) throws -> [String]
    func deadLetterCount() throws -> Int

    // MARK: Retention

    // The rules that combine these are in `Store+Retention.swift`.

    /// Deletes up to `limit` delivered or dropped deliveries last updated before `cutoff`; returns how many. Dead
    /// letters are never touched. Call again until it returns 0.
    func pruneFinishedDeliveries(updatedBefore cutoff: Int64, limit: Int) throws -> Int
    /// How many deliveries `pruneFinishedDeliveries` would delete.
    func finishedDeliveryCount(updatedBefore cutoff: Int64) throws -> Int
    /// The next `limit` messages after `cursor` in id order; nil when there are none.
    func messagePage(after cursor: String, limit: Int) throws -> MessagePage?
    /// Deletes the messages with an id in (`cursor`, `last`] created before `cutoff` that have no delivery left,
    /// those with an idempotency key only when created at or before `keyHorizon`; returns how many.
    func deleteEmptyMessages(after cursor: String, through last: String, createdBefore cutoff: Int64, keyHorizon: Int64)
        throws -> Int
    /// Deletes those of `ids` that have no delivery left, those with an idempotency key only when created at or
    /// before `keyHorizon`; returns how many.
    func deleteEmptyMessages(_ ids: [String], keyHorizon: Int64) throws -> Int
    /// Deletes the oldest token-feed entries recorded before `cutoff`, up to `limit` of them; returns how many. The
    /// feed is only history for backends that follow it: claims read `token_tombstones`.
    func pruneTokenEvents(before cutoff: Int64, limit: Int) throws -> Int
    /// Deletes the oldest outcome-feed entries recorded before `cutoff`, up to `limit` of them; returns how many.
    /// Call again until it returns 0.
    func pruneOutcomes(before cutoff: Int64, limit: Int) throws -> Int
    /// Deletes up to `limit` token tombstones and up to `limit` collapse heads made before `cutoff`; returns how
    /// many.
    func pruneReconciliationState(before cutoff: Int64, limit: Int) throws -> Int
}

/// The one thread that writes, gathering jobs into group commits (`DatabaseWriter` on SQLite, `PGWriter` on
/// PostgreSQL).
public protocol StoreWriter: Sendable {
    /// Queues `work` for the next group commit; `completion` is called on the writer thread after the commit (or
    /// with the error that rolled the job or the group back). Keep completions short.
    ///
    /// - Parameters:
    ///   - durable: false for writes that may be lost in a power cut without harm (a claim's leases: the rows simply
    ///     stay queued); such a group may commit without waiting for the disk.
    ///   - writesOutcomes: true for writes that may end deliveries (answers, a claim's drops, a cancel): the outcome
    ///     feed's writers. PostgreSQL's group takes the feed's lock before its first statement (`PGGroupCommitter`).
    func enqueue<T>(
        durable: Bool,
        writesOutcomes: Bool,
        _ work: @escaping @Sendable (any Store) throws -> T,
        completion: @escaping @Sendable (Result<T, Error>) -> Void)
    /// Stores one write's messages (`Store.insertMessages`: all of them, or none, when one is refused) in the next
    /// group commit; `completion` as `enqueue`'s. A writer may store the messages of a group's writes together:
    /// PostgreSQL's writes them in a few statements (`insertMessages(writes:now:)`) instead of one each.
    func insertMessages(
        _ messages: [NewMessage], completion: @escaping @Sendable (Result<[AcceptedMessage], Error>) -> Void)
    /// Writes queued and not yet taken by the writer thread: how far the writer is behind.
    var backlog: Int { get }
    /// Finishes queued writes and closes the connection.
    func close()
}

extension StoreWriter {
    /// A job of its own, as any other write.
    public func insertMessages(
        _ messages: [NewMessage], completion: @escaping @Sendable (Result<[AcceptedMessage], Error>) -> Void
    ) {
        enqueue({ try $0.insertMessages(messages, now: Clock.nowMillis()) }, completion: completion)
    }

    /// A write that ends no delivery.
    public func enqueue<T>(
        durable: Bool = true,
        _ work: @escaping @Sendable (any Store) throws -> T,
        completion: @escaping @Sendable (Result<T, Error>) -> Void
    ) {
        enqueue(durable: durable, writesOutcomes: false, work, completion: completion)
    }

    /// Runs `work` in the next group commit and waits for the commit. Call from a thread you own.
    public func write<T: Sendable>(_ work: @escaping @Sendable (any Store) throws -> T) throws -> T {
        let rendezvous = Rendezvous<T>()
        enqueue(work) { rendezvous.fulfil($0) }
        return try rendezvous.wait()
    }
}

/// Threads that read, each with its own connection, so HTTP reads and gauges never wait behind the writer.
public protocol StoreReaders: Sendable {
    /// Runs `work` on a reader thread; `completion` gets its result there.
    func enqueue<T>(
        _ work: @escaping @Sendable (any Store) throws -> T,
        completion: @escaping @Sendable (Result<T, Error>) -> Void)
    /// Lets queued reads finish and closes the connections.
    func close()
}

extension StoreReaders {
    /// Runs `work` on a reader thread and waits for it. Call from a thread you own.
    public func read<T: Sendable>(_ work: @escaping @Sendable (any Store) throws -> T) throws -> T {
        let rendezvous = Rendezvous<T>()
        enqueue(work) { rendezvous.fulfil($0) }
        return try rendezvous.wait()
    }
}

/// An engine's error that says whether the same write may succeed later (connection lost, disk full, busy): ingest
/// answers 503 with `Retry-After`, delivery keeps what it has and tries again.
public protocol StoreError: Error {
    var isTransient: Bool { get }
}
