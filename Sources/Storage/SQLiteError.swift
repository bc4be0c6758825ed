import CSQLite
import Queue

/// A failed SQLite call: the result code, SQLite's message and the statement (never its arguments),
/// so a caller can `catch` by code and a log line says what failed.
public struct SQLiteError: StoreError, Sendable, CustomStringConvertible {
    public var code: Int32
    public var extendedCode: Int32
    public var message: String
    public var sql: String?

    public init(code: Int32, extendedCode: Int32? = nil, message: String, sql: String? = nil) {
        self.code = code
        self.extendedCode = extendedCode ?? code
        self.message = message
        self.sql = sql
    }

    /// Busy, full or I/O trouble: the request may succeed later, so ingest answers 503 with Retry-After.
    public var isTransient: Bool {
        [SQLITE_BUSY, SQLITE_LOCKED, SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM, SQLITE_PROTOCOL].contains(code)
    }

    public var isConstraintViolation: Bool { code == SQLITE_CONSTRAINT }

    public var description: String {
        var text = "SQLite error \(extendedCode): \(message)"
        if let sql { text += " (in: \(sql))" }
        return text
    }
}
