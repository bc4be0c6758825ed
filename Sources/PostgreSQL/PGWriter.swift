import Foundation
import Queue
import Support

/// A writer connection of a Herald to PostgreSQL, owned by one thread: `DatabaseWriter`'s group commit on
/// PostgreSQL. `serve` runs two, the delivery engine's and ingest's (`ServiceDatabase`).
///
/// The thread takes every job waiting (up to `maxGroup`), runs them in one transaction, commits once, and only then
/// answers each job: one WAL flush for the group. Ingest's writes (`insertMessages`) of a group are stored together,
/// in a few statements for all their messages, and the group's BEGIN goes out with its first statement in one
/// pipeline: a group pays round trips, not each message (`PGGroupCommitter`). One failing job does not undo the
/// others: the group is then rolled back and played again with each job inside its own savepoint (savepoints cost
/// round trips, so only a group that needs them pays for them). A job that meets a deadlock or a serialization
/// failure is rolled back to its savepoint and run again (`maxAttempts`). So a job's work may run more than once: it
/// must do nothing but write through the store it is given, and compute its result. A group of only non-durable jobs
/// (a claim's leases) commits with `synchronous_commit = off`.
///
/// When the connection breaks during a group, the server rolls the group back: every job of it is answered with a
/// transient `PGError` (ingest answers 503 with Retry-After), and the thread reconnects with backoff. When it breaks
/// during the COMMIT itself, the group may have committed: the thread reconnects at once and asks the server
/// (`txid_status` of the group's transaction, taken after BEGIN for durable groups) and answers with what it says;
/// only when the server cannot be reached then is the answer "unknown" (a transient error saying so). Until it is
/// back, jobs are answered at once with a transient error instead of waiting for a server that may be gone for
/// minutes. A connection found broken before a group starts (the server restarted while the writer was idle) is
/// reset at once, costing the group nothing when that works.
///
///     let writer = try PGWriter(url: "postgresql://herald:secret@db.internal/herald")
///     let accepted = try writer.write { try $0.insertMessage(message, now: Clock.nowMillis()) }
public final class PGWriter: StoreWriter {
    /// One write: its work, run on the writer thread, and the answer to its caller.
    final class Job: @unchecked Sendable {
        /// Runs the work; returns the error it threw (its writes must then be undone), nil when it succeeded.
        let run: (PGQueueStore) -> Error?
        /// Answers the caller: with the work's own result when given nil, else with the error given (the work's own
        /// failure, or the group's).
        let complete: (Error?) -> Void
        /// Whether its commit must wait for the WAL flush (see `enqueue(durable:)`).
        let durable: Bool
        /// Whether it may end deliveries: its group then takes the outcome feed's lock first (`PGGroupCommitter`).
        let writesOutcomes: Bool
        /// Ingest's messages, when the job is a write of them (`insertMessages`): the committer stores those of
        /// every such job of a group in one `insertMessages(writes:now:)` call rather than running each job.
        let write: MessageWrite?

        init(
            durable: Bool, writesOutcomes: Bool, write: MessageWrite? = nil,
            run: @escaping (PGQueueStore) -> Error?, complete: @escaping (Error?) -> Void
        ) {
            self.durable = durable
            self.writesOutcomes = writesOutcomes
            self.write = write
            self.run = run
            self.complete = complete
        }
    }

    /// A job's messages, and how it takes its answer when they were stored with a group's others.
    struct MessageWrite {
        let messages: [NewMessage]
        /// Keeps the answer as the job's result; returns the error when it is one (the write was refused).
        let take: (Result<[AcceptedMessage], Error>) -> Error?
    }

    private final class Box<T>: @unchecked Sendable { var result: Result<T, Error>? }

    /// The largest number of jobs committed together.
    static let maxGroup = 1024
    /// How many times a job is run when it keeps meeting deadlocks or serialization failures.
    static let maxAttempts = 4

    private let queue = JobQueue<Job>()
    private let link: PGWriterLink
    private let finished = Rendezvous<Void>()
    /// The server and database, password masked: what messages and logs may show.
    public let location: String

    /// Connects to `url` (`postgres://`, `postgresql://` or a libpq keyword/value string), brings the schema up to
    /// date with `PGMigrator` (unless `migrating` is false: a second writer of a process whose first one did), and
    /// starts the writer thread.
    ///
    /// - Throws: `PGError` naming the server (password masked) when it cannot be reached or refuses the login;
    ///   `PGMigrator.NewerDatabaseError` when the schema is newer than this binary.
    /// - Parameter role: names the connection (`application_name` `herald-<role>`, as `pg_stat_activity` shows it)
    ///   and the thread (`herald-pg-<role>`): `serve` has a `writer` and an `ingest` one.
    public init(url: String, connectTimeoutSeconds: Int = 10, role: String = "writer", migrating: Bool = true) throws {
        let connection = try PGConnection(
            url: url, connectTimeoutSeconds: connectTimeoutSeconds, applicationName: "herald-\(role)")
        if migrating { try PGMigrator.migrate(connection) }
        location = connection.redactedURL
        link = PGWriterLink(location: location)
        let committer = UncheckedBox(
            PGGroupCommitter(store: PGQueueStore(connection: connection), queue: queue, link: link))
        let thread = Thread { [finished] in
            Thread.current.name = "herald-pg-\(role)"  // set from the thread itself, so `top -H` and `perf` see it
            committer.take().run()
            finished.fulfil(.success(()))
        }
        thread.start()
    }

    /// Queues `work` for the next group commit; `completion` is called on the writer thread after the commit (or
    /// with the error that rolled the job or the group back). Keep completions short.
    ///
    /// While the writer has no connection, `completion` is called at once, on the calling thread, with a
    /// `PGError` whose `isConnectionLost` (and so `isTransient`) is true; `work` does not run.
    ///
    /// - Parameters:
    ///   - durable: false for writes that may be lost in a server crash without harm (a claim's leases: the rows
    ///     simply stay queued). A group of only such jobs commits without waiting for the WAL flush; any later
    ///     durable commit flushes them too.
    ///   - writesOutcomes: true for writes that may end deliveries: their group takes the outcome feed's lock before
    ///     its first statement, so that it never waits for that lock while holding rows (`PGGroupCommitter`).
    public func enqueue<T>(
        durable: Bool, writesOutcomes: Bool, _ work: @escaping @Sendable (any Store) throws -> T,
        completion: @escaping @Sendable (Result<T, Error>) -> Void
    ) {
        enqueue(
            durable: durable, writesOutcomes: writesOutcomes, { (store: PGQueueStore) in try work(store) },
            completion: completion)
    }

    /// `enqueue`, with PostgreSQL's store itself (tests and PostgreSQL-only maintenance).
    public func enqueue<T>(
        durable: Bool = true, writesOutcomes: Bool = false,
        _ work: @escaping @Sendable (PGQueueStore) throws -> T,
        completion: @escaping @Sendable (Result<T, Error>) -> Void
    ) {
        push(durable: durable, writesOutcomes: writesOutcomes, work, write: nil, completion: completion)
    }

    /// Queues one write's messages; the committer stores them with those of the group's other writes, in a few
    /// statements for all of them (`PGGroupCommitter`).
    public func insertMessages(
        _ messages: [NewMessage], completion: @escaping @Sendable (Result<[AcceptedMessage], Error>) -> Void
    ) {
        push(
            durable: true, { try $0.insertMessages(messages, now: Clock.nowMillis()) },
            write: { box in
                MessageWrite(messages: messages) { result in
                    box.result = result
                    if case .failure(let error) = result { return error }
                    return nil
                }
            },
            completion: completion)
    }

    private func push<T>(
        durable: Bool, writesOutcomes: Bool = false, _ work: @escaping @Sendable (PGQueueStore) throws -> T,
        write: ((Box<T>) -> MessageWrite)?, completion: @escaping @Sendable (Result<T, Error>) -> Void
    ) {
        let box = Box<T>()
        let job = Job(
            durable: durable, writesOutcomes: writesOutcomes, write: write?(box),
            run: { store in
                box.result = Result { try work(store) }
                if case .failure(let error) = box.result! { return error }
                return nil
            },
            complete: { groupError in
                if let groupError { completion(.failure(groupError)) } else { completion(box.result!) }
            })
        if let refusal = link.push(job, onto: queue) { completion(.failure(refusal)) }
    }

    /// Runs `work` in the next group commit and waits for the commit. Call from a thread you own.
    public func write<T: Sendable>(_ work: @escaping @Sendable (PGQueueStore) throws -> T) throws -> T {
        let rendezvous = Rendezvous<T>()
        enqueue(work) { rendezvous.fulfil($0) }
        return try rendezvous.wait()
    }

    /// Writes queued and not yet taken by the writer thread: how far the writer is behind.
    public var backlog: Int { queue.count }

    /// False while the writer has lost its connection and is reconnecting (jobs are then refused at once).
    public var isConnected: Bool { link.isConnected }

    /// Finishes the queued writes and closes the connection. While the connection is lost it stops reconnecting;
    /// the jobs queued then have already been answered.
    public func close() {
        link.close()
        queue.close()
        try? finished.wait()
    }
}

/// Whether the writer has a connection, shared by the writer thread and every thread that enqueues: a job is
/// pushed under the same lock that marks the connection lost, so once the writer has marked it lost and answered
/// the queued jobs, no job can slip into the queue to wait for a server that is gone.
final class PGWriterLink: @unchecked Sendable {
    private let condition = NSCondition()
    private let location: String
    /// Why the connection is lost; nil while connected.
    private var lost: PGError?
    private var closing = false

    init(location: String) {
        self.location = location
    }

    var isConnected: Bool {
        condition.lock()
        defer { condition.unlock() }
        return lost == nil
    }

    /// Pushes `job` onto `queue`; returns the error to answer it with instead, when the connection is lost or the
    /// writer closed.
    func push<Job>(_ job: Job, onto queue: JobQueue<Job>) -> PGError? {
        condition.lock()
        defer { condition.unlock() }
        if let lost {
            return PGError(
                sqlState: lost.sqlState ?? "08006",
                message: "no connection to PostgreSQL at \(location), reconnecting; nothing was written: "
                    + lost.message,
                isConnectionLost: true)
        }
        guard queue.push(job) else { return PGError(sqlState: "08003", message: "the PostgreSQL writer is closed") }
        return nil
    }

    /// From now on jobs are refused with `cause` until `markConnected`.
    func markLost(_ cause: PGError) {
        condition.lock()
        lost = cause
        condition.unlock()
    }

    func markConnected() {
        condition.lock()
        lost = nil
        condition.unlock()
    }

    func close() {
        condition.lock()
        closing = true
        condition.broadcast()
        condition.unlock()
    }

    /// Waits `seconds`, or less when the writer is closed meanwhile; returns true when it is closing.
    func pause(seconds: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while !closing && condition.wait(until: deadline) {}
        return closing
    }
}
