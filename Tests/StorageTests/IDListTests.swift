import Testing

@testable import Storage

/// How the writer hands SQLite a set of rows: a JSON list for `json_each`, or a range when the ids allow one.
@Suite struct IDListTests {
    @Test func idsBecomeAJSONArraySQLiteReadsBack() throws {
        let ids: [Int64] = [0, 7, 10, 999_999_999_999, -3, .max, .min]
        #expect(SQLValue.idList(ids) == .text("[0,7,10,999999999999,-3,9223372036854775807,-9223372036854775808]"))
        #expect(SQLValue.idList([Int64]()) == .text("[]"))
        let connection = try Connection(path: ":memory:")
        let read = try connection.query("SELECT value FROM json_each(?)", [SQLValue.idList(ids)]) { $0.int64(0) }
        #expect(read == ids)
    }

    private func range(_ ids: [Int64]) -> ClosedRange<Int64>? { SQLiteQueueStore.RowSet(ids).range }

    @Test func aRowSetIsARangeOrAList() {
        let range = SQLiteQueueStore.RowSet([7, 8, 9])
        #expect(range.condition == "id BETWEEN ? AND ?" && range.values == [.integer(7), .integer(9)])
        let list = SQLiteQueueStore.RowSet([7, 9])
        #expect(list.condition == "id IN (SELECT value FROM json_each(?))" && list.values == [.text("[7,9]")])
    }

    @Test func onlyConsecutiveAscendingIdsMakeARange() {
        #expect(range([7, 8, 9]) == 7...9)
        #expect(range([42]) == 42...42)
        #expect(range([]) == nil)
        #expect(range([7, 9, 8]) == nil, "out of order")
        #expect(range([7, 8, 10]) == nil, "a gap")
        #expect(range([7, 7, 8]) == nil, "a duplicate")
        #expect(range([Int64.max, Int64.min]) == nil, "no wrapping around")
        let top: ClosedRange<Int64> = (Int64.max - 1)...Int64.max
        #expect(range([Int64.max - 1, Int64.max]) == top)
    }
}
