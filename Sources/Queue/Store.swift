import Support

/// Everything Herald asks of a database, on either engine: the queue's operations (`QueueStore`) and what ingest,
/// the HTTP reads and the maintenance commands need besides. SQLite's `Connection` and PostgreSQL's `PGQueueStore`
/// conform; the service and every command hold an `any Store` and never know which engine they talk to.
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

    func insertMessage(_ message: NewMessage, now: Int64) throws -> AcceptedMessage
    func message(id: String) throws -> MessageRecord?
    /// Drops the message's queued deliveries; nil when there is no such message, else how many were dropped.
    func cancelMessage(id: String, now: Int64) throws -> Int?

    // MARK: Token registry

    func upsertToken(_ token: String, app: String, user: String?, now: Int64) throws -> (TokenRecord, created: Bool)
    func token(_ token: String) throws -> TokenRecord?
    func deleteToken(_ token: String) throws -> Bool
    func tokens(app: String?, user: String?, after: String?, limit: Int) throws -> [TokenRecord]
    func tokenEvents(after: Int64, limit: Int) throws -> [TokenEventRecord]
    /// The feed's latest events, newest first, those with an id below `before` when given (paging back).
    func recentTokenEvents(before: Int64?, limit: Int) throws -> [TokenEventRecord]
    /// The feed's events about one token of one app, newest first.
    func tokenEvents(app: String, token: String, limit: Int) throws -> [TokenEventRecord]

    // MARK: Apps

    func ensureApp(_ name: String) throws
    func apps() throws -> [AppState]
    func pauseApp(_ app: String, reason: String, now: Int64) throws -> Bool
    func resumeApp(_ app: String) throws -> Bool
    /// Closes the app's gate until `until`, for `reason`, unless it is already closed as long; `now` is when it
    /// closed, kept while the gate stays closed (`herald status`: gated since).
    func closeGate(_ app: String, until: Int64, reason: GateReason, now: Int64) throws

    // MARK: Status

    /// `lastMinute: false` leaves `finishedLastMinute` at zero: counting what finished in the last minute reads an
    /// index entry per send (~500,000 at FCM's full rate), more than the gauges' refresh should cost.
    func appStatuses(now: Int64, lastMinute: Bool) throws -> [AppStatus]
    func queueDepth() throws -> [QueueDepthRow]

    // MARK: Dead letters

    func deadLetters(_ filter: DeadLetterFilter, limit: Int) throws -> [DeadLetterRecord]
    func deadLetter(id: Int64) throws -> DeadLetterRecord?
    func deadLetterGroups(_ filter: DeadLetterFilter) throws -> [DeadLetterGroup]
    func expiredDeadLetterCount(_ filter: DeadLetterFilter, now: Int64) throws -> Int
    func requeueDeadLetters(_ filter: DeadLetterFilter, now: Int64, limit: Int) throws -> Int
    func purgeDeadLetters(_ filter: DeadLetterFilter, now: Int64, limit: Int) throws -> (deliveries: Int, messages: Int)
    func deadLetterCount() throws -> Int

    // MARK: Retention

    func pruneFinishedDeliveries(updatedBefore cutoff: Int64, limit: Int) throws -> Int
    func finishedDeliveryCount(updatedBefore cutoff: Int64) throws -> Int
    func pruneEmptyMessages(
        createdBefore cutoff: Int64, now: Int64, after cursor: String, limit: Int
    ) throws -> (deleted: Int, next: String?)
    func pruneTokenEvents(before cutoff: Int64, limit: Int) throws -> Int
    func pruneReconciliationState(now: Int64, limit: Int) throws -> Int
}

/// The one thread that writes, gathering jobs into group commits (`DatabaseWriter` on SQLite, `PGWriter` on
/// PostgreSQL).
public protocol StoreWriter: Sendable {
    /// Queues `work` for the next group commit; `completion` is called on the writer thread after the commit (or
    /// with the error that rolled the job or the group back). Keep completions short.
    ///
    /// - Parameter durable: false for writes that may be lost in a power cut without harm (a claim's leases: the
    ///   rows simply stay queued); such a group may commit without waiting for the disk.
    func enqueue<T>(
        durable: Bool,
        _ work: @escaping @Sendable (any Store) throws -> T,
        completion: @escaping @Sendable (Result<T, Error>) -> Void)
    /// Writes queued and not yet taken by the writer thread: how far the writer is behind.
    var backlog: Int { get }
    /// Finishes queued writes and closes the connection.
    func close()
}

extension StoreWriter {
    public func enqueue<T>(
        _ work: @escaping @Sendable (any Store) throws -> T,
        completion: @escaping @Sendable (Result<T, Error>) -> Void
    ) {
        enqueue(durable: true, work, completion: completion)
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
