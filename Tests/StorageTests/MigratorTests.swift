import Foundation
import Testing
import TestSupport

import Queue
@testable import Storage

@Suite struct MigratorTests {
    @Test func freshDatabaseGetsEverySchemaObjectOfTheSpec() throws {
        let directory = TemporaryDirectory()
        let connection = try Connection(path: directory.path("herald.db"))
        let applied = try Migrator.migrate(connection)
        #expect(applied == embeddedMigrations.map(\.version))

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

    /// SQLite checks a CHECK `x IN (a, b, c)` of more than two constants by building a temporary b-tree for every
    /// row it writes (0007 respells them): a claim or an answer must not pay for one. A connection that had parsed
    /// the old schema sees the new one too.
    @Test func writingAStateOrAMessageBuildsNoTemporaryBTree() throws {
        let directory = TemporaryDirectory()
        let path = directory.path("herald.db")
        let migrating = try Connection(path: path)
        try Migrator.migrate(migrating, upTo: 6)
        try migrating.execute("""
            INSERT INTO messages (id, app, payload, target_kind, priority, ttl_seconds, created_at, expires_at)
            VALUES ('m', 'default', '{}', 'tokens', 'normal', 60, 0, 60000);
            INSERT INTO deliveries (message_id, app, token, next_attempt_at, updated_at, created_at)
            VALUES ('m', 'default', 't', 0, 0, 0);
            """)
        let open = try Connection(path: path)
        let update = "UPDATE deliveries SET state = 'inflight' WHERE id = 1"
        let insert = """
            INSERT INTO messages (id, app, payload, target_kind, priority, ttl_seconds, created_at, expires_at)
            VALUES ('n', 'default', '{}', 'topic', 'high', 60, 0, 60000)
            """
        #expect(try opcodes(open, update).contains("OpenEphemeral"), "the schema before 0007 builds one")

        // Up to 0012: 0013 to 0016 every state change also ran the outcome feed's trigger (`changingAStateRunsNoTrigger`).
        #expect(try Migrator.migrate(migrating, upTo: 12).first == 7)
        // A connection looks at the schema version when it next reads (EXPLAIN alone does not).
        #expect(try open.queryOne("SELECT count(*) FROM deliveries") { $0.int(0) } == 1)
        for connection in [migrating, open] {
            #expect(try !opcodes(connection, update).contains("OpenEphemeral"))
            #expect(try !opcodes(connection, insert).contains("OpenEphemeral"))
        }
        #expect(try open.queryOne("PRAGMA integrity_check") { $0.string(0) } == "ok")

        // 0017 does the same for the outcome feed's CHECK (0013), which every answered row writes through.
        let outcome = """
            INSERT INTO outcomes (at, delivery_id, message_id, app, token, state)
            VALUES (0, 1, 'm', 'default', 't', 'dead')
            """
        try Migrator.migrate(migrating, upTo: 16)
        #expect(try opcodes(migrating, outcome).contains("OpenEphemeral"), "0013's CHECK builds one")
        try Migrator.migrate(migrating)
        #expect(try open.queryOne("SELECT count(*) FROM outcomes") { $0.int(0) } == 0)
        for connection in [migrating, open] { #expect(try !opcodes(connection, outcome).contains("OpenEphemeral")) }
        try open.execute(outcome)
        #expect(throws: SQLiteError.self) { try open.execute(outcome.replacingOccurrences(of: "'dead'", with: "'sent'")) }

        // The same values are accepted and refused as before.
        for state in ["queued", "inflight", "delivered", "dead", "dropped"] {
            try open.run("UPDATE deliveries SET state = ? WHERE id = 1", .text(state))
        }
        #expect(throws: SQLiteError.self) { try open.run("UPDATE deliveries SET state = 'sent' WHERE id = 1") }
        #expect(throws: SQLiteError.self) {
            try open.run("UPDATE messages SET target_kind = 'token' WHERE id = 'm'")
        }
        try open.execute(insert)
        #expect(try open.queryOne("SELECT count(*) FROM messages") { $0.int(0) } == 2)
    }

    /// A change of `deliveries.state` (a claim and an answer per send) starts no trigger program (0008: ~3k
    /// instructions a row, and the update in two passes); deleting a row does, so that a dead or dropped collapse
    /// head goes with its row. 0013's outcome trigger did for every state change, until 0017 (the statements that end
    /// a delivery write its feed entry themselves).
    @Test func changingAStateRunsNoTrigger() throws {
        let directory = TemporaryDirectory()
        let connection = try Connection(path: directory.path("herald.db"))
        let claim = "UPDATE deliveries SET state = 'inflight' WHERE id = 1"
        try Migrator.migrate(connection, upTo: 12)
        #expect(try !opcodes(connection, claim).contains("Program"))
        #expect(try opcodes(connection, "DELETE FROM deliveries WHERE id = 1").contains("Program"))
        try Migrator.migrate(connection, upTo: 16)
        #expect(try opcodes(connection, claim).contains("Program"), "0013's trigger runs")
        try Migrator.migrate(connection)
        for state in ["inflight", "delivered", "dead", "dropped"] {
            #expect(try !opcodes(connection, "UPDATE deliveries SET state = '\(state)' WHERE id = 1").contains("Program"))
        }
        #expect(try opcodes(connection, "DELETE FROM deliveries WHERE id = 1").contains("Program"))
    }

    /// The program SQLite runs for `sql`, by opcode name. Not through the statement cache: an EXPLAIN prepared under
    /// an older schema would list the old program.
    private func opcodes(_ connection: Connection, _ sql: String) throws -> [String] {
        let statement = try Statement(connection: connection, sql: "EXPLAIN \(sql)")
        var opcodes: [String] = []
        while try statement.step() { opcodes.append(statement.string(1)) }
        return opcodes
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
