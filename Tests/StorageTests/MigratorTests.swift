import Foundation
import Testing

import Queue
@testable import Storage

@Suite struct MigratorTests {
    @Test func freshDatabaseGetsEverySchemaObjectOfTheSpec() throws {
        let directory = TemporaryDirectory()
        let connection = try Connection(path: directory.path("herald.db"))
        let applied = try Migrator.migrate(connection)
        #expect(applied == Array(1...Migrator.latestVersion))

        let objects = Set(
            try connection.query("SELECT type || ':' || name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'") {
                $0.string(0)
            })
        for table in ["apps", "messages", "deliveries", "tokens", "token_events", "schema_migrations"] {
            #expect(objects.contains("table:\(table)"), "missing table \(table)")
        }
        for view in ["queue_depth", "dead_letters", "recent_token_events"] {
            #expect(objects.contains("view:\(view)"), "missing view \(view)")
        }

        let deliveryColumns = try connection.query("SELECT name FROM pragma_table_info('deliveries')") { $0.string(0) }
        for column in [
            "id", "message_id", "app", "token", "state", "reason", "attempts", "next_attempt_at", "lease_owner",
            "lease_expires_at", "fcm_message_id", "canonical_token", "last_status", "updated_at",
        ] {
            #expect(deliveryColumns.contains(column), "deliveries lacks \(column)")
        }
        let strict = try connection.query("SELECT name FROM pragma_table_list WHERE strict = 1") { $0.string(0) }
        #expect(Set(strict).isSuperset(of: ["apps", "messages", "deliveries", "tokens", "token_events"]))
    }

    @Test func migratingTwiceAppliesNothingTheSecondTime() throws {
        let directory = TemporaryDirectory()
        let connection = try Connection(path: directory.path("herald.db"))
        try Migrator.migrate(connection)
        #expect(try Migrator.migrate(connection).isEmpty)
        #expect(try Migrator.currentVersion(connection) == Migrator.latestVersion)
    }

    @Test func refusesADatabaseNewerThanTheBinary() throws {
        let directory = TemporaryDirectory()
        let connection = try Connection(path: directory.path("herald.db"))
        try Migrator.migrate(connection)
        try connection.run(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', 0)",
            .integer(Int64(Migrator.latestVersion + 1)))
        #expect(throws: Migrator.NewerDatabaseError.self) { try Migrator.migrate(connection) }
    }

    @Test func readyDeliveriesAreAnIndexRangeScan() throws {
        let directory = TemporaryDirectory()
        let connection = try Connection(path: directory.path("herald.db"))
        try Migrator.migrate(connection)
        let plan = try connection.query(
            """
            EXPLAIN QUERY PLAN SELECT id FROM deliveries
            WHERE app = 'default' AND priority_rank = 0 AND state = 'queued' AND next_attempt_at <= 5
            ORDER BY next_attempt_at LIMIT 100
            """
        ) { $0.string(3) }.joined(separator: "\n")
        #expect(plan.contains("USING INDEX deliveries_ready"), "plan was: \(plan)")
        #expect(!plan.contains("TEMP B-TREE"), "the claim must not sort: \(plan)")
    }

    @Test func newDatabaseFilesAreOwnerOnly() throws {
        let directory = TemporaryDirectory()
        let path = directory.path("herald.db")
        let writer = try DatabaseWriter(path: path)
        writer.close()
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
        #expect(mode & 0o777 == 0o600)
    }
}
