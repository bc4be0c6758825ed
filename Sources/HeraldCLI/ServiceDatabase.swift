import Foundation
import PostgreSQL
import Queue
import Storage
import Support
import Synchronization

/// The database side of a running `serve`: its writers, a few readers, and what makes the queue this process's
/// alone (SQLite: a lock on the file) or shared with other instances (PostgreSQL: wake-ups by `NOTIFY`).
final class ServiceDatabase: Sendable {
    /// Each writer connection once, the delivery engine's first.
    let writers: [any StoreWriter]
    /// The delivery engine's writes (claims, outcomes, renewals) and maintenance.
    var writer: any StoreWriter { writers[0] }
    /// The HTTP API's writes (messages, cancels, tokens). SQLite: `writer` itself, a database file having one
    /// writer. PostgreSQL: a second connection, so ingest never waits behind the engine's group commits and the two
    /// run on two server backends at once, as they would on two instances sharing the queue.
    var ingestWriter: any StoreWriter { writers[writers.count - 1] }
    let readers: any StoreReaders
    /// Other `serve` processes may deliver from the same queue.
    let isShared: Bool
    private let lock: DatabaseLock?
    /// PostgreSQL's connection string, for the listener.
    private let url: String?
    private let listener = Mutex<PGListener?>(nil)

    private init(writers: [any StoreWriter], readers: any StoreReaders, lock: DatabaseLock?, url: String?) {
        self.writers = writers
        self.readers = readers
        self.lock = lock
        self.url = url
        isShared = lock == nil
    }

    /// Opens (creating and migrating when needed) the database `serve` runs on.
    static func open(_ location: DatabaseLocation, durability: Durability) throws -> ServiceDatabase {
        switch location {
        case .sqlite(let path):
            let lock = try DatabaseLock(databasePath: path)
            do {
                let writer = try DatabaseWriter(path: path, durability: durability)
                return ServiceDatabase(
                    writers: [writer], readers: try DatabaseReaders(path: path), lock: lock, url: nil)
            } catch {
                lock.release()
                throw error
            }
        case .postgres(let url):
            var writers: [PGWriter] = []
            do {
                writers.append(try PGWriter(url: url))
                writers.append(try PGWriter(url: url, role: "ingest", migrating: false))
                return ServiceDatabase(writers: writers, readers: try PGReaders(url: url), lock: nil, url: url)
            } catch {
                for writer in writers.reversed() { writer.close() }
                throw error
            }
        }
    }

    /// Calls `wake` whenever another instance may have committed deliveries this one could send. Without the
    /// listener (it could not connect), the engine still looks at the queue every second.
    func startWakeUps(_ wake: @escaping @Sendable () -> Void) {
        guard let url else { return }
        do {
            let started = try PGListener(url: url) { _ in wake() }
            listener.withLock { $0 = started }
        } catch {
            Log.warn("cannot listen for other instances' messages; looking every second instead", [
                "error": .string("\(error)"),
            ])
        }
    }

    /// Lets queued reads and writes finish, then closes the connections (SQLite: checkpoints its WAL).
    func close() {
        listener.withLock { $0 }?.close()
        readers.close()
        for writer in writers.reversed() { writer.close() }
        lock?.release()
    }
}

/// One `serve` per database: an exclusive `flock` on `<db>.lock`. With it held, every lease in the database
/// that is not this process's belongs to a process that is gone, so start-up can release them at once.
final class DatabaseLock: Sendable {
    private let descriptor: Int32

    init(databasePath: String) throws {
        let path = databasePath + ".lock"
        descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw CommandError(description: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            throw CommandError(description: "another herald serve is running on \(databasePath) (\(path) is locked)")
        }
    }

    func release() {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
