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

    @Test func onlyConsecutiveAscendingIdsMakeARange() {
        #expect(SQLiteQueueStore.consecutive([7, 8, 9]) == 7...9)
        #expect(SQLiteQueueStore.consecutive([42]) == 42...42)
        #expect(SQLiteQueueStore.consecutive([]) == nil)
        #expect(SQLiteQueueStore.consecutive([7, 9, 8]) == nil, "out of order")
        #expect(SQLiteQueueStore.consecutive([7, 8, 10]) == nil, "a gap")
        #expect(SQLiteQueueStore.consecutive([7, 7, 8]) == nil, "a duplicate")
        #expect(SQLiteQueueStore.consecutive([Int64.max, Int64.min]) == nil, "no wrapping around")
        let top: ClosedRange<Int64> = (Int64.max - 1)...Int64.max
        #expect(SQLiteQueueStore.consecutive([Int64.max - 1, Int64.max]) == top)
    }
}
