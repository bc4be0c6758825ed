import Foundation
import Queue
import Support

/// Read connections to PostgreSQL, each owned by its own thread, taking jobs from one queue: `DatabaseReaders` on
/// PostgreSQL, so HTTP reads and gauges never wait behind the writer's group commits.
///
/// Each session is read-only (`default_transaction_read_only`), as SQLite's readers open the file read-only: a
/// write sent here by mistake fails instead of bypassing the writer. That also makes a read safe to repeat, so a
/// read that finds its connection broken (the server restarted) is run once more on a reset connection; it fails
/// with a transient `PGError` only when the server cannot be reached again.
public final class PGReaders: StoreReaders {
    private let threads: ReaderThreads<PGQueueStore>

    /// Opens `count` connections to a database the writer has already migrated and starts their threads.
    /// - Throws: `PGError` naming the server (password masked) when it cannot be reached or refuses the login.
    public init(url: String, count: Int = 2, connectTimeoutSeconds: Int = 10) throws {
        // Every connection first, so a server that refuses the login leaves no thread behind.
        let stores = try (0..<max(1, count)).map { _ in
            let connection = try PGConnection(
                url: url, connectTimeoutSeconds: connectTimeoutSeconds, applicationName: "herald-reader")
            try Self.makeReadOnly(connection)
            return PGQueueStore(connection: connection)
        }
        threads = ReaderThreads(name: "herald-pg-reader", resources: stores)
    }

    /// Runs `work` on a reader thread; `completion` gets its result there.
    public func enqueue<T>(
        _ work: @escaping @Sendable (any Store) throws -> T,
        completion: @escaping @Sendable (Result<T, Error>) -> Void
    ) {
        enqueue({ (store: PGQueueStore) in try work(store) }, completion: completion)
    }

    /// `enqueue`, with PostgreSQL's store itself.
    public func enqueue<T>(
        _ work: @escaping @Sendable (PGQueueStore) throws -> T,
        completion: @escaping @Sendable (Result<T, Error>) -> Void
    ) {
        let accepted = threads.submit { store in completion(Self.read(work, on: store)) }
        if !accepted { completion(.failure(PGError(sqlState: "08003", message: "the PostgreSQL readers are closed"))) }
    }

    /// Runs `work` on a reader thread and waits for it. Call from a thread you own.
    public func read<T: Sendable>(_ work: @escaping @Sendable (PGQueueStore) throws -> T) throws -> T {
        let rendezvous = Rendezvous<T>()
        enqueue(work) { rendezvous.fulfil($0) }
        return try rendezvous.wait()
    }

    /// Lets queued reads finish and closes the connections.
    public func close() { threads.close() }

    /// Runs `work`, resetting a connection known to be broken first, and once more on a reset connection when
    /// the connection broke under it.
    private static func read<T>(_ work: (PGQueueStore) throws -> T, on store: PGQueueStore) -> Result<T, Error> {
        let connection = store.connection
        if !connection.isConnected, let error = reconnect(connection) { return .failure(error) }
        let result = attempt(work, on: store)
        guard case .failure(let error) = result,
            (error as? PGError)?.isConnectionLost == true || !connection.isConnected
        else { return result }
        if let error = reconnect(connection) { return .failure(error) }
        return attempt(work, on: store)
    }

    private static func attempt<T>(_ work: (PGQueueStore) throws -> T, on store: PGQueueStore) -> Result<T, Error> {
        let result = Result { try work(store) }
        // A transaction the read left open would hold its snapshot (and hold back vacuum) until the next read.
        if store.connection.isInTransaction { store.connection.rollbackQuietly() }
        return result
    }

    /// Resets `connection`; returns the transient error when the server cannot be reached.
    private static func reconnect(_ connection: PGConnection) -> Error? {
        do {
            try connection.reset()
            try makeReadOnly(connection)
            return nil
        } catch {
            return error
        }
    }

    private static func makeReadOnly(_ connection: PGConnection) throws {
        try connection.execute("SET default_transaction_read_only = on")
    }
}
