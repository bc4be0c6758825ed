import Foundation
import Testing

/// What `herald serve` and the other commands demand of the database before they touch it: WAL, and a schema
/// they match.
@Suite struct DatabaseRequirementTests {
    let directory = HeraldProcess.makeDirectory()
    var db: String { directory.appendingPathComponent("herald.db").path }

    @Test func serveRefusesToStartWhenTheDatabaseCannotBeInWALMode() throws {
        // Something in the way of the write-ahead log: SQLite cannot create herald.db-wal.
        try FileManager.default.createDirectory(atPath: db + "-wal", withIntermediateDirectories: false)
        let result = try runHerald(["serve", "--db", db, "--listen", "127.0.0.1:0", "--sandbox"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("herald serve: cannot use WAL journal mode on \(db)"), "\(result.stderr)")
        #expect(result.stderr.contains("Herald needs WAL"), "\(result.stderr)")
    }
}
