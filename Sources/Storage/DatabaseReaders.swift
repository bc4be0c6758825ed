import CSQLite
import Foundation
import Queue
import Support

/// Read-only connections, each owned by its own thread, taking jobs from one queue. WAL lets them read
/// while the writer writes; the HTTP loops never run a query themselves.
public final class DatabaseReaders: StoreReaders {
    private let queue = JobQueue<@Sendable (Connection) -> Void>()
    private let finished: [Rendezvous<Void>]

    /// Opens `count` read-only connections to a database the writer has already created and migrated.
    public init(path: String, count: Int = 2) throws {
        var finished: [Rendezvous<Void>] = []
        for index in 0..<max(1, count) {
            let connection = try Connection(path: path, mode: .readOnly)
            let box = UncheckedBox(connection)
            let done = Rendezvous<Void>()
            let thread = Thread { [queue] in
                Thread.current.name = "herald-reader\(index)"
                let connection = box.take()
                while true {
                    let jobs = queue.popBatch(limit: 1)
                    guard let job = jobs.first else { break }
                    job(connection)
                }
                done.fulfil(.success(()))
            }
            thread.start()
            finished.append(done)
        }
        self.finished = finished
    }

    /// Runs `work` on a reader thread; `completion` gets its result there.
    public func enqueue<T>(
        _ work: @escaping @Sendable (any Store) throws -> T,
        completion: @escaping @Sendable (Result<T, Error>) -> Void
    ) {
        enqueue({ (connection: Connection) in try work(connection) }, completion: completion)
    }

    /// `enqueue`, with the SQLite connection itself.
    public func enqueue<T>(
        _ work: @escaping @Sendable (Connection) throws -> T,
        completion: @escaping @Sendable (Result<T, Error>) -> Void
    ) {
        let accepted = queue.push { connection in completion(Result { try work(connection) }) }
        if !accepted { completion(.failure(SQLiteError(code: SQLITE_MISUSE, message: "database is closed"))) }
    }

    /// Runs `work` on a reader thread and waits for it. Call from a thread you own.
    public func read<T: Sendable>(_ work: @escaping @Sendable (Connection) throws -> T) throws -> T {
        let rendezvous = Rendezvous<T>()
        enqueue(work) { rendezvous.fulfil($0) }
        return try rendezvous.wait()
    }

    /// Lets queued reads finish and closes the connections.
    public func close() {
        queue.close()
        for done in finished { try? done.wait() }
    }
}
