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

    /// Brings the schema up to date; returns the versions applied now (empty when it already was).
    @discardableResult
    public static func migrate(_ connection: Connection) throws -> [Int] {
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
        for migration in embeddedMigrations where migration.version > current {
            try connection.transaction {
                // Re-check inside the write lock: another process may have migrated meanwhile.
                guard try currentVersion(connection) < migration.version else { return }
                try connection.execute(migration.sql)
                try connection.run(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    .integer(Int64(migration.version)), .text(migration.name), .integer(Clock.nowMillis()))
                applied.append(migration.version)
            }
        }
        return applied
    }

    /// The schema version recorded in the database; 0 for a database Herald never migrated.
    public static func currentVersion(_ connection: Connection) throws -> Int {
        let tracked = try connection.queryOne(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'") { _ in true }
        guard tracked != nil else { return 0 }
        return try connection.queryOne("SELECT coalesce(max(version), 0) FROM schema_migrations") { $0.int(0) } ?? 0
    }
}
