import CSQLite
import Foundation
import Synchronization
import Testing
import TestSupport

import Queue
import Support
@testable import Storage

@Suite struct DatabaseWriterTests {
    @Test func databaseIsInWALMode() throws {
        let directory = TemporaryDirectory()
        let writer = try DatabaseWriter(path: directory.path("herald.db"))
        let mode = try writer.write { try $0.connection.queryOne("PRAGMA journal_mode") { $0.string(0) } }
        writer.close()
        #expect(mode == "wal")
    }

    @Test func concurrentWritesAreAllCommittedAndVisibleToReaders() throws {
        let directory = TemporaryDirectory()
        let path = directory.path("herald.db")
        let writer = try DatabaseWriter(path: path)
        let done = DispatchGroup()
        let failures = Atomic<Int>(0)
        for index in 0..<200 {
            done.enter()
            writer.enqueue({ store in
                try store.connection.run("INSERT INTO apps (name) VALUES (?)", .text("app-\(index)"))
            }, completion: { result in
                if case .failure = result { failures.add(1, ordering: .relaxed) }
                done.leave()
            })
        }
        done.wait()
        #expect(failures.load(ordering: .relaxed) == 0)
        let readers = try DatabaseReaders(path: path, count: 1)
        let count = try readers.read { try $0.connection.queryOne("SELECT count(*) FROM apps") { $0.int(0) } }
        readers.close()
        writer.close()
        #expect(count == 200)
    }

    @Test func aFailingJobUndoesOnlyItsOwnWrites() throws {
        let directory = TemporaryDirectory()
        let writer = try DatabaseWriter(path: directory.path("herald.db"))
        struct Refused: Error {}
        let results = Mutex<[String: Bool]>([:])
        let done = DispatchGroup()
        // Hold the writer busy so the three jobs below are committed as one group.
        let gate = WriterGate(writer)
        for name in ["kept-1", "undone", "kept-2"] {
            done.enter()
            writer.enqueue({ store in
                try store.connection.run("INSERT INTO apps (name) VALUES (?)", .text(name))
                if name == "undone" { throw Refused() }
            }, completion: { result in
                results.withLock { $0[name] = (try? result.get()) != nil }
                done.leave()
            })
        }
        gate.open()
        done.wait()
        let names = try writer.write { try $0.connection.query("SELECT name FROM apps ORDER BY name") { $0.string(0) } }
        writer.close()
        #expect(names == ["kept-1", "kept-2"])
        #expect(results.withLock { $0 } == ["kept-1": true, "undone": false, "kept-2": true])
    }

    @Test func durableGroupsAreAnsweredAfterAWALSyncAndOthersWithoutOne() throws {
        let directory = TemporaryDirectory()
        let syncs = Atomic<Int>(0)
        let writer = try DatabaseWriter(path: directory.path("herald.db"), durability: .full, syncWAL: { fd in
            syncs.add(1, ordering: .relaxed)
            return fdatasync(fd)
        })
        // SQLite itself never waits for the disk at commit: the syncs are the syncer's.
        #expect(try writer.write { try $0.connection.synchronous() } == .normal)
        let before = syncs.load(ordering: .relaxed)
        func syncsFor(durable: Bool) throws -> Int {
            let start = syncs.load(ordering: .relaxed)
            let rendezvous = Rendezvous<Void>()
            writer.enqueue(durable: durable, { try $0.connection.run("INSERT INTO apps (name) VALUES (?)", .text("\(durable)-\(start)")) }) {
                rendezvous.fulfil($0.map { _ in })
            }
            try rendezvous.wait()
            return syncs.load(ordering: .relaxed) - start
        }
        #expect(try syncsFor(durable: false) == 0, "a claim-only group is answered without a sync")
        #expect(try syncsFor(durable: true) == 1, "an ingest group is answered after one")
        writer.close()
        #expect(before >= 1, "the write above was durable too")

        let relaxedSyncs = Atomic<Int>(0)
        let relaxed = try DatabaseWriter(path: directory.path("normal.db"), durability: .normal, syncWAL: { fd in
            relaxedSyncs.add(1, ordering: .relaxed)
            return fdatasync(fd)
        })
        _ = try relaxed.write { try $0.connection.run("INSERT INTO apps (name) VALUES ('x')") }
        relaxed.close()
        #expect(relaxedSyncs.load(ordering: .relaxed) == 0, "--durability normal never syncs")
    }

    /// The writer runs the next group while the syncer waits for the disk; the answers still come in commit order,
    /// so a claim is never answered before the ingest whose rows it took.
    @Test func jobsAreAnsweredInCommitOrderWhileASyncIsUnderWay() throws {
        let directory = TemporaryDirectory()
        let syncing = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holding = Atomic<Bool>(false)
        let writer = try DatabaseWriter(path: directory.path("herald.db"), durability: .full, syncWAL: { fd in
            if holding.load(ordering: .relaxed) {
                syncing.signal()
                release.wait()
            }
            return fdatasync(fd)
        })
        holding.store(true, ordering: .relaxed)
        let order = Mutex<[String]>([])
        let done = DispatchGroup()
        done.enter()
        writer.enqueue(durable: true, { try $0.connection.run("INSERT INTO apps (name) VALUES ('ingest')") }) { _ in
            order.withLock { $0.append("ingest") }
            done.leave()
        }
        syncing.wait()  // the ingest group is committed; its sync waits
        let committed = DispatchSemaphore(value: 0)
        done.enter()
        writer.enqueue(durable: false, { store in
            defer { committed.signal() }
            return try store.connection.queryOne("SELECT count(*) FROM apps WHERE name = 'ingest'") { $0.int(0) }
        }) { result in
            order.withLock { $0.append("claim saw \((try? result.get()).flatMap { $0 } ?? -1)") }
            done.leave()
        }
        committed.wait()  // the writer went on: the claim ran while the ingest's sync was still under way
        holding.store(false, ordering: .relaxed)
        release.signal()
        done.wait()
        writer.close()
        #expect(order.withLock { $0 } == ["ingest", "claim saw 1"])
    }

    /// After a failed sync the kernel may have dropped what it could not write: the durable jobs it covered hear of
    /// it, and the writer takes nothing more (restart Herald; SQLite recovers what reached the disk).
    @Test func aFailedWALSyncFailsItsDurableJobsAndEveryLaterWrite() throws {
        let directory = TemporaryDirectory()
        let failing = Atomic<Bool>(false)
        let writer = try DatabaseWriter(path: directory.path("herald.db"), durability: .full, syncWAL: { fd in
            guard failing.load(ordering: .relaxed) else { return fdatasync(fd) }
            errno = EIO
            return -1
        })
        func run(durable: Bool, _ name: String) -> Result<Int, Error> {
            let rendezvous = Rendezvous<Int>()
            writer.enqueue(durable: durable, { try $0.connection.run("INSERT INTO apps (name) VALUES (?)", .text(name)) }) {
                rendezvous.fulfil($0)
            }
            return Result { try rendezvous.wait() }
        }
        #expect(throws: Never.self) { try run(durable: true, "before").get() }
        failing.store(true, ordering: .relaxed)
        let lost = run(durable: true, "unsynced")
        #expect(throws: SQLiteError.self, "a durable write answered although its sync failed") { try lost.get() }
        #expect("\(lost)".contains("syncing the WAL failed"), "\(lost)")
        failing.store(false, ordering: .relaxed)
        #expect(throws: SQLiteError.self, "the writer takes no write after a failed sync") {
            try run(durable: false, "later").get()
        }
        writer.close()
    }

    /// Checkpoints run beside the writer: 10 MB written in 1 MB commits (fewer frames than the writer's own
    /// `Checkpointer.hardFrames`) reach the database file without the writer checkpointing. And the WAL restarts
    /// instead of growing: 150 MB leave a WAL of about `hardFrames` pages (more by the commits made while the
    /// thread's checkpoint kept the writer's own from running; twice that is the bound here).
    @Test func theWALIsCheckpointedBesideTheWriterAndStaysBounded() throws {
        let directory = TemporaryDirectory()
        let path = directory.path("herald.db")
        func size(_ file: String) -> Int {
            ((try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? Int) ?? 0
        }
        let writer = try DatabaseWriter(path: path, durability: .normal)
        try writer.write { try $0.connection.execute("CREATE TABLE filler (bytes BLOB)") }
        func fill(megabytes: Int) throws {
            for _ in 0..<megabytes {
                _ = try writer.write { try $0.connection.run("INSERT INTO filler (bytes) VALUES (randomblob(1000000))") }
            }
        }
        try fill(megabytes: 10)
        eventually("the checkpointer copies the WAL into the database file (\(size(path)) bytes)") {
            size(path) >= 9_000_000
        }
        try fill(megabytes: 140)
        let walBytes = size(path + "-wal")
        writer.close()
        let bound = 2 * Int(Checkpointer.hardFrames) * (4096 + 24)
        #expect(walBytes <= bound, "the WAL grew to \(walBytes) bytes")
        #expect(size(path) >= 150_000_000)
    }

    @Test func writesAfterCloseFailInsteadOfVanishing() throws {
        let directory = TemporaryDirectory()
        let writer = try DatabaseWriter(path: directory.path("herald.db"))
        writer.close()
        #expect(throws: SQLiteError.self) {
            try writer.write { try $0.connection.run("INSERT INTO apps (name) VALUES ('x')") }
        }
    }

    // MARK: - SQLite's own rollback of a whole group

    /// Three jobs in one group; the middle one fills the disk. SQLite answers `SQLITE_FULL` by rolling back the whole
    /// transaction (a one-row INSERT has no statement journal to undo just itself), taking the first job's write
    /// with it. No job may be reported committed, and nothing of the group may be stored: the third must not run in
    /// a transaction of its own.
    @Test func aGroupSQLiteRollsBackAsAWholeIsAnsweredWithErrorsAndLeavesNothing() throws {
        let directory = TemporaryDirectory()
        let writer = try DatabaseWriter(path: directory.path("herald.db"))
        try writer.write { store in
            try store.connection.execute("CREATE TABLE filler (bytes BLOB)")
            // The file may not grow: a big blob cannot be stored, a short row still fits the pages there are.
            let pages = try store.connection.queryOne("PRAGMA page_count") { $0.int(0) } ?? 0
            try store.connection.execute("PRAGMA max_page_count = \(pages)")
        }
        let results = Mutex<[String: String]>([:])
        let done = DispatchGroup()
        let gate = WriterGate(writer)
        let jobs: [(String, String)] = [
            ("before", "INSERT INTO apps (name) VALUES ('before')"),
            ("full", "INSERT INTO filler (bytes) VALUES (zeroblob(1000000))"),
            ("after", "INSERT INTO apps (name) VALUES ('after')"),
        ]
        for (name, sql) in jobs {
            done.enter()
            writer.enqueue({ store in try store.connection.run(sql) }, completion: { result in
                results.withLock { $0[name] = (try? result.get()) != nil ? "committed" : "\(result)" }
                done.leave()
            })
        }
        gate.open()
        done.wait()
        let stored = try writer.write { store in
            try store.connection.query("SELECT name FROM apps UNION ALL SELECT 'filler' FROM filler") { $0.string(0) }
        }
        writer.close()
        let answers = results.withLock { $0 }
        #expect(answers.count == 3)
        for (name, answer) in answers {
            #expect(answer != "committed", "\(name) was reported committed")
        }
        #expect(answers["full"]?.contains("full") == true, "the job that hit the limit gets its own error: \(answers)")
        #expect(stored.isEmpty, "nothing of the group may be stored, found \(stored)")
    }

    @Test func theWriterKeepsWorkingAfterSQLiteRolledAGroupBack() throws {
        let directory = TemporaryDirectory()
        let writer = try DatabaseWriter(path: directory.path("herald.db"))
        try writer.write { store in
            try store.connection.execute("CREATE TABLE filler (bytes BLOB)")
            let pages = try store.connection.queryOne("PRAGMA page_count") { $0.int(0) } ?? 0
            try store.connection.execute("PRAGMA max_page_count = \(pages)")
        }
        #expect(throws: (any Error).self) {
            try writer.write { try $0.connection.run("INSERT INTO filler (bytes) VALUES (zeroblob(1000000))") }
        }
        _ = try writer.write { try $0.connection.run("INSERT INTO apps (name) VALUES ('later')") }
        let names = try writer.write { try $0.connection.query("SELECT name FROM apps") { $0.string(0) } }
        writer.close()
        #expect(names == ["later"])
    }

    /// A deferred foreign key fails the COMMIT itself (the transaction stays open): nothing of the group is stored,
    /// every job hears of it, and the next group starts clean.
    @Test func aFailedCommitAnswersEveryJobAndTheNextGroupStartsClean() throws {
        let directory = TemporaryDirectory()
        let writer = try DatabaseWriter(path: directory.path("herald.db"))
        try writer.write { store in
            try store.connection.execute("""
                CREATE TABLE parent (id INTEGER PRIMARY KEY);
                CREATE TABLE child (parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)
                """)
        }
        let results = Mutex<[String: Bool]>([:])
        let done = DispatchGroup()
        let gate = WriterGate(writer)
        let jobs: [(String, String)] = [
            ("app", "INSERT INTO apps (name) VALUES ('in-the-group')"),
            ("orphan", "INSERT INTO child (parent) VALUES (42)"),
        ]
        for (name, sql) in jobs {
            done.enter()
            writer.enqueue({ store in try store.connection.run(sql) }, completion: { result in
                results.withLock { $0[name] = (try? result.get()) != nil }
                done.leave()
            })
        }
        gate.open()
        done.wait()
        _ = try writer.write { try $0.connection.run("INSERT INTO apps (name) VALUES ('next')") }
        let names = try writer.write { try $0.connection.query("SELECT name FROM apps") { $0.string(0) } }
        writer.close()
        #expect(results.withLock { $0 } == ["app": false, "orphan": false])
        #expect(names == ["next"])
    }

    // MARK: - PRAGMAs durability rests on

    @Test func aDatabaseThatCannotBeInWALModeIsRefused() throws {
        // SQLite keeps an in-memory database in `memory` mode and says so rather than failing.
        let error = #expect(throws: (any Error).self) { try DatabaseWriter(path: ":memory:") }
        let text = error.map { "\($0)" } ?? ""
        #expect(text.contains("cannot use WAL journal mode on :memory:: got memory"), "\(text)")
    }
}

/// Holds the writer thread inside a job, so the jobs enqueued meanwhile are taken as one group once it opens.
/// It waits until the writer is inside: a job enqueued before that could be taken in the holding job's group.
private final class WriterGate: Sendable {
    private let entered = DispatchSemaphore(value: 0)
    private let opened = DispatchSemaphore(value: 0)

    init(_ writer: DatabaseWriter) {
        writer.enqueue({ [entered, opened] _ in
            entered.signal()
            opened.wait()
        }, completion: { _ in })
        entered.wait()
    }

    func open() { opened.signal() }
}
