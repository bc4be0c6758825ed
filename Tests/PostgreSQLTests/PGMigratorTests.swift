import Foundation
import Queue
import Storage
import Synchronization
import Testing

@testable import PostgreSQL
import PostgreSQLTestSupport

@Suite struct PGMigratorTests {
    let database: TestDatabase
    let connection: PGConnection

    init() throws {
        database = try TestDatabase()
        connection = try database.connect()
    }

    @Test func anEmptyDatabaseGetsEveryMigration() throws {
        let applied = try PGMigrator.migrate(connection)
        #expect(applied == embeddedPostgresMigrations.map(\.version))
        #expect(try PGMigrator.currentVersion(connection) == PGMigrator.latestVersion)
        let recorded = try connection.query("SELECT version, name FROM schema_migrations ORDER BY version") {
            "\($0.int(0)) \($0.string(1))"
        }
        #expect(recorded.first == "1 0001_initial")
        #expect(recorded.count == embeddedPostgresMigrations.count)
    }

    @Test func migratingTwiceAppliesNothingTheSecondTime() throws {
        try PGMigrator.migrate(connection)
        #expect(try PGMigrator.migrate(connection).isEmpty)
        #expect(try connection.queryOne("SELECT count(*) FROM schema_migrations") { $0.int(0) }
            == embeddedPostgresMigrations.count)
    }

    @Test func refusesADatabaseNewerThanTheBinary() throws {
        try PGMigrator.migrate(connection)
        try connection.run(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, 'future', 0)",
            .integer(Int64(PGMigrator.latestVersion + 1)))
        #expect(throws: PGMigrator.NewerDatabaseError.self) { try PGMigrator.migrate(connection) }
    }

    @Test func instancesMigratingAtOnceApplyEachMigrationOnce() throws {
        let urls = Array(repeating: database.url, count: 4)
        let failures = Mutex<[String]>([])
        let group = DispatchGroup()
        // Threads of their own: the migrator blocks in libpq (and on the advisory lock).
        for url in urls {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    try PGMigrator.migrate(try PGConnection(url: url))
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }.start()
        }
        group.wait()
        #expect(failures.withLock { $0 } == [])
        let versions = try connection.query("SELECT version FROM schema_migrations ORDER BY version") { $0.int(0) }
        #expect(versions == embeddedPostgresMigrations.map(\.version))
    }

    // MARK: - The schema matches SQLite's

    @Test func bothEnginesHaveTheSameMigrationNumbers() {
        #expect(PGMigrator.latestVersion == Storage.Migrator.latestVersion)
    }

    @Test func tablesColumnsViewsIndexesAndTriggersMatchSQLite() throws {
        try PGMigrator.migrate(connection)
        let sqlite = try SQLiteSchema()

        let tables = Set(try connection.query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = $1",
            ["BASE TABLE"]) { $0.string(0) })
        #expect(tables == sqlite.tables)

        let views = Set(try connection.query(
            "SELECT table_name FROM information_schema.views WHERE table_schema = 'public'") { $0.string(0) })
        #expect(views == sqlite.views)

        let columns = Set(try connection.query(
            "SELECT table_name || '.' || column_name FROM information_schema.columns WHERE table_schema = 'public'"
        ) { $0.string(0) })
        #expect(columns == sqlite.columns)

        // Named indexes (PostgreSQL also names the ones behind PRIMARY KEY/UNIQUE, which SQLite leaves unnamed).
        let indexes = Set(try connection.query(
            """
            SELECT i.indexname FROM pg_indexes AS i
            WHERE i.schemaname = 'public'
              AND NOT EXISTS (SELECT 1 FROM pg_constraint AS c WHERE c.conname = i.indexname)
            """) { $0.string(0) })
        #expect(indexes == sqlite.indexes)

        let triggers = Set(try connection.query(
            "SELECT DISTINCT trigger_name FROM information_schema.triggers WHERE trigger_schema = 'public'"
        ) { $0.string(0) })
        // The outcome feed's entries: PostgreSQL's trigger, SQLite's statements (SQLite's 0017).
        #expect(triggers == sqlite.triggers.union(["outcome_recorded"]))
    }

    @Test func partialIndexesHaveTheSameConditions() throws {
        try PGMigrator.migrate(connection)
        let definition = { (name: String) in
            try connection.queryOne("SELECT indexdef FROM pg_indexes WHERE indexname = $1", [.text(name)]) {
                $0.string(0)
            } ?? ""
        }
        #expect(try definition("deliveries_ready").hasSuffix("WHERE (state = 'queued'::text)"))
        #expect(try definition("deliveries_inflight").hasSuffix("WHERE (state = 'inflight'::text)"))
        #expect(try definition("messages_by_idempotency_key").contains("UNIQUE INDEX"))
        #expect(try definition("messages_by_idempotency_key").contains("(app, idempotency_key)"))
    }

    @Test func checkConstraintsRefuseWhatSQLiteRefuses() throws {
        try PGMigrator.migrate(connection)
        try insertMessage("m1")
        let badRows: [(String, [PGValue])] = [
            ("INSERT INTO apps (name, paused) VALUES ($1, 2)", ["a"]),
            (messageInsert, ["m2", "bogus", "normal", 60]),
            (messageInsert, ["m3", "tokens", "urgent", 60]),
            (messageInsert, ["m4", "tokens", "normal", 2_419_201]),
            ("UPDATE messages SET format = $1 WHERE id = 'm1'", ["v2"]),
            ("UPDATE messages SET token_field = $1 WHERE id = 'm1'", ["email"]),
            ("INSERT INTO deliveries (message_id, app, token, state, next_attempt_at, updated_at, created_at) "
                + "VALUES ('m1', 'default', 't', $1, 0, 0, 0)", ["sent"]),
            ("INSERT INTO deliveries (message_id, app, token, priority_rank, next_attempt_at, updated_at, created_at) "
                + "VALUES ('m1', 'default', 't', $1, 0, 0, 0)", [2]),
            ("INSERT INTO token_events (at, app, token, kind) VALUES (0, 'default', 't', $1)", ["renamed"]),
            ("INSERT INTO token_tombstones (app, token, kind, at) VALUES ('default', 't', $1, 0)", ["renamed"]),
        ]
        for (sql, arguments) in badRows {
            let error = #expect(throws: PGError.self, "accepted: \(sql)") { try connection.run(sql, arguments) }
            #expect(error?.sqlState == "23514", "\(sql): \(error.map { "\($0)" } ?? "")")
        }
        let deliveryToAMissingMessage = #expect(throws: PGError.self) {
            try connection.run(
                "INSERT INTO deliveries (message_id, app, token, next_attempt_at, updated_at, created_at) "
                    + "VALUES ($1, 'default', 't', 0, 0, 0)", "nope")
        }
        #expect(deliveryToAMissingMessage?.sqlState == "23503")
    }

    @Test func idempotencyKeysAreUniquePerApp() throws {
        try PGMigrator.migrate(connection)
        try insertMessage("m1", app: "a", key: "k")
        try insertMessage("m2", app: "b", key: "k")
        let error = #expect(throws: PGError.self) { try insertMessage("m3", app: "a", key: "k") }
        #expect(error?.constraint == "messages_by_idempotency_key")
    }

    @Test func deliveryIDsGrowAndDeletingAMessageDeletesItsDeliveries() throws {
        try PGMigrator.migrate(connection)
        try insertMessage("m1")
        let first = try insertDelivery("m1", token: "t1")
        let second = try insertDelivery("m1", token: "t2")
        #expect(second > first)
        try connection.run("DELETE FROM messages WHERE id = $1", "m1")
        #expect(try connection.queryOne("SELECT count(*) FROM deliveries") { $0.int(0) } == 0)
    }

    @Test func aHeadGoesWithItsDeadRowOnly() throws {
        try PGMigrator.migrate(connection)
        try insertMessage("m1")
        let delivered = try insertDelivery("m1", token: "t1")
        let dying = try insertDelivery("m1", token: "t2")
        for (token, delivery) in [("t1", delivered), ("t2", dying)] {
            try connection.run(
                "INSERT INTO collapse_heads (app, collapse_key, token, message_id, delivery_id, created_at) "
                    + "VALUES ('default', 'score', $1, 'm1', $2, 0)", .text(token), .integer(delivery))
        }
        try connection.run("UPDATE deliveries SET state = 'delivered' WHERE id = $1", .integer(delivered))
        try connection.run("UPDATE deliveries SET state = 'dead', reason = 'x' WHERE id = $1", .integer(dying))
        // The claim reads a dead head's state; only deleting its row (retention, `dead purge`) takes the head.
        let heads = try connection.query("SELECT token FROM collapse_heads ORDER BY token") { $0.string(0) }
        #expect(heads == ["t1", "t2"])
        try connection.run("DELETE FROM deliveries")
        #expect(try connection.query("SELECT token FROM collapse_heads") { $0.string(0) } == ["t1"])
    }

    @Test func theViewsAnswerAsOnSQLite() throws {
        try PGMigrator.migrate(connection)
        try insertMessage("m1")
        let dead = try insertDelivery("m1", token: "t1")
        try insertDelivery("m1", token: "t2")
        try connection.run("UPDATE deliveries SET state = 'dead', reason = 'InvalidRegistration', updated_at = 9 "
            + "WHERE id = $1", .integer(dead))
        let depth = try connection.query("SELECT app, state, count, oldest FROM queue_depth ORDER BY state") {
            "\($0.string(0)) \($0.string(1)) \($0.int(2)) \($0.int(3))"
        }
        #expect(depth == ["default dead 1 0", "default queued 1 0"])
        let letters = try connection.query("SELECT token, reason, died_at, target_kind FROM dead_letters") {
            "\($0.string(0)) \($0.string(1)) \($0.int(2)) \($0.string(3))"
        }
        #expect(letters == ["t1 InvalidRegistration 9 tokens"])

        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for (token, at) in [("old", now - 2 * 86_400_000), ("new", now - 60_000)] {
            try connection.run(
                "INSERT INTO token_events (at, app, token, kind) VALUES ($1, 'default', $2, 'deleted')",
                .integer(at), .text(token))
        }
        #expect(try connection.query("SELECT token FROM recent_token_events") { $0.string(0) } == ["new"])
    }

    @Test func theClaimIsAnIndexRangeScanOnDeliveriesReady() throws {
        try PGMigrator.migrate(connection)
        // An empty table would be read sequentially; the point is that the index serves the claim, sorted.
        try connection.execute("SET enable_seqscan = off")
        let plan = try connection.query(
            """
            EXPLAIN SELECT id FROM deliveries
            WHERE app = $1 AND priority_rank = 0 AND state = 'queued' AND next_attempt_at <= $2
            ORDER BY next_attempt_at LIMIT 100 FOR UPDATE SKIP LOCKED
            """, ["default", 5]
        ) { $0.string(0) }.joined(separator: "\n")
        #expect(plan.contains("deliveries_ready"), "plan was: \(plan)")
        #expect(!plan.contains("Sort"), "the claim must not sort: \(plan)")
    }

    // MARK: - Helpers

    private let messageInsert = """
        INSERT INTO messages (id, app, payload, target_kind, priority, ttl_seconds, created_at, expires_at)
        VALUES ($1, 'default', '{}', $2, $3, $4, 0, 0)
        """

    private func insertMessage(_ id: String, app: String = "default", key: String? = nil) throws {
        try connection.run(
            """
            INSERT INTO messages (id, app, idempotency_key, payload, target_kind, priority, ttl_seconds,
                                  created_at, expires_at)
            VALUES ($1, $2, $3, '{}', 'tokens', 'normal', 60, 0, 60000)
            """, .text(id), .text(app), .optional(key))
    }

    @discardableResult
    private func insertDelivery(_ message: String, token: String) throws -> Int64 {
        try connection.queryOne(
            """
            INSERT INTO deliveries (message_id, app, token, next_attempt_at, updated_at, created_at)
            VALUES ($1, 'default', $2, 0, 0, 0) RETURNING id
            """, [.text(message), .text(token)]) { $0.int64(0) } ?? -1
    }
}

/// The SQLite schema Storage's migrations build, to hold PostgreSQL's against.
private struct SQLiteSchema {
    var tables: Set<String> = []
    var views: Set<String> = []
    var columns: Set<String> = []
    var indexes: Set<String> = []
    var triggers: Set<String> = []

    init() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-pg-\(UUID().uuidString).db")
        defer { try? FileManager.default.removeItem(at: path) }
        let connection = try Storage.Connection(path: path.path)
        try Storage.Migrator.migrate(connection)
        let objects = try connection.query(
            """
            SELECT type, name FROM sqlite_master
            WHERE name NOT LIKE 'sqlite_%' AND (type <> 'index' OR sql IS NOT NULL)
            """
        ) { ($0.string(0), $0.string(1)) }
        for (type, name) in objects {
            switch type {
            case "table": tables.insert(name)
            case "view": views.insert(name)
            case "index": indexes.insert(name)
            case "trigger": triggers.insert(name)
            default: break
            }
        }
        for table in tables.union(views) {
            for column in try connection.query("SELECT name FROM pragma_table_info(?)", [.text(table)], row: {
                $0.string(0)
            }) {
                columns.insert("\(table).\(column)")
            }
        }
        // SQLite's implicit rowids, which PostgreSQL's 0006 (messages) and 0011 (tokens) make columns of that name.
        columns.insert("messages.rowid")
        columns.insert("tokens.rowid")
    }
}

/// 0004_integrity's data steps, on a database that has rows from before it (as on SQLite).
@Suite struct IntegrityMigrationTests {
    let database: TestDatabase
    let connection: PGConnection

    init() throws {
        database = try TestDatabase()
        connection = try database.connect()
        #expect(try PGMigrator.migrate(connection, upTo: 3) == [1, 2, 3])
    }

    @Test func collapseHeadsKeepOnlyHeadsThatCanStillReachTheDevice() throws {
        for (id, dryRun) in [("live", 0), ("dry", 1), ("dead", 0)] {
            try connection.run(
                """
                INSERT INTO messages (id, app, payload, target_kind, collapse_key, priority, ttl_seconds, dry_run,
                                      created_at, expires_at)
                VALUES ($1, 'default', '{}', 'tokens', 'score', 'normal', 60, $2, 1000, 61000)
                """, .text(id), .integer(Int64(dryRun)))
        }
        let ids = try ["live", "dry", "dead"].map { message in
            try connection.queryOne(
                """
                INSERT INTO deliveries (message_id, app, token, state, next_attempt_at, updated_at, created_at)
                VALUES ($1, 'default', $2, $3, 0, 0, 1000) RETURNING id
                """, [.text(message), .text("token-\(message)"), .text(message == "dead" ? "dead" : "queued")]
            ) { $0.int64(0) } ?? -1
        }
        for message in ["live", "dry", "dead", "gone"] {
            try connection.run(
                "INSERT INTO collapse_heads (app, collapse_key, token, message_id) VALUES ('default', 'score', $1, $2)",
                .text("token-\(message)"), .text(message))
        }

        try PGMigrator.migrate(connection)

        let heads = try connection.query("SELECT message_id, delivery_id, created_at FROM collapse_heads") {
            "\($0.string(0)) \($0.int64(1)) \($0.int64(2))"
        }
        #expect(heads == ["live \(ids[0]) 1000"])
    }

    @Test func tombstonesHoldEachTokensLatestEventAndTTLZeroGetsItsWindow() throws {
        for (at, token, kind, replacement) in [
            (1, "a", "replaced", "a2"), (2, "a", "deleted", nil), (3, "b", "replaced", "b2"),
        ] as [(Int64, String, String, String?)] {
            try connection.run(
                "INSERT INTO token_events (at, app, token, kind, replacement) VALUES ($1, 'default', $2, $3, $4)",
                .integer(at), .text(token), .text(kind), .optional(replacement))
        }
        try connection.run(
            """
            INSERT INTO messages (id, app, payload, target_kind, priority, ttl_seconds, created_at, expires_at)
            VALUES ('now-or-never', 'default', '{}', 'tokens', 'high', 0, 1000, 1000)
            """)

        try PGMigrator.migrate(connection)

        let tombstones = try connection.query(
            "SELECT token, kind, replacement, at FROM token_tombstones ORDER BY token"
        ) { "\($0.string(0)) \($0.string(1)) \($0.optionalString(2) ?? "-") \($0.int(3))" }
        #expect(tombstones == ["a deleted - 2", "b replaced b2 3"])
        #expect(try connection.queryOne("SELECT expires_at FROM messages") { $0.int64(0) } == 6000)
    }
}

@Suite struct TokenNumbersMigrationTests {
    @Test func tokensAlreadyRegisteredKeepTheirFanOutOrderAndNewOnesComeAfter() throws {
        let database = try TestDatabase()
        let connection = try database.connect()
        try PGMigrator.migrate(connection, upTo: 10)
        for (token, at) in [("c", 2), ("b", 1), ("a", 2), ("d", 3)] as [(String, Int64)] {
            try connection.run(
                #"INSERT INTO tokens (token, app, "user", created_at, updated_at) VALUES ($1, 'default', 'u', $2, $2)"#,
                .text(token), .integer(at))
        }

        try PGMigrator.migrate(connection)
        try connection.run(
            #"INSERT INTO tokens (token, app, "user", created_at, updated_at) VALUES ('0-new', 'default', 'u', 0, 0)"#)

        let order = try connection.query("SELECT token FROM tokens ORDER BY rowid") { $0.string(0) }
        #expect(order == ["b", "a", "c", "d", "0-new"])
    }
}
