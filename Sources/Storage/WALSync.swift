import CSQLite
import Foundation
import Queue
import Support
import Synchronization

/// Makes committed groups durable off the writer's thread, then answers their jobs in commit order.
///
/// The writer commits at `synchronous = NORMAL`: SQLite writes the group's WAL frames and returns without an fsync.
/// Jobs that need the disk (`durable`) are answered only after an `fdatasync` of the WAL file that began after their
/// commit: one sync covers every group committed before it, and while it waits for the disk the writer already runs
/// the next group. (At `synchronous = FULL`, SQLite syncs inside `COMMIT`: the writer thread sat idle for each sync,
/// ~1.4 ms, a fifth of its time at HMS's rate.) Recovery after a power cut replays exactly the frames that reached the
/// disk, with their checksums; an answered durable job's frames did.
///
/// Every group's answers go through here, synced or not, so jobs are answered in the order they committed: a claim
/// never hands out a row before the ingest that stored it is answered.
///
/// When a sync fails, the data of the groups it covered may or may not be on the disk: their durable jobs are answered
/// with the error, and from then on the writer refuses every job (`failure`) — after a failed fsync the kernel may have
/// dropped the pages it could not write, so nothing later can be promised either. Restart Herald; SQLite recovers what
/// reached the disk.
final class WALSyncer: @unchecked Sendable {
    /// A committed group's answers.
    struct Batch {
        /// Whether any of its jobs waits for the disk.
        var needsSync: Bool
        /// Answers each job: nil for its own result, or the error that stopped it.
        var answer: (Error?) -> Void
    }

    private let queue = JobQueue<Batch>()
    private let finished = Rendezvous<Void>()
    private let failed = Mutex<Error?>(nil)

    /// Opens the WAL file of `databasePath` (which must exist: the writer's connection opened it) and syncs its
    /// directory once, so the file's own entry survives a power cut. `sync` is `fdatasync` (tests pass another).
    init(databasePath: String, sync: @escaping @Sendable (Int32) -> Int32 = { fdatasync($0) }) throws {
        let walPath = databasePath + "-wal"
        let fd = open(walPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw DatabaseRequirementError(
                description: "cannot open \(walPath) to sync it: \(String(cString: strerror(errno)))")
        }
        let directory = (databasePath as NSString).deletingLastPathComponent
        let directoryFD = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            Glibc.close(directoryFD)
        }
        let thread = Thread { [self] in
            Thread.current.name = "herald-wal-sync"
            loop(fd: fd, sync: sync)
            Glibc.close(fd)
            finished.fulfil(.success(()))
        }
        thread.start()
    }

    /// The error of the sync that failed, if one did: the writer refuses every job from then on.
    var failure: Error? { failed.withLock { $0 } }

    /// Hands over a committed group's answers, after those of every group committed before it.
    func submit(_ batch: Batch) {
        if !queue.push(batch) { batch.answer(nil) }  // closed: only at shutdown, after the last group
    }

    /// Answers everything submitted, then stops the thread.
    func close() {
        queue.close()
        try? finished.wait()
    }

    private func loop(fd: Int32, sync: @Sendable (Int32) -> Int32) {
        while true {
            let batches = queue.popBatch(limit: .max)
            if batches.isEmpty { return }
            var failure = failed.withLock { $0 }
            if failure == nil, batches.contains(where: \.needsSync) {
                var code: Int32
                repeat { code = sync(fd) } while code != 0 && errno == EINTR
                if code != 0 {
                    let error = SQLiteError(
                        code: SQLITE_IOERR, extendedCode: SQLITE_IOERR | (4 << 8),  // SQLITE_IOERR_FSYNC
                        message: "syncing the WAL failed (\(String(cString: strerror(errno)))); the writes of this "
                            + "group may not be on the disk and Herald takes no more: restart it")
                    Log.error("WAL sync failed; refusing every write from now on", ["error": .string("\(error)")])
                    failed.withLock { $0 = error }
                    failure = error
                }
            }
            for batch in batches { batch.answer(batch.needsSync ? failure : nil) }
        }
    }
}

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
