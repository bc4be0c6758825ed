import CSQLite
import Foundation
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
/// group commit.
public final class DatabaseWriter: Sendable {
    private final class Job: @unchecked Sendable {
        /// Runs the work; false when it threw (its writes must be undone).
        let run: (Connection) -> Bool
        let complete: (Error?) -> Void
        /// Whether its commit must reach the disk before it completes (see `enqueue(durable:)`).
        let durable: Bool

        init(durable: Bool, run: @escaping (Connection) -> Bool, complete: @escaping (Error?) -> Void) {
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

    /// Opens the database (creating it 0600), sets WAL and durability and checks that both took (throwing
    /// `DatabaseRequirementError` when not), applies migrations, starts the thread.
    public init(path: String, durability: Durability = .full) throws {
        self.path = path
        self.durability = durability
        let connection = try Connection(path: path)
        try connection.requireWAL()
        try connection.setSynchronous(durability)
        try Migrator.migrate(connection)
        let box = UncheckedBox(connection)
        let thread = Thread { [queue, finished] in
            Thread.current.name = "herald-writer"  // set from the thread itself, so `top -H` and `perf` see it
            Self.loop(connection: box.take(), queue: queue, durability: durability)
            finished.fulfil(.success(()))
        }
        thread.start()
    }

    /// Queues `work` for the next group commit; `completion` is called on the writer thread after the commit
    /// (or with the error that rolled the job or the group back). Keep completions short.
    ///
    /// - Parameter durable: false for writes that may be lost in a power cut without harm (a claim's leases: the
    ///   rows simply stay queued). A group of only such jobs commits without the fsync of `Durability.full`; any
    ///   later durable commit makes them durable too.
    public func enqueue<T>(
        durable: Bool = true,
        _ work: @escaping @Sendable (Connection) throws -> T,
        completion: @escaping @Sendable (Result<T, Error>) -> Void
    ) {
        let box = Box<T>()
        let job = Job(
            durable: durable,
            run: { connection in
                box.result = Result { try work(connection) }
                if case .failure = box.result! { return false }
                return true
            },
            complete: { commitError in
                if let commitError { completion(.failure(commitError)) } else { completion(box.result!) }
            })
        if !queue.push(job) { completion(.failure(SQLiteError(code: SQLITE_MISUSE, message: "database is closed"))) }
    }

    /// Runs `work` in the next group commit and waits for the commit. Call from a thread you own.
    public func write<T: Sendable>(_ work: @escaping @Sendable (Connection) throws -> T) throws -> T {
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

    private static func loop(connection: Connection, queue: JobQueue<Job>, durability: Durability) {
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
            if !group.isEmpty { commit(group, on: connection) }
        }
        do {
            try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        } catch {
            Log.warn("checkpoint at close failed", ["error": .string("\(error)")])
        }
    }

    private static func commit(_ group: [Job], on connection: Connection) {
        do {
            try connection.executeCached("BEGIN IMMEDIATE")
        } catch {
            for job in group { job.complete(error) }
            return
        }
        var ran: [Job] = []
        ran.reserveCapacity(group.count)
        if group.count == 1 {
            if !group[0].run(connection) {
                try? connection.execute("ROLLBACK")
                group[0].complete(nil)
                return
            }
            ran = group
        } else {
            for job in group {
                // A savepoint per job: a job that throws undoes only its own writes.
                do {
                    try connection.executeCached("SAVEPOINT job")
                } catch {
                    job.complete(error)
                    continue
                }
                if !job.run(connection) { try? connection.executeCached("ROLLBACK TO job") }
                try? connection.executeCached("RELEASE job")
                ran.append(job)
            }
        }
        do {
            try connection.executeCached("COMMIT")
        } catch {
            try? connection.execute("ROLLBACK")
            Log.error("group commit failed", ["error": .string("\(error)"), "jobs": .int(Int64(ran.count))])
            for job in ran { job.complete(error) }
            return
        }
        for job in ran { job.complete(nil) }
    }
}

/// Moves a non-Sendable value into the one thread that will own it from then on.
final class UncheckedBox<T>: @unchecked Sendable {
    private var value: T?
    init(_ value: T) { self.value = value }
    func take() -> T {
        defer { value = nil }
        return value!
    }
}
