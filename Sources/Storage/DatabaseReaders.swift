import CSQLite
import Foundation
import Queue
import Support

/// Read-only connections, each owned by its own thread, taking jobs from one queue. WAL lets them read
/// while the writer writes; the HTTP loops never run a query themselves.
public final class DatabaseReaders: StoreReaders {
    private let threads: ReaderThreads<SQLiteQueueStore>

    /// Opens `count` read-only connections to a database the writer has already created and migrated.
    public init(path: String, count: Int = 2) throws {
        let stores = try (0..<max(1, count)).map { _ in
            SQLiteQueueStore(connection: try Connection(path: path, mode: .readOnly))
        }
        threads = ReaderThreads(name: "herald-reader", resources: stores)
    }

    /// Runs `work` on a reader thread; `completion` gets its result there.
    public func enqueue<T>(
        _ work: @escaping @Sendable (any Store) throws -> T,
        completion: @escaping @Sendable (Result<T, Error>) -> Void
    ) {
        enqueue({ (store: SQLiteQueueStore) in try work(store) }, completion: completion)
    }

    /// `enqueue`, with SQLite's store itself and through it the connection.
    public func enqueue<T>(
        _ work: @escaping @Sendable (SQLiteQueueStore) throws -> T,
        completion: @escaping @Sendable (Result<T, Error>) -> Void
    ) {
        let accepted = threads.submit { store in completion(Result { try work(store) }) }
        if !accepted { completion(.failure(SQLiteError(code: SQLITE_MISUSE, message: "database is closed"))) }
    }

    /// Runs `work` on a reader thread and waits for it. Call from a thread you own.
    public func read<T: Sendable>(_ work: @escaping @Sendable (SQLiteQueueStore) throws -> T) throws -> T {
        let rendezvous = Rendezvous<T>()
        enqueue(work) { rendezvous.fulfil($0) }
        return try rendezvous.wait()
    }

    /// Lets queued reads finish and closes the connections.
    public func close() { threads.close() }
}
