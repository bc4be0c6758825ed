import Foundation
import CSQLite
import Queue

/// A value bound to a statement parameter.
public enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)

    public static func optional(_ value: String?) -> SQLValue { value.map(SQLValue.text) ?? .null }
    public static func optional(_ value: Int64?) -> SQLValue { value.map(SQLValue.integer) ?? .null }

    /// Row ids as one JSON array (`[1,2,3]`), for `json_each(?)`: any number of them is one prepared statement.
    /// Written digit by digit: a claim or an answer of 1000 rows builds one on the writer's thread, where
    /// `JSON.array(ids.map(JSON.int))` spent a `String` per id.
    public static func idList(_ ids: some Collection<Int64>) -> SQLValue {
        var text: [UInt8] = [UInt8(ascii: "[")]
        text.reserveCapacity(ids.count * 8 + 2)
        var digits: [UInt8] = []
        digits.reserveCapacity(20)
        for id in ids {
            if text.count > 1 { text.append(UInt8(ascii: ",")) }
            if id < 0 { text.append(UInt8(ascii: "-")) }
            var rest = id.magnitude
            digits.removeAll(keepingCapacity: true)
            repeat {
                digits.append(UInt8(ascii: "0") + UInt8(rest % 10))
                rest /= 10
            } while rest > 0
            text.append(contentsOf: digits.reversed())
        }
        text.append(UInt8(ascii: "]"))
        return .text(String(decoding: text, as: UTF8.self))
    }
}

extension SQLValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
}

/// A prepared statement. Arguments are always bound, never spliced into SQL.
public final class Statement {
    let handle: OpaquePointer
    private unowned let connection: Connection
    public let sql: String

    init(connection: Connection, sql: String) throws {
        var handle: OpaquePointer?
        let code = sqlite3_prepare_v3(connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil)
        guard code == SQLITE_OK, let handle else { throw connection.error(code, sql: sql) }
        self.handle = handle
        self.connection = connection
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    public func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    public func bind(_ arguments: [SQLValue]) throws {
        for (offset, value) in arguments.enumerated() { try bind(value, at: Int32(offset + 1)) }
    }

    public func bind(_ value: SQLValue, at index: Int32) throws {
        let code: Int32
        switch value {
        case .null: code = sqlite3_bind_null(handle, index)
        case .integer(let integer): code = sqlite3_bind_int64(handle, index, integer)
        case .real(let real): code = sqlite3_bind_double(handle, index, real)
        case .text(let text):
            code = text.utf8.withContiguousStorageIfAvailable { bytes in
                sqlite3_bind_text(
                    handle, index, UnsafeRawPointer(bytes.baseAddress!).assumingMemoryBound(to: CChar.self),
                    Int32(bytes.count), herald_sqlite_transient())
            } ?? sqlite3_bind_text(handle, index, text, -1, herald_sqlite_transient())
        }
        guard code == SQLITE_OK else { throw connection.error(code, sql: sql) }
    }

    /// Steps once: true when a row is available, false when the statement is done.
    @discardableResult
    public func step() throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code:
            let error = connection.error(code, sql: sql)
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Binds, steps to completion and resets; for statements that return no rows.
    public func execute(_ arguments: [SQLValue]) throws {
        reset()
        try bind(arguments)
        while try step() {}
    }

    // MARK: - Columns of the current row

    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    public func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    public func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(handle, column)) }

    public func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }

    public func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }

    public func string(_ column: Int32) -> String {
        guard let text = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    public func optionalString(_ column: Int32) -> String? { isNull(column) ? nil : string(column) }

    /// The column's text, as `previous` itself when it holds the same bytes: rows that repeat a value (a multicast's
    /// 1000 deliveries of one message id) share one string instead of allocating one each.
    public func string(_ column: Int32, reusing previous: String?) -> String {
        guard var previous, let text = sqlite3_column_text(handle, column) else { return string(column) }
        let count = Int(sqlite3_column_bytes(handle, column))
        let same = previous.withUTF8 { $0.count == count && (count == 0 || memcmp($0.baseAddress!, text, count) == 0) }
        return same ? previous : string(column)
    }
}
