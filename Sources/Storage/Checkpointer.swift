import CSQLite
import Foundation
import Support

/// Copies the WAL into the database file on a thread and connection of its own, so that the writer does not stop
/// for it: reading the frames, writing the pages and syncing the database file were a third of the writer's time in
/// HMS's drain (`Benchmarks/hms.sh`) on a host whose syncs are slow.
///
/// The writer's connection gets a WAL hook in place of SQLite's automatic checkpoint. Every commit past `startFrames`
/// asks this thread for a `PASSIVE` checkpoint (which never blocks the writer, and leaves alone what a reader still
/// needs; requests made during a pass make one more pass, not one each). Not from the start of the WAL: each pass
/// syncs the database file, and passes all along made the syncs of single-message ingest's commits wait behind them
/// (5 % fewer messages a second). Past `DatabaseWriter.checkpointFrames` the commit checkpoints itself, as SQLite's
/// automatic checkpoint would, after the thread's pass under way if one is: under a steady stream of commits only
/// the writer's own checkpoint, between two of its transactions, finds every frame copied, which is what lets the
/// next transaction start the WAL over from its beginning. So the WAL stays within the mark and a commit, as before;
/// the writer's checkpoint only copies what the thread has not.
final class Checkpointer: @unchecked Sendable {
    /// Half the writer's own mark.
    static let startFrames = Int32(DatabaseWriter.checkpointFrames / 2)

    /// The commits' requests: those made during a pass are taken together, for one more pass.
    private let requests = JobQueue<Void>()
    /// Held for each checkpoint, the thread's and the writer's, so that they take turns rather than one of them
    /// finding the other's under way (`SQLITE_BUSY`) and doing nothing.
    private let turn = NSLock()
    private let finished = Rendezvous<Void>()

    /// Opens its own connection to `path` (a database in WAL mode) and starts the thread.
    init(path: String) throws {
        let connection = try Connection(path: path)
        // A connection opens the WAL with its first read; until then a checkpoint on it does nothing at all.
        try connection.requireWAL()
        let box = UncheckedBox(connection)
        let thread = Thread { [self] in
            Thread.current.name = "herald-ckpt"  // 15 bytes at most, or the name does not take
            run(on: box.take())
            finished.fulfil(.success(()))
        }
        thread.start()
    }

    /// Puts the WAL hook on the writer's `connection`; `uninstall` it before `close`.
    func install(on connection: Connection) {
        sqlite3_wal_hook(connection.handle, { context, db, name, frames in
            guard let context else { return SQLITE_OK }
            let checkpointer = Unmanaged<Checkpointer>.fromOpaque(context).takeUnretainedValue()
            if frames >= Int32(DatabaseWriter.checkpointFrames) {
                // A failure (a reader in the way, the disk full) is the next commit's to try again.
                checkpointer.turn.withLock {
                    _ = sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                }
            } else if frames >= Checkpointer.startFrames {
                checkpointer.requests.push(())
            }
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    func uninstall(from connection: Connection) {
        sqlite3_wal_hook(connection.handle, nil, nil)
    }

    /// Stops the thread (after the pass under way, and one for the requests waiting) and closes its connection.
    func close() {
        requests.close()
        try? finished.wait()
    }

    private func run(on connection: Connection) {
        var lastFailure: Int32 = SQLITE_OK
        while !requests.popBatch(limit: .max).isEmpty {
            let code = turn.withLock {
                sqlite3_wal_checkpoint_v2(connection.handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            }
            // Busy: another process's checkpoint under way; the frames are the next pass's.
            if code & 0xff == SQLITE_BUSY { continue }
            // Logged once until a pass succeeds again: every commit asks for one.
            if code != SQLITE_OK, code != lastFailure {
                Log.warn("checkpoint failed", ["error": .string(String(cString: sqlite3_errstr(code)))])
            }
            lastFailure = code
        }
    }
}
