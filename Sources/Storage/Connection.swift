import CSQLite
import Foundation
import Queue

/// One SQLite connection. Not thread-safe: exactly one thread uses it at a time (the writer thread,
/// a reader thread, or a CLI command), which is why it is not `Sendable`.
///
/// Related SQLite documentation: https://sqlite.org/c3ref/open.html
public final class Connection {
    public enum Mode { case readWrite, readOnly }

    let handle: OpaquePointer
    public let path: String
    private var statements: [String: Statement] = [:]

    /// Process-wide settings, applied once before the first connection initializes the library.
    private static let configured: Void = {
        _ = herald_sqlite_disable_memstatus()
    }()

    /// Opens (and for `.readWrite` creates, with mode 0600) the database at `path`.
    public init(path: String, mode: Mode = .readWrite, busyTimeoutMillis: Int32 = 5_000) throws {
        Self.configured
        self.path = path
        if mode == .readWrite, path != ":memory:" {
            // SQLite creates files with the process umask (usually 0644); a queue of push tokens is private.
            // The -wal and -shm files copy the main file's mode.
            let fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
            if fd >= 0 { close(fd) }
        }
        var handle: OpaquePointer?
        let flags = (mode == .readWrite ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY)
            | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_close_v2(handle)
            throw SQLiteError(code: code & 0xff, extendedCode: code, message: "cannot open \(path): \(message)")
        }
        self.handle = handle
        sqlite3_busy_timeout(handle, busyTimeoutMillis)
        var ignored: Int32 = 0
        herald_sqlite_db_config_int(handle, SQLITE_DBCONFIG_ENABLE_FKEY, 1, &ignored)
        herald_sqlite_db_config_int(handle, SQLITE_DBCONFIG_DEFENSIVE, 1, &ignored)
    }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Runs `body` with SQLite's defensive mode off, which otherwise refuses every write to `sqlite_schema` even
    /// under `PRAGMA writable_schema`: for a migration that edits the schema text in place, and nothing else.
    func withSchemaWritable<T>(_ body: () throws -> T) rethrows -> T {
        var ignored: Int32 = 0
        herald_sqlite_db_config_int(handle, SQLITE_DBCONFIG_DEFENSIVE, 0, &ignored)
        defer { herald_sqlite_db_config_int(handle, SQLITE_DBCONFIG_DEFENSIVE, 1, &ignored) }
        return try body()
    }

    /// Runs SQL that takes no arguments and returns no rows (pragmas, DDL, transaction control).
    public func execute(_ sql: String) throws {
        var error: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &error)
        if code != SQLITE_OK {
            let message = error.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_free(error)
            throw SQLiteError(code: code & 0xff, extendedCode: code, message: message, sql: sql)
        }
    }

    /// Runs a statement without arguments or rows through the statement cache: for the transaction control the
    /// writer repeats for every group and job, which `execute` would parse each time.
    public func executeCached(_ sql: String) throws {
        let statement = try statement(sql)
        while try statement.step() {}
    }

    /// A prepared statement for `sql`, cached on this connection and reset for reuse.
    public func statement(_ sql: String) throws -> Statement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        let statement = try Statement(connection: self, sql: sql)
        statements[sql] = statement
        return statement
    }

    /// Prepares, binds and steps a statement that returns no rows; returns the number of rows changed.
    @discardableResult
    public func run(_ sql: String, _ arguments: SQLValue...) throws -> Int {
        let statement = try statement(sql)
        try statement.bind(arguments)
        while try statement.step() {}
        return changes
    }

    /// All rows of a query, each mapped by `row`.
    public func query<T>(_ sql: String, _ arguments: [SQLValue] = [], row: (Statement) throws -> T) throws -> [T] {
        let statement = try statement(sql)
        try statement.bind(arguments)
        var rows: [T] = []
        while try statement.step() { rows.append(try row(statement)) }
        return rows
    }

    /// The first row of a query, mapped by `row`, or nil.
    public func queryOne<T>(_ sql: String, _ arguments: [SQLValue] = [], row: (Statement) throws -> T) throws -> T? {
        let statement = try statement(sql)
        try statement.bind(arguments)
        defer { statement.reset() }
        return try statement.step() ? row(statement) : nil
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction: committed when it returns, rolled back when it throws.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try within("BEGIN IMMEDIATE", body)
    }

    /// Runs `body` between `begin` and `COMMIT`, rolling back when it throws.
    func within<T>(_ begin: String, _ body: () throws -> T) throws -> T {
        try execute(begin)
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    // MARK: - Settings durability rests on

    /// Switches the database to WAL journal mode, or throws `DatabaseRequirementError`: group commit, readers beside
    /// the writer and crash safety all rest on it. `PRAGMA journal_mode` answers the mode it ended in rather than
    /// failing (an in-memory database stays `memory`; a VFS without shared memory keeps `delete`), so the answer is
    /// what is checked.
    ///
    /// Related SQLite documentation: https://sqlite.org/pragma.html#pragma_journal_mode
    public func requireWAL() throws {
        let mode: String?
        do {
            mode = try queryOne("PRAGMA journal_mode = WAL") { $0.string(0) }
        } catch {
            throw DatabaseRequirementError(description: "cannot use WAL journal mode on \(path): \(error); "
                + DatabaseRequirementError.walHint)
        }
        guard let mode, mode.lowercased() == "wal" else {
            throw DatabaseRequirementError(
                description: "cannot use WAL journal mode on \(path): got \(mode ?? "no answer"); "
                    + DatabaseRequirementError.walHint)
        }
    }

    /// Sets `PRAGMA synchronous` for `durability` and reads it back; throws when it did not take. Outside a
    /// transaction only (SQLite refuses the change inside one).
    public func setSynchronous(_ durability: Durability) throws {
        let actual: Durability?
        do {
            try execute("PRAGMA synchronous = \(durability == .full ? "FULL" : "NORMAL")")
            actual = try synchronous()
        } catch {
            throw DatabaseRequirementError(
                description: "cannot set synchronous=\(durability.rawValue) on \(path): \(error)")
        }
        guard actual == durability else {
            throw DatabaseRequirementError(
                description: "PRAGMA synchronous did not take on \(path): wanted \(durability.rawValue), "
                    + "got \(actual?.rawValue ?? "another level")")
        }
    }

    /// The `synchronous` level in force: `.full` (2), `.normal` (1), or nil for any other (OFF, EXTRA).
    public func synchronous() throws -> Durability? {
        switch try queryOne("PRAGMA synchronous", row: { $0.int(0) }) {
        case 2: .full
        case 1: .normal
        default: nil
        }
    }

    // MARK: - State

    public var changes: Int { Int(sqlite3_changes64(handle)) }
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    func error(_ code: Int32, sql: String?) -> SQLiteError {
        SQLiteError(
            code: code & 0xff, extendedCode: sqlite3_extended_errcode(handle),
            message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }
}

extension DatabaseRequirementError {
    static let walHint = "Herald needs WAL: a database file on a local filesystem with shared-memory support"
}
