import CLibPQ
import Queue

/// A failed PostgreSQL call: the SQLSTATE, the server's (or libpq's) message, the constraint it names and the
/// statement — never its arguments, never a connection string's password — so a caller can `catch` by code and a
/// log line says what failed.
///
/// The server's DETAIL field is left out on purpose: it quotes row values (`Key (token)=(…) already exists`).
///
/// Related PostgreSQL documentation: https://www.postgresql.org/docs/current/errcodes-appendix.html
public struct PGError: StoreError, Sendable, CustomStringConvertible {
    /// The five-character SQLSTATE (`23505`), or nil when the failure happened in libpq (no server answer).
    public var sqlState: String?
    public var message: String
    public var constraint: String?
    public var sql: String?
    /// The connection is gone (the server closed it, the network failed): `reset()` or a new connection is needed.
    public var isConnectionLost: Bool

    public init(
        sqlState: String? = nil, message: String, constraint: String? = nil, sql: String? = nil,
        isConnectionLost: Bool = false
    ) {
        self.sqlState = sqlState
        self.message = message
        self.constraint = constraint
        self.sql = sql
        self.isConnectionLost = isConnectionLost
    }

    /// `unique_violation`: an INSERT met an existing key.
    public var isUniqueViolation: Bool { sqlState == "23505" }

    /// Any integrity constraint (class 23): unique, foreign key, check, not null.
    public var isConstraintViolation: Bool { sqlState?.hasPrefix("23") ?? false }

    /// The request may succeed later (connection trouble, serialization failure, deadlock, lack of resources,
    /// server shutting down), so ingest answers 503 with Retry-After and delivery waits and tries again.
    public var isTransient: Bool {
        if isConnectionLost { return true }
        guard let sqlState else { return false }
        return sqlState.hasPrefix("08") || sqlState.hasPrefix("53") || sqlState.hasPrefix("57P")
            || ["40001", "40P01", "55P03"].contains(sqlState)
    }

    public var description: String {
        var text = "PostgreSQL error"
        if let sqlState { text += " \(sqlState)" }
        text += ": \(message)"
        if isConnectionLost { text += " (connection lost)" }
        if let sql { text += " (in: \(sql))" }
        return text
    }

    /// The error a failed result reports.
    init(result: OpaquePointer, sql: String?, connectionLost: Bool, scrub: (String) -> String) {
        func field(_ code: UInt8) -> String? {
            PQresultErrorField(result, Int32(code)).map { String(cString: $0) }
        }
        let primary = field(UInt8(ascii: "M")) ?? String(cString: PQresultErrorMessage(result))
        let sqlState = field(UInt8(ascii: "C"))
        // The server ends the session after these (administrator or crash shutdown, connection failure).
        let sessionEnded = sqlState.map { $0.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains($0) } ?? false
        self.init(
            sqlState: sqlState, message: scrub(primary.trimmingTrailingNewlines),
            constraint: field(UInt8(ascii: "n")), sql: sql, isConnectionLost: connectionLost || sessionEnded)
    }
}

extension String {
    var trimmingTrailingNewlines: String {
        var text = Substring(self)
        while let last = text.last, last == "\n" || last == " " { text = text.dropLast() }
        return String(text)
    }
}
