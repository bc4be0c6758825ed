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

    /// The writer's commits checkpoint the WAL past `checkpointFrames` pages (after `Checkpointer`'s pass under way):
    /// twice that many pages written, in commits of 1 MiB, leave a WAL no longer than the mark and one commit (its
    /// file is reused from the start after each checkpoint, never grown past that). A frame is a page and its
    /// 24-byte header.
    @Test func theWALStaysWithinTheCheckpointMark() throws {
        let directory = TemporaryDirectory()
        let path = directory.path("herald.db")
        let writer = try DatabaseWriter(path: path)
        let (pageSize, pagesPerCommit) = try makeFiller(writer)
        let commits = 2 * DatabaseWriter.checkpointFrames / pagesPerCommit
        try writeMiB(commits, with: writer)
        let walBytes = (try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
        let rows = try writer.write { try $0.connection.queryOne("SELECT count(*) FROM filler") { $0.int(0) } }
        writer.close()
        let bound = 32 + (DatabaseWriter.checkpointFrames + pagesPerCommit + 44) * (pageSize + 24)
        #expect(walBytes <= bound, "WAL of \(walBytes) bytes")
        #expect(rows == commits)
    }

    /// Below the writer's own mark, pages reach the database file all the same: `Checkpointer` copies them beside
    /// the writer once the WAL is past `Checkpointer.startFrames`. (Only checkpoints write the database file; the
    /// commits themselves go to the WAL.)
    @Test func theWALIsCopiedIntoTheDatabaseFileBesideTheWriter() throws {
        let directory = TemporaryDirectory()
        let path = directory.path("herald.db")
        let writer = try DatabaseWriter(path: path)
        defer { writer.close() }
        let pagesPerCommit = try makeFiller(writer).pagesPerCommit
        let commits = Int(Checkpointer.startFrames) / pagesPerCommit + 2
        #expect(commits * pagesPerCommit < DatabaseWriter.checkpointFrames, "the writer's own mark is not reached")
        func databaseBytes() throws -> Int {
            (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        }
        let before = try databaseBytes()
        try writeMiB(commits, with: writer)
        try eventually("the commits' pages in the database file") {
            try databaseBytes() >= before + commits * (1 << 20)
        }
    }

    /// A table `filler` for `writeMiB`; the database's page size, and how many pages a commit of `writeMiB` fills.
    private func makeFiller(_ writer: DatabaseWriter) throws -> (pageSize: Int, pagesPerCommit: Int) {
        let pageSize = try writer.write { store in
            try store.connection.execute("CREATE TABLE filler (b BLOB NOT NULL)")
            return try store.connection.queryOne("PRAGMA page_size") { $0.int(0) } ?? 0
        }
        return (pageSize, (1 << 20) / pageSize)
    }

    /// `commits` commits of one 1 MiB row each into `filler`.
    private func writeMiB(_ commits: Int, with writer: DatabaseWriter) throws {
        for _ in 0..<commits {
            try writer.write { try $0.connection.execute("INSERT INTO filler (b) VALUES (zeroblob(1048576))") }
        }
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

    @Test func onlyGroupsWithADurableJobAreSyncedUnderFullDurability() throws {
        let directory = TemporaryDirectory()
        let writer = try DatabaseWriter(path: directory.path("herald.db"), durability: .full)
        func synchronous(durable: Bool) throws -> Int {
            let rendezvous = Rendezvous<Int>()
            writer.enqueue(durable: durable, { try $0.connection.queryOne("PRAGMA synchronous") { $0.int(0) } ?? -1 }) {
                rendezvous.fulfil($0)
            }
            return try rendezvous.wait()
        }
        #expect(try synchronous(durable: false) == 1, "a claim-only group commits without fsync (NORMAL)")
        #expect(try synchronous(durable: true) == 2, "an ingest group is synced (FULL)")
        writer.close()

        let relaxed = try DatabaseWriter(path: directory.path("normal.db"), durability: .normal)
        #expect(try relaxed.write { try $0.connection.queryOne("PRAGMA synchronous") { $0.int(0) } } == 1)
        relaxed.close()
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

    /// Denies `PRAGMA synchronous = FULL` the way SQLite denies a statement: the switch back to FULL fails.
    private static let denySynchronousFull: @convention(c) (
        UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?,
        UnsafePointer<CChar>?
    ) -> Int32 = { _, action, name, value, _, _ in
        guard action == SQLITE_PRAGMA, let name, let value, String(cString: name).lowercased() == "synchronous" else {
            return SQLITE_OK
        }
        return ["FULL", "2", "EXTRA", "3"].contains(String(cString: value).uppercased()) ? SQLITE_DENY : SQLITE_OK
    }

    @Test func aDurableWriteIsRefusedRatherThanCommittedWithoutFsyncWhenSynchronousFullFails() throws {
        let directory = TemporaryDirectory()
        let writer = try DatabaseWriter(path: directory.path("herald.db"), durability: .full)
        func run<T: Sendable>(
            durable: Bool, _ work: @escaping @Sendable (SQLiteQueueStore) throws -> T
        ) -> Result<T, Error> {
            let rendezvous = Rendezvous<T>()
            writer.enqueue(durable: durable, work) { rendezvous.fulfil($0) }
            return Result { try rendezvous.wait() }
        }
        // A claim-only group runs at NORMAL; from it on, switching back to FULL is denied.
        _ = try run(durable: false) { store in
            sqlite3_set_authorizer(store.connection.handle, Self.denySynchronousFull, nil)
        }.get()
        let durable = run(durable: true) { try $0.connection.run("INSERT INTO apps (name) VALUES ('durable')") }
        #expect(throws: (any Error).self, "a durable write acknowledged at synchronous=NORMAL") { try durable.get() }
        let relaxed = run(durable: false) { try $0.connection.run("INSERT INTO apps (name) VALUES ('relaxed')") }
        #expect(throws: Never.self, "a write that needs no fsync still commits") { try relaxed.get() }
        let names = try run(durable: false) { try $0.connection.query("SELECT name FROM apps") { $0.string(0) } }.get()
        writer.close()
        #expect(names == ["relaxed"])
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
