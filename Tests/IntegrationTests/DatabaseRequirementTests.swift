import Foundation
import Queue
import Storage
import Testing

/// What `herald serve` and the other commands demand of the database before they touch it: WAL, and a schema
/// they match.
@Suite struct DatabaseRequirementTests {
    let directory = HeraldProcess.makeDirectory()
    var db: String { directory.appendingPathComponent("herald.db").path }

    @Test func serveRefusesToStartWhenTheDatabaseCannotBeInWALMode() throws {
        // Something in the way of the write-ahead log: SQLite cannot create herald.db-wal.
        try FileManager.default.createDirectory(atPath: db + "-wal", withIntermediateDirectories: false)
        let result = try runHerald(["serve", "--db", db, "--listen", "127.0.0.1:0", "--sandbox"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("herald serve: cannot use WAL journal mode on \(db)"), "\(result.stderr)")
        #expect(result.stderr.contains("Herald needs WAL"), "\(result.stderr)")
    }

    // MARK: - Schema changes only from migrate and serve

    /// Every command that opens the database, besides `migrate` and `serve`. `COPY` stands for a path of the test's.
    static let commands: [[String]] = [
        ["status"], ["send", #"{"to": "a"}"#], ["message", "01NOSUCHMESSAGE0000000000"], ["dead", "list"],
        ["dead", "requeue"], ["pause", "default"], ["resume", "default"], ["tokens", "list"],
        ["tokens", "add", "tok", "--user", "u"], ["token-events"], ["prune"], ["backup", "COPY"],
    ]

    func run(_ command: [String]) throws -> (status: Int32, stderr: String, stdout: String) {
        let copy = directory.appendingPathComponent("copy.db").path
        return try runHerald(command.map { $0 == "COPY" ? copy : $0 } + ["--db", db])
    }

    func schemaVersion() throws -> Int {
        try Migrator.currentVersion(Connection(path: db, mode: .readOnly))
    }

    /// The schema version of the herald before this one: that of every migration but the last.
    var previousVersion: Int { Migrator.versions.dropLast().last ?? 0 }

    /// A database as the herald before this one left it: every migration but the last.
    func makeOlderDatabase() throws {
        let connection = try Connection(path: db)
        try connection.requireWAL()
        try Migrator.migrate(connection, upTo: previousVersion)
        try connection.run("INSERT INTO apps (name) VALUES ('default')")
    }

    @Test(arguments: commands)
    func aCommandRefusesAnOlderSchemaAndLeavesItAsItIs(_ command: [String]) throws {
        try makeOlderDatabase()
        let older = previousVersion
        let result = try run(command)
        #expect(result.status == 1, "\(command): \(result.stderr)")
        #expect(result.stderr.contains("has schema version \(older) but this herald needs \(Migrator.latestVersion)"),
                "\(command): \(result.stderr)")
        #expect(result.stderr.contains("run `herald migrate --db \(db)`"), "\(command): \(result.stderr)")
        #expect(try schemaVersion() == older, "\(command) changed the schema")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("copy.db").path))
    }

    @Test(arguments: commands)
    func aCommandRefusesANewerSchema(_ command: [String]) throws {
        #expect(try runHerald(["migrate", "--db", db]).status == 0)
        try Connection(path: db).run(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from a newer herald', 0)",
            .integer(Int64(Migrator.latestVersion + 1)))
        let result = try run(command)
        #expect(result.status == 1, "\(command): \(result.stderr)")
        #expect(result.stderr.contains("newer than this herald's \(Migrator.latestVersion); upgrade herald"),
                "\(command): \(result.stderr)")
    }

    @Test func migrateUpgradesAnOlderSchemaAndThenTheCommandsWork() throws {
        try makeOlderDatabase()
        let migrated = try runHerald(["migrate", "--db", db])
        #expect(migrated.status == 0, "\(migrated.stderr)")
        #expect(try schemaVersion() == Migrator.latestVersion)
        let status = try run(["status"])
        #expect(status.status == 0, "\(status.stderr)")
    }

    @Test func aFileWithoutAHeraldSchemaIsRefusedAndLeftAlone() throws {
        try Connection(path: db).execute("CREATE TABLE unrelated (x)")
        let result = try run(["status"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("\(db) has no Herald schema; run `herald migrate --db \(db)` first"),
                "\(result.stderr)")
        #expect(try schemaVersion() == 0)
    }

    // MARK: - herald send and the apps serve delivers for

    @Test func sendRefusesAnAppThatNoServeDeliversForAsIngestDoes() throws {
        // A serve delivering for the sandbox's apps registers them when it starts.
        let service = try HeraldProcess(directory: directory, arguments: ["--sandbox"])
        #expect(service.stop() == 0)

        let refused = try run(["send", #"{"to": "a", "app": "elsewhere"}"#])
        #expect(refused.status == 1)
        #expect(refused.stderr == "herald send: InvalidParameters: unknown app \"elsewhere\": "
            + "this herald delivers for default, hms, ios, web\n", "\(refused.stderr)")
        let json = try run(["send", #"{"to": "a", "app": "elsewhere"}"#, "--json"])
        #expect(json.status == 1)
        #expect(json.stdout.contains(#""code":"InvalidParameters""#), "\(json.stdout)")

        let accepted = try run(["send", #"{"to": "a"}"#])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        let apps = try Connection(path: db, mode: .readOnly)
            .query("SELECT DISTINCT app FROM messages") { $0.string(0) }
        #expect(apps == ["default"], "only the message for a delivered app is stored")
    }
}
