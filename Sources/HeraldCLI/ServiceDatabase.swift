import Foundation
import PostgreSQL
import Storage
import Support

/// The database side of a running `serve`: one writer, a few readers, and what makes the queue this process's
/// alone (SQLite: a lock on the file) or shared with other instances (PostgreSQL: wake-ups by `NOTIFY`).
final class ServiceDatabase: Sendable {
    let writer: any StoreWriter
    let readers: any StoreReaders
    /// Other `serve` processes may deliver from the same queue.
    let isShared: Bool
    private let lock: DatabaseLock?

    private init(writer: any StoreWriter, readers: any StoreReaders, lock: DatabaseLock?) {
        self.writer = writer
        self.readers = readers
        self.lock = lock
        isShared = lock == nil
    }

    /// Opens (creating and migrating when needed) the database `serve` runs on.
    static func open(_ location: DatabaseLocation, durability: Durability) throws -> ServiceDatabase {
        switch location {
        case .sqlite(let path):
            let lock = try DatabaseLock(databasePath: path)
            do {
                let writer = try DatabaseWriter(path: path, durability: durability)
                return ServiceDatabase(writer: writer, readers: try DatabaseReaders(path: path), lock: lock)
            } catch {
                lock.release()
                throw error
            }
        case .postgres:
            throw CommandError(description: "serve on PostgreSQL is not wired yet")
        }
    }

    /// Calls `wake` whenever another instance may have committed deliveries this one could send.
    func startWakeUps(_ wake: @escaping @Sendable () -> Void) {}

    /// Lets queued reads and writes finish, then closes the connections (SQLite: checkpoints its WAL).
    func close() {
        readers.close()
        writer.close()
        lock?.release()
    }
}
