import Testing

@testable import PostgreSQL
import PostgreSQLTestSupport

@Suite struct TransactionTests {
    struct Abort: Error {}

    let database: TestDatabase
    let connection: PGConnection

    init() throws {
        database = try TestDatabase()
        connection = try database.connect()
        try connection.execute("CREATE TABLE items (name TEXT PRIMARY KEY)")
    }

    private func names(_ connection: PGConnection? = nil) throws -> [String] {
        try (connection ?? self.connection).query("SELECT name FROM items ORDER BY name") { $0.string(0) }
    }

    @Test func aTransactionCommitsWhenItsBodyReturns() throws {
        let other = try database.connect()
        let value = try connection.transaction {
            try connection.run("INSERT INTO items VALUES ($1)", "a")
            #expect(connection.isInTransaction)
            #expect(try names(other).isEmpty, "another connection sees an uncommitted row")
            return 7
        }
        #expect(value == 7)
        #expect(!connection.isInTransaction)
        #expect(try names(other) == ["a"])
    }

    @Test func aTransactionRollsBackWhenItsBodyThrows() throws {
        #expect(throws: Abort.self) {
            try connection.transaction {
                try connection.run("INSERT INTO items VALUES ($1)", "a")
                throw Abort()
            }
        }
        #expect(!connection.isInTransaction)
        #expect(try names().isEmpty)
    }

    @Test func aCaughtFailureInsideStillFailsTheCommit() throws {
        try connection.run("INSERT INTO items VALUES ($1)", "dup")
        let error = #expect(throws: PGError.self) {
            try connection.transaction {
                try connection.run("INSERT INTO items VALUES ($1)", "new")
                // PostgreSQL aborts the transaction here; COMMIT would silently answer ROLLBACK.
                _ = try? connection.run("INSERT INTO items VALUES ($1)", "dup")
            }
        }
        #expect(error?.sqlState == "25P02")
        #expect(!connection.isInTransaction)
        #expect(try names() == ["dup"])
    }

    @Test func aFailedSavepointUndoesOnlyItsOwnWrites() throws {
        try connection.run("INSERT INTO items VALUES ($1)", "dup")
        try connection.transaction {
            try connection.run("INSERT INTO items VALUES ($1)", "kept")
            let error = #expect(throws: PGError.self) {
                try connection.savepoint {
                    try connection.run("INSERT INTO items VALUES ($1)", "undone")
                    try connection.run("INSERT INTO items VALUES ($1)", "dup")
                }
            }
            #expect(error?.isUniqueViolation == true)
            try connection.savepoint {
                try connection.savepoint { try connection.run("INSERT INTO items VALUES ($1)", "nested") }
            }
        }
        #expect(try names() == ["dup", "kept", "nested"])
    }

    @Test func aTransactionInsideATransactionIsRefused() throws {
        #expect(throws: PGError.self) {
            try connection.transaction {
                try connection.run("INSERT INTO items VALUES ($1)", "outer")
                try connection.transaction { try connection.run("INSERT INTO items VALUES ($1)", "inner") }
            }
        }
        #expect(try names().isEmpty)
    }

    @Test func serializableTransactionsRun() throws {
        let level = try connection.transaction(isolation: .serializable) {
            try connection.queryOne("SHOW transaction_isolation") { $0.string(0) }
        }
        #expect(level == "serializable")
    }
}
