import Foundation
import Testing
import TestSupport

import Queue
@testable import Storage

private let t0: Int64 = 1_700_000_000_000

/// What only SQLite has of the admin CLI's queries: their plans read deliveries through indexes, and the backup.
/// Their results are `AdminStoreSuite`'s (QueueStoreTests), on every engine.
@Suite struct AdminQueryTests {
    let directory = TemporaryDirectory()
    let store: SQLiteQueueStore
    var connection: Connection { store.connection }

    init() throws {
        store = SQLiteQueueStore(connection: try Connection(path: directory.path("herald.db")))
        try connection.execute("PRAGMA journal_mode = WAL")
        try Migrator.migrate(connection)
    }

    /// The detail lines of `EXPLAIN QUERY PLAN` that read the deliveries table.
    private func plan(_ sql: String, _ arguments: [SQLValue]) throws -> [String] {
        try connection.query("EXPLAIN QUERY PLAN " + sql, arguments) { $0.string(3) }
            .filter { $0.contains("deliveries") || $0.contains(" d ") || $0.hasSuffix(" d") }
    }

    // MARK: - Plans

    /// "Quick at millions of rows" as a property that can be checked without timing: every status, dead-letter and
    /// retention statement reads deliveries through a partial index (or by id, or one message's rows), never by
    /// scanning the table or an index of every row.
    @Test func adminStatementsReadDeliveriesThroughIndexes() throws {
        let allowed = ["deliveries_ready", "deliveries_inflight", "deliveries_dead", "deliveries_finished",
                       "INTEGER PRIMARY KEY", "deliveries_by_message (message_id=?)"]
        var statements: [(String, [SQLValue])] = [
            (StatusSQL.queued, [.integer(t0), .text("default")]),
            (StatusSQL.inflight, []),
            (StatusSQL.dead, []),
            (StatusSQL.deadSince, [.integer(t0)]),
            (StatusSQL.finishedSince, [.integer(t0)]),
            (RetentionSQL.pruneFinished, [.integer(t0), .integer(10)]),
            (RetentionSQL.countFinished, [.integer(t0)]),
            (RetentionSQL.pruneEmptyMessages, [.text(""), .text("Z"), .integer(t0), .integer(t0)]),
            (RetentionSQL.countDead, []),
            (DeadLetterSQL.deleteEmptyMessage, [.text("m"), .integer(t0)]),
        ]
        let filters = [
            DeadLetterFilter(), DeadLetterFilter(app: "default"), DeadLetterFilter(reason: "MaxAttempts"),
            DeadLetterFilter(diedSince: t0), DeadLetterFilter(app: "default", reason: "MaxAttempts", diedSince: t0),
            DeadLetterFilter(deliveryIDs: [1, 2]),
            DeadLetterFilter(app: "default", diedUntil: t0, after: DeadLetterCursor(diedAt: t0, deliveryID: 9)),
            DeadLetterFilter(token: "t"),
        ]
        for filter in filters {
            let (condition, arguments) = filter.sql
            statements += [
                (DeadLetterSQL.list(condition), arguments + [.integer(10)]),
                (DeadLetterSQL.groups(condition), arguments),
                (DeadLetterSQL.expired(condition), arguments + [.integer(t0)]),
                (DeadLetterSQL.requeue(condition),
                 [.integer(t0), .integer(t0)] + arguments + [.integer(t0), .integer(10)]),
                (DeadLetterSQL.purge(condition), arguments + [.integer(10)]),
            ]
        }
        for (sql, arguments) in statements {
            let lines = try plan(sql, arguments)
            #expect(!lines.isEmpty, "no plan for \(sql)")
            for line in lines {
                #expect(allowed.contains(where: line.contains), "\(line) — in the plan of: \(sql)")
            }
        }
    }

    /// The console's token page reads a token's events through its index, never the whole feed by id.
    @Test func aTokensEventsAreReadThroughItsIndex() throws {
        let lines = try connection.query("EXPLAIN QUERY PLAN " + TokenEventSQL.ofToken,
                                         [.text("default"), .text("t"), .integer(50)]) { $0.string(3) }
        #expect(lines.contains { $0.contains("token_events_by_app_token (app=? AND token=?)") }, "\(lines)")
        #expect(!lines.contains { $0.hasPrefix("SCAN token_events") }, "\(lines)")
    }

    // MARK: - Backup

    @Test func backupWritesAPrivateConsistentCopyAndRefusesAnExistingFile() throws {
        _ = try connection.transaction {
            try store.insertMessage(NewMessage(app: "default", payload: "{}", target: .tokens(["a", "b"])), now: t0)
        }
        _ = try store.upsertToken("a", app: "default", user: "u", now: t0)
        let path = directory.path("copy.db")
        let bytes = try connection.backup(to: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect((attributes[.size] as? Int).map(Int64.init) == bytes)

        let copy = try Connection(path: path, mode: .readOnly)
        #expect(try copy.queryOne("SELECT count(*) FROM deliveries") { $0.int(0) } == 2)
        #expect(try copy.queryOne("SELECT count(*) FROM tokens") { $0.int(0) } == 1)
        #expect(try copy.queryOne("PRAGMA integrity_check") { $0.string(0) } == "ok")

        #expect(throws: BackupError.self) { try connection.backup(to: path) }
        #expect(try copy.queryOne("SELECT count(*) FROM deliveries") { $0.int(0) } == 2, "the first copy is untouched")
    }
}
