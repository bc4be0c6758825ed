import Foundation
import Testing

@testable import PostgreSQL
import PostgreSQLTestSupport

/// PostgreSQL's readers: their own connections, read-only, surviving a connection that broke.
@Suite struct PGReadersTests {
    let database: TestDatabase

    init() throws {
        database = try TestDatabase()
        // The schema, as the writer makes it before readers start.
        try PGWriter(url: database.url).close()
    }

    @Test func aReadWhoseConnectionBrokeRunsAgainOnAResetConnection() throws {
        let readers = try PGReaders(url: database.url, count: 1)
        defer { readers.close() }
        let first = try readers.read { $0.connection.backendProcessID }
        try database.terminate(pid: first)
        let apps = try readers.read { try $0.apps() }
        #expect(apps.isEmpty)
        #expect(try readers.read { $0.connection.backendProcessID } != first)
    }

    @Test func readersRefuseToWrite() throws {
        let readers = try PGReaders(url: database.url)
        defer { readers.close() }
        let error = #expect(throws: PGError.self) { try readers.read { try $0.ensureApp("sneaky") } }
        #expect(error?.sqlState == "25006")
        #expect(try database.count("SELECT count(*) FROM apps") == 0)
    }

    @Test func aReadThatCannotReconnectFailsTransiently() throws {
        let readers = try PGReaders(url: database.url, count: 1)
        defer { readers.close() }
        try database.allowConnections(false)
        defer { try? database.allowConnections(true) }
        #expect(try database.terminate(applicationName: "herald-reader") == 1)
        let error = #expect(throws: PGError.self) { try readers.read { try $0.apps() } }
        #expect(error?.isTransient == true)
        try database.allowConnections(true)
        #expect(try readers.read { try $0.apps() }.isEmpty)
    }
}
