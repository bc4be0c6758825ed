import CSQLite
import Foundation
import Queue
import Support

/// How hard a commit tries to reach the disk before the caller is answered.
public enum Durability: String, Sendable, CaseIterable {
    /// fsync the WAL on every commit: survives a power cut.
    case full
    /// no fsync per commit: survives a process crash, not a power cut.
    case normal
}

/// The one writer connection of a database file, owned by one thread.
///
/// Writes from many threads are gathered: the writer thread takes every job waiting, runs them all in one
/// `BEGIN IMMEDIATE` transaction (each inside its own savepoint, so one failing job does not undo the others),
/// commits once, and only then completes each job. With `Durability.full` that is one fsync for the group:
/// group commit. When SQLite itself rolls the whole transaction back (disk full, I/O error), every job of the group
/// is answered with an error and none is stored. The WAL is copied into the database file beside it, on
/// `Checkpointer`'s thread.
public final class DatabaseWriter: StoreWriter {
    private final class Job: @unchecked Sendable {
        /// Runs the work; returns the error it threw (its writes must then be undone), nil when it succeeded.
        let run: (SQLiteQueueStore) -> Error?
        /// Answers the caller: with the work's own result when given nil, else with the error given.
        let complete: (Error?) -> Void
        /// Whether its commit must reach the disk before it completes (see `enqueue(durable:)`).
        let durable: Bool

        init(durable: Bool, run: @escaping (SQLiteQueueStore) -> Error?, complete: @escaping (Error?) -> Void) {
            self.durable = durable
            self.run = run
            self.complete = complete
        }
    }

    private final class Box<T>: @unchecked Sendable { var result: Result<T, Error>? }

    private let queue = JobQueue<Job>()
    private let finished = Rendezvous<Void>()
    private let durability: Durability
    public let path: String
    /// The largest number of jobs committed together.
    private static let maxGroup = 4096
    /// The WAL's size, in pages, past which a commit checkpoints it into the database file itself and so lets the
    /// WAL start over (SQLite's automatic checkpoint mark is 1,000; `Checkpointer` copies frames beside the writer
    /// meanwhile). A multicast drain writes the same hot pages (the indexes' insertion points, the outcome feed's
    /// tail) into the WAL over and over: every checkpoint the writer waits for syncs the database file, and ten times
    /// fewer of them made HMS's drain (`Benchmarks/hms.sh`) 1.11× faster, by the same instruction count. The WAL
    /// file then stays near 40 MB (4 KiB pages) rather than 4 MB.
    static let checkpointFrames = 10_000

    /// Opens the database (creating it 0600), sets WAL and durability and checks that both took (throwing
    /// `DatabaseRequirementError` when not), applies migrations, starts the thread.
    public init(path: String, durability: Durability = .full) throws {
        self.path = path
        self.durability = durability
        let connection = try Connection(path: path)
        try connection.requireWAL()
        try connection.setSynchronous(durability)
        // Every job runs in a savepoint, so a statement that changes many rows (a claim, a batch of outcomes) keeps
        // a statement journal, which SQLite spills to a temporary file past 64 KiB: thousands of small writes a
        // second at FCM's rate. In memory it holds what the statement changed, until the statement ends.
        try connection.execute("PRAGMA temp_store = MEMORY")
        try Migrator.migrate(connection)
        let checkpointer = try Checkpointer(path: path)
        checkpointer.install(on: connection)
        let box = UncheckedBox(connection)
        let thread = Thread { [queue, finished, checkpointer] in
            Thread.current.name = "herald-writer"  // set from the thread itself, so `top -H` and `perf` see it
            Self.loop(connection: box.take(), queue: queue, durability: durability, checkpointer: checkpointer)
            finished.fulfil(.success(()))
        }
        thread.start()
    }

    /// Queues `work` for the next group commit; `completion` is called on the writer thread after the commit
    /// (or with the error that rolled the job or the group back). Keep completions short.
    ///
    /// - Parameters:
    ///   - durable: false for writes that may be lost in a power cut without harm (a claim's leases: the rows simply
    ///     stay queued). A group of only such jobs commits without the fsync of `Durability.full`; any later durable
    ///     commit makes them durable too.
    ///   - writesOutcomes: changes nothing here: one writer numbers the outcome feed's rows in the order they commit.
    public func enqueue<T>(
        durable: Bool, writesOutcomes: Bool, _ work: @escaping @Sendable (any Store) throws -> T,
        completion: @escaping @Sendable (Result<T, Error>) -> Void
    ) {
        enqueue(durable: durable, { (store: SQLiteQueueStore) in try work(store) }, completion: completion)
    }

    /// `enqueue`, with SQLite's store itself and through it the connection (tests and SQLite-only maintenance).
    public func enqueue<T>(
        durable: Bool = true,
        _ work: @escaping @Sendable (SQLiteQueueStore) throws -> T,
        completion: @escaping @Sendable (Result<T, Error>) -> Void
    ) {
        let box = Box<T>()
        let job = Job(
            durable: durable,
            run: { store in
                box.result = Result { try work(store) }
                if case .failure(let error) = box.result! { return error }
                return nil
            },
            complete: { commitError in
                if let commitError { completion(.failure(commitError)) } else { completion(box.result!) }
            })
        if !queue.push(job) { completion(.failure(SQLiteError(code: SQLITE_MISUSE, message: "database is closed"))) }
    }

    /// Runs `work` in the next group commit and waits for the commit. Call from a thread you own.
    public func write<T: Sendable>(_ work: @escaping @Sendable (SQLiteQueueStore) throws -> T) throws -> T {
        let rendezvous = Rendezvous<T>()
        enqueue(work) { rendezvous.fulfil($0) }
        return try rendezvous.wait()
    }

    /// Writes queued and not yet taken by the writer thread: how far the writer is behind.
    public var backlog: Int { queue.count }

    /// Finishes queued writes, checkpoints the WAL into the database file, and closes the connection.
    public func close() {
        queue.close()
        try? finished.wait()
    }

    private static func loop(
        connection: Connection, queue: JobQueue<Job>, durability: Durability, checkpointer: Checkpointer
    ) {
        let store = SQLiteQueueStore(connection: connection)
        // The level in force; nil when a switch failed and reading it back failed too.
        var level: Durability? = durability
        while true {
            var group = queue.popBatch(limit: maxGroup)
            if group.isEmpty { break }
            if durability == .full {
                // The pragma cannot change inside a transaction: set it between groups, only when it differs.
                let wanted: Durability = group.contains(where: \.durable) ? .full : .normal
                if level != wanted {
                    do {
                        try connection.setSynchronous(wanted)
                        level = wanted
                    } catch {
                        level = try? connection.synchronous()
                        // Staying at FULL is only slower; committing a durable job without its fsync would
                        // acknowledge what a power cut can take back.
                        if wanted == .full, level != .full {
                            Log.error("cannot switch to synchronous=FULL; refusing this group's durable writes", [
                                "error": .string("\(error)"),
                            ])
                            for job in group where job.durable { job.complete(error) }
                            group.removeAll(where: \.durable)
                        } else {
                            Log.warn("cannot switch synchronous", ["error": .string("\(error)")])
                        }
                    }
                }
            }
            if !group.isEmpty { commit(group, on: store) }
        }
        checkpointer.uninstall(from: connection)
        checkpointer.close()
        do {
            try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        } catch {
            Log.warn("checkpoint at close failed", ["error": .string("\(error)")])
        }
    }

    /// Runs `group` in one transaction, each job in a savepoint (a lone job needs none), and answers every job.
    ///
    /// SQLite may roll back the whole transaction on its own when a statement fails with `SQLITE_FULL`,
    /// `SQLITE_IOERR` or `SQLITE_NOMEM` ("Response To Errors Within A Transaction"). Its savepoints are gone then,
    /// and the next `SAVEPOINT` would silently open a new transaction that its `RELEASE` commits: jobs stored but
    /// answered with an error. So after every job the transaction is checked, and once it is gone no further job
    /// runs and every job of the group is answered with an error.
    ///
    /// Related SQLite documentation: https://sqlite.org/lang_transaction.html
    private static func commit(_ group: [Job], on store: SQLiteQueueStore) {
        let connection = store.connection
        if connection.isInTransaction {
            // Only a failed ROLLBACK leaves one behind; BEGIN would fail for this and every later group.
            rollBack(connection)
        }
        do {
            try connection.executeCached("BEGIN IMMEDIATE")
        } catch {
            for job in group { job.complete(error) }
            return
        }
        let alone = group.count == 1
        var failures: [Error?] = []
        failures.reserveCapacity(group.count)
        for job in group {
            let failure: Error?
            do {
                failure = try run(job, on: store, inSavepoint: !alone)
            } catch {
                // The savepoint could not be set, undone or released: what the job left is unknown.
                return abandon(group, failures: failures, cause: error, on: connection)
            }
            guard connection.isInTransaction else {
                return abandon(group, failures: failures + [failure], cause: failure, on: connection)
            }
            failures.append(failure)
        }
        if alone, failures[0] != nil {
            rollBack(connection)
            return group[0].complete(nil)
        }
        do {
            try connection.executeCached("COMMIT")
        } catch {
            if connection.isInTransaction { rollBack(connection) }
            Log.error("group commit failed", ["error": .string("\(error)"), "jobs": .int(Int64(group.count))])
            // A job that failed on its own keeps its own error.
            for (job, failure) in zip(group, failures) { job.complete(failure == nil ? error : nil) }
            return
        }
        for job in group { job.complete(nil) }
    }

    /// Runs one job, inside its own savepoint unless it is alone in the group; returns the error the job threw
    /// (its writes undone). Throws when the savepoint itself fails.
    private static func run(_ job: Job, on store: SQLiteQueueStore, inSavepoint: Bool) throws -> Error? {
        let connection = store.connection
        guard inSavepoint else { return job.run(store) }
        try connection.executeCached("SAVEPOINT job")
        let failure = job.run(store)
        // When SQLite has rolled the whole transaction back, the savepoint is gone too: that is the caller's case.
        guard connection.isInTransaction else { return failure }
        if failure != nil { try connection.executeCached("ROLLBACK TO job") }
        try connection.executeCached("RELEASE job")
        return failure
    }

    /// The group's transaction is lost or cannot be trusted: rolls back what is left of it, runs no further job,
    /// and answers every job with an error. `failures` are the errors of the jobs already run, in order.
    private static func abandon(_ group: [Job], failures: [Error?], cause: Error?, on connection: Connection) {
        if connection.isInTransaction { rollBack(connection) }
        let reason = cause.map { "\($0)" } ?? "a job ended it"
        Log.error("group commit rolled back as a whole; no job of it is stored", [
            "error": .string(reason), "jobs": .int(Int64(group.count)),
        ])
        let sqlite = cause as? SQLiteError
        let lost = SQLiteError(
            code: sqlite?.code ?? SQLITE_ABORT,
            extendedCode: sqlite?.extendedCode ?? SQLITE_ABORT | (2 << 8),  // SQLITE_ABORT_ROLLBACK (not imported)
            message: "the transaction this write was part of was rolled back (\(reason)); nothing of it was stored")
        for (index, job) in group.enumerated() {
            // A job that failed on its own keeps its own error; every other one gets the group's.
            let ownFailure = index < failures.count ? failures[index] : nil
            job.complete(ownFailure == nil ? lost : nil)
        }
    }

    private static func rollBack(_ connection: Connection) {
        do {
            try connection.execute("ROLLBACK")
        } catch {
            Log.error("rollback failed", ["error": .string("\(error)")])
        }
    }
}
