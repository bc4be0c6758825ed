import Queue
import Support

/// Applies `migrations/NNNN_name.sql` (compiled into the binary) in order, each in its own transaction,
/// and records them in `schema_migrations`. Refuses a database whose schema is newer than this binary.
public enum Migrator {
    public struct NewerDatabaseError: Error, CustomStringConvertible {
        public var databaseVersion: Int
        public var binaryVersion: Int
        public var description: String {
            "the database has schema version \(databaseVersion) but this herald knows only up to \(binaryVersion); "
                + "run a newer herald (downgrades are not supported)"
        }
    }

    public static var latestVersion: Int { embeddedMigrations.last?.version ?? 0 }
    /// The versions of the migrations this binary carries, in order; numbers may skip one that another branch holds.
    public static var versions: [Int] { embeddedMigrations.map(\.version) }

    /// Brings the schema up to date (or up to `target`, for tests that need an older database); returns the versions
    /// applied now (empty when it already was).
    @discardableResult
    public static func migrate(_ connection: Connection, upTo target: Int = latestVersion) throws -> [Int] {
        try connection.execute("""
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version    INTEGER PRIMARY KEY,
                name       TEXT NOT NULL,
                applied_at INTEGER NOT NULL
            ) STRICT
            """)
        let current = try currentVersion(connection)
        guard current <= latestVersion else {
            throw NewerDatabaseError(databaseVersion: current, binaryVersion: latestVersion)
        }
        var applied: [Int] = []
        for migration in embeddedMigrations where migration.version > current && migration.version <= target {
            try connection.transaction {
                // Re-check inside the write lock: another process may have migrated meanwhile.
                guard try currentVersion(connection) < migration.version else { return }
                if migration.sql.contains("writable_schema") {
                    // The schema text is edited in place (SQLite's procedure for changes that leave every stored
                    // row valid): a new schema version makes every open connection parse it again.
                    try connection.withSchemaWritable {
                        try connection.execute(migration.sql)
                        let version = try connection.queryOne("PRAGMA schema_version") { $0.int64(0) } ?? 0
                        try connection.execute("PRAGMA schema_version = \(version + 1)")
                    }
                } else {
                    try connection.execute(migration.sql)
                }
                try connection.run(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    .integer(Int64(migration.version)), .text(migration.name), .integer(Clock.nowMillis()))
                applied.append(migration.version)
            }
        }
        return applied
    }

    /// Throws `DatabaseRequirementError` unless the schema is exactly this binary's. For every command but `migrate`
    /// and `serve`: a newer herald must not upgrade the schema under an older `serve` that is still running, and
    /// an older one must not work on a schema it does not know.
    public static func requireCurrent(_ connection: Connection) throws {
        try DatabaseRequirementError.requireSchema(
            version: currentVersion(connection), latest: latestVersion, location: connection.path)
    }

    /// The schema version recorded in the database; 0 for a database Herald never migrated.
    public static func currentVersion(_ connection: Connection) throws -> Int {
        let tracked = try connection.queryOne(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'") { _ in true }
        guard tracked != nil else { return 0 }
        return try connection.queryOne("SELECT coalesce(max(version), 0) FROM schema_migrations") { $0.int(0) } ?? 0
    }
}
