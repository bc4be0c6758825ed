import CSQLite
import Foundation
import Support

/// Checkpoints the WAL on a thread of its own, so that copying pages into the database file and its fsyncs do not
/// hold up the writer.
///
/// The writer's connection gets a WAL hook instead of SQLite's automatic checkpoint: past `softFrames` frames it asks
/// this thread for a `PASSIVE` checkpoint (which never blocks the writer); past `hardFrames` it checkpoints itself, as
/// SQLite would, copying only what this thread has not copied yet. The WAL restarts from its beginning only after a
/// checkpoint has copied every frame, which under a steady stream of commits is the writer's own: so the file stays
/// near `hardFrames` pages instead of growing.
final class Checkpointer: @unchecked Sendable {
    static let softFrames: Int32 = 1000  // SQLite's own automatic checkpoint
    static let hardFrames: Int32 = 8000

    private let condition = NSCondition()
    private var wanted = false
    private var closed = false
    private let finished = Rendezvous<Void>()

    /// Opens its own connection to `path` and starts the thread.
    init(path: String) throws {
        let connection = try Connection(path: path)
        // A connection opens the WAL with its first read; until then a checkpoint on it does nothing at all.
        try connection.requireWAL()
        let box = UncheckedBox(connection)
        let thread = Thread { [self] in
            Thread.current.name = "herald-ckpt"  // 15 bytes at most, or the name does not take
            let connection = box.take()
            while waitForRequest() {
                var logFrames: Int32 = 0
                var copied: Int32 = 0
                let code = sqlite3_wal_checkpoint_v2(
                    connection.handle, nil, SQLITE_CHECKPOINT_PASSIVE, &logFrames, &copied)
                if code != SQLITE_OK, code & 0xff != SQLITE_BUSY {
                    Log.warn("checkpoint failed", ["error": .string(String(cString: sqlite3_errstr(code)))])
                } else if code != SQLITE_OK || copied < logFrames {
                    // Busy, or frames left behind (written meanwhile, or a reader's): again shortly, even if no
                    // commit asks, so that the last commits before a quiet spell reach the database file too.
                    usleep(10_000)
                    request()
                }
            }
            finished.fulfil(.success(()))
        }
        thread.start()
    }

    /// Installs the hook on the writer's connection; `self` must outlive it.
    func install(on connection: Connection) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_wal_hook(connection.handle, { context, db, name, frames in
            guard let context else { return SQLITE_OK }
            if frames >= Checkpointer.hardFrames {
                // What the thread has not copied yet; BUSY while it is copying is fine: the next commit asks again.
                _ = sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            } else if frames >= Checkpointer.softFrames {
                Unmanaged<Checkpointer>.fromOpaque(context).takeUnretainedValue().request()
            }
            return SQLITE_OK
        }, context)
    }

    func request() {
        condition.lock()
        wanted = true
        condition.signal()
        condition.unlock()
    }

    /// Stops the thread (after the checkpoint under way) and closes its connection.
    func close() {
        condition.lock()
        closed = true
        condition.signal()
        condition.unlock()
        try? finished.wait()
    }

    private func waitForRequest() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !wanted && !closed { condition.wait() }
        wanted = false
        return !closed
    }
}
