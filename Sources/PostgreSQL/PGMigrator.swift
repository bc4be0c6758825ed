import Support
import Queue

/// Applies `migrations/postgres/NNNN_name.sql` (compiled into the binary) in order, each in its own transaction,
/// and records them in `schema_migrations`, as Storage's `Migrator` does for SQLite with the same numbers.
/// Refuses a database whose schema is newer than this binary.
///
/// Several Heralds may start at once on one database: each transaction first takes a transaction-scoped
/// advisory lock, so one applies a migration while the others wait and then find it applied.
public enum PGMigrator {
    public struct NewerDatabaseError: Error, CustomStringConvertible {
        public var databaseVersion: Int
        public var binaryVersion: Int
        public var description: String {
            "the database has schema version \(databaseVersion) but this herald knows only up to \(binaryVersion); "
                + "run a newer herald (downgrades are not supported)"
        }
    }

    /// The advisory lock every migration transaction takes: "herald" in ASCII.
    public static let advisoryLockKey: Int64 = 0x6865_7261_6c64

    public static var latestVersion: Int { embeddedPostgresMigrations.last?.version ?? 0 }

    /// Brings the schema up to date (or up to `target`, for tests of a migration's data step); returns the versions
    /// applied now (empty when it already was).
    @discardableResult
    public static func migrate(_ connection: PGConnection, upTo target: Int = .max) throws -> [Int] {
        var applied: [Int] = []
        while let version = try applyNext(connection, upTo: target) { applied.append(version) }
        return applied
    }

    /// Applies the first migration the database lacks, in one transaction under the lock; nil when none is left.
    private static func applyNext(_ connection: PGConnection, upTo target: Int) throws -> Int? {
        try connection.transaction {
            try connection.run("SELECT pg_advisory_xact_lock($1)", .integer(advisoryLockKey))
            // Under the lock: two instances creating it at once would otherwise collide on the catalog.
            try connection.execute("""
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version    INTEGER PRIMARY KEY,
                    name       TEXT NOT NULL,
                    applied_at BIGINT NOT NULL
                )
                """)
            let current = try currentVersion(connection)
            guard current <= latestVersion else {
                throw NewerDatabaseError(databaseVersion: current, binaryVersion: latestVersion)
            }
            guard let migration = embeddedPostgresMigrations.first(where: { $0.version > current }),
                migration.version <= target
            else {
                return nil
            }
            try connection.execute(migration.sql)
            try connection.run(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
                .integer(Int64(migration.version)), .text(migration.name), .integer(Clock.nowMillis()))
            return migration.version
        }
    }

    /// The schema version recorded in the database; 0 for a database Herald never migrated.
    public static func currentVersion(_ connection: PGConnection) throws -> Int {
        let tracked = try connection.queryOne("SELECT to_regclass('schema_migrations') IS NOT NULL") { $0.bool(0) }
        guard tracked == true else { return 0 }
        return try connection.queryOne("SELECT coalesce(max(version), 0) FROM schema_migrations") { $0.int(0) } ?? 0
    }

    /// Throws `DatabaseRequirementError` unless the schema is exactly this binary's (as SQLite's
    /// `Migrator.requireCurrent`).
    public static func requireCurrent(_ connection: PGConnection) throws {
        try DatabaseRequirementError.requireSchema(
            version: currentVersion(connection), latest: latestVersion, location: connection.redactedURL)
    }
}
