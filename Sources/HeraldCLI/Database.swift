import Foundation
import PostgreSQL
import Queue
import Storage
import Support

/// Where `--db` (or `HERALD_DB`, or the config file's `db`) points: a SQLite file, or a PostgreSQL database that
/// several `herald serve` may share.
enum DatabaseLocation: Sendable, CustomStringConvertible {
    case sqlite(path: String)
    /// A libpq connection string: a `postgres://` or `postgresql://` URL, or keyword/value (`host=db dbname=herald`).
    /// It may hold a password, so it is never printed as is.
    case postgres(url: String)

    init(_ text: String) {
        self = PGConnectionString.isPostgreSQL(text) ? .postgres(url: text) : .sqlite(path: text)
    }

    /// The value of `--db`, else `HERALD_DB`, else `herald.db`.
    init(_ arguments: Arguments) {
        self.init(arguments.value("db") ?? ProcessInfo.processInfo.environment["HERALD_DB"] ?? "herald.db")
    }

    /// Fit for messages and logs: a PostgreSQL password is masked.
    var description: String {
        switch self {
        case .sqlite(let path): path
        case .postgres(let url): PGConnectionString.redacted(url)
        }
    }
}

/// Opens the database a maintenance command works on (`--db`, else `HERALD_DB`, else `herald.db`).
/// Refuses to create one: a typo in a path must not silently make an empty queue. Refuses a schema other than this
/// binary's rather than migrating it: only `migrate` and `serve` change the schema, so a newer herald's command
/// never upgrades it under an older `serve` that is still running.
func openExistingDatabase(_ arguments: Arguments) throws -> any Store {
    switch DatabaseLocation(arguments) {
    case .sqlite(let path):
        guard FileManager.default.fileExists(atPath: path) else {
            throw CommandError(
                description: "no database at \(path) (give --db PATH, or run `herald migrate --db PATH` first)")
        }
        let connection = try Storage.Connection(path: path)
        try Migrator.requireCurrent(connection)
        return SQLiteQueueStore(connection: connection)
    case .postgres(let url):
        let connection = try PGConnection(url: url, applicationName: "herald-cli")
        try PGMigrator.requireCurrent(connection)
        return PGQueueStore(connection: connection)
    }
}
