import CLibPQ
import Foundation

/// The rows (or the command tag) one statement returned. Values arrive in PostgreSQL's text format and are parsed
/// on access, so reading a column as the wrong type gives what the text parses to (0 for non-numeric text), as
/// SQLite's column functions do.
public final class PGResult {
    let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }

    deinit { PQclear(handle) }

    /// The number of rows.
    public var count: Int { Int(PQntuples(handle)) }

    /// Rows inserted, updated, deleted, selected… (`PQcmdTuples`); 0 for commands that report none.
    public var affectedRows: Int { Int(String(cString: PQcmdTuples(handle))) ?? 0 }

    /// The command tag: `INSERT 0 1`, `COMMIT`, `ROLLBACK`…
    public var commandTag: String { String(cString: PQcmdStatus(handle)) }

    public subscript(row: Int) -> PGRow {
        precondition(row >= 0 && row < count, "row \(row) out of 0..<\(count)")
        return PGRow(result: self, row: Int32(row))
    }

    /// Every row mapped by `transform`.
    public func map<T>(_ transform: (PGRow) throws -> T) rethrows -> [T] {
        var rows: [T] = []
        rows.reserveCapacity(count)
        for index in 0..<count { rows.append(try transform(self[index])) }
        return rows
    }
}

/// One row of a `PGResult`, read by column index as in Storage's `Statement` (`$0.int64(0)`, `$0.string(1)`).
public struct PGRow {
    let result: PGResult
    let row: Int32

    private var handle: OpaquePointer { result.handle }

    public func isNull(_ column: Int32) -> Bool { PQgetisnull(handle, row, column) == 1 }

    public func int64(_ column: Int32) -> Int64 { strtoll(PQgetvalue(handle, row, column), nil, 10) }

    public func int(_ column: Int32) -> Int { Int(int64(column)) }

    public func double(_ column: Int32) -> Double { strtod(PQgetvalue(handle, row, column), nil) }

    /// `boolean` columns arrive as `t` / `f`.
    public func bool(_ column: Int32) -> Bool { PQgetvalue(handle, row, column)?.pointee == CChar(UInt8(ascii: "t")) }

    public func string(_ column: Int32) -> String {
        guard let value = PQgetvalue(handle, row, column) else { return "" }
        let count = Int(PQgetlength(handle, row, column))
        return value.withMemoryRebound(to: UInt8.self, capacity: count) {
            String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self)
        }
    }

    /// A `bytea` column.
    public func bytes(_ column: Int32) -> [UInt8] {
        guard let value = PQgetvalue(handle, row, column) else { return [] }
        var length = 0
        guard let decoded = value.withMemoryRebound(to: UInt8.self, capacity: 1, { PQunescapeBytea($0, &length) })
        else { return [] }
        defer { PQfreemem(decoded) }
        return Array(UnsafeBufferPointer(start: decoded, count: length))
    }

    public func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }

    public func optionalInt(_ column: Int32) -> Int? { isNull(column) ? nil : int(column) }

    public func optionalDouble(_ column: Int32) -> Double? { isNull(column) ? nil : double(column) }

    public func optionalBool(_ column: Int32) -> Bool? { isNull(column) ? nil : bool(column) }

    public func optionalString(_ column: Int32) -> String? { isNull(column) ? nil : string(column) }

    public func optionalBytes(_ column: Int32) -> [UInt8]? { isNull(column) ? nil : bytes(column) }
}
