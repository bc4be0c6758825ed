import Foundation
import PostgreSQL
import PostgreSQLTestSupport
import Queue
import Storage
import Testing
import TestSupport

/// The engines the shared suites (`QueueStoreSuite`, `AdminStoreSuite`) run on: every test runs once per engine with
/// the same code, so an engine is done when the suites pass on it (as River's `riverdrivertest`).
enum Engine: String, CustomTestStringConvertible, Sendable {
    case sqlite, postgres

    /// SQLite always; PostgreSQL where `HERALD_TEST_POSTGRES_URL` names a server (`scripts/test` starts one, so CI
    /// runs both). Without it the suites still hold SQLite to the queue's rules; `PostgreSQLTests`, which start a
    /// server of their own, stay the place that fails when PostgreSQL cannot be had.
    static let available: [Engine] =
        ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_URL", default: ""].isEmpty
            ? [.sqlite] : [.sqlite, .postgres]

    var testDescription: String { rawValue }

    /// A fresh, migrated, empty database of this engine.
    func make() throws -> StoreUnderTest {
        switch self {
        case .sqlite: try SQLiteStore()
        case .postgres: try PostgresStore()
        }
    }
}

/// A queue store as the suite drives it: the store operations in a transaction each (`write`), what ingest, the
/// registry and the CLI do, and plain SQL to read the outcome. SQL uses `$1`, `$2`… in ascending order of first
/// use, which SQLite reads as the same positions PostgreSQL does; each query returns one text column.
protocol StoreUnderTest: AnyObject {
    /// The store itself, as the service and the commands hold it (`AdminStoreSuite` drives it directly).
    var database: any Store { get }
    func write<T>(_ body: (any QueueStore) throws -> T) throws -> T
    func insert(_ message: NewMessage, now: Int64) throws -> AcceptedMessage
    func register(_ token: String, app: String, user: String?, now: Int64) throws
    func pause(_ app: String, now: Int64) throws
    func resume(_ app: String) throws
    func closeGate(_ app: String, until: Int64, reason: GateReason, now: Int64) throws
    func cancel(_ messageID: String, now: Int64) throws -> Int?
    func setTTLZeroWindow(_ millis: Int64)
    func strings(_ sql: String, _ arguments: [SQLValue]) throws -> [String]
}

extension StoreUnderTest {
    func strings(_ sql: String) throws -> [String] { try strings(sql, []) }
}

/// SQLite: a `SQLiteQueueStore` on a file in a directory of its own, every write in `BEGIN IMMEDIATE` as the
/// writer's.
final class SQLiteStore: StoreUnderTest {
    private let directory = TemporaryDirectory(prefix: "herald-store")
    let store: SQLiteQueueStore

    init() throws {
        let connection = try Connection(path: directory.path("herald.db"))
        try connection.requireWAL()
        try Migrator.migrate(connection)
        store = SQLiteQueueStore(connection: connection)
    }

    var database: any Store { store }

    func write<T>(_ body: (any QueueStore) throws -> T) throws -> T {
        try store.transaction { try body(store) }
    }

    func insert(_ message: NewMessage, now: Int64) throws -> AcceptedMessage {
        try store.transaction { try store.insertMessage(message, now: now) }
    }

    func register(_ token: String, app: String, user: String?, now: Int64) throws {
        _ = try store.transaction { try store.upsertToken(token, app: app, user: user, now: now) }
    }

    func pause(_ app: String, now: Int64) throws {
        try store.transaction { _ = try store.pauseApp(app, reason: "test", now: now) }
    }

    func resume(_ app: String) throws { try store.transaction { _ = try store.resumeApp(app) } }

    func closeGate(_ app: String, until: Int64, reason: GateReason, now: Int64) throws {
        try store.transaction { try store.closeGate(app, until: until, reason: reason, now: now) }
    }

    func cancel(_ messageID: String, now: Int64) throws -> Int? {
        try store.transaction { try store.cancelMessage(id: messageID, now: now) }
    }

    func setTTLZeroWindow(_ millis: Int64) { store.ttlZeroWindowMillis = millis }

    func strings(_ sql: String, _ arguments: [SQLValue]) throws -> [String] {
        try store.connection.query(sql, arguments) { $0.optionalString(0) ?? "NULL" }
    }
}

/// PostgreSQL: a schema of its own on the test server (`TestServer`), dropped afterwards, so tests run in
/// parallel on one database; every write in a transaction through `PGQueueStore.write`.
final class PostgresStore: StoreUnderTest {
    let schema: PGTestSchema
    let store: PGQueueStore

    init() throws {
        schema = try PGTestSchema()
        store = PGQueueStore(connection: try schema.connect())
        // The suite moves time forward by hand, as on SQLite; `PGLeaseClockTests` covers the database's clock.
        store.leaseClock = .caller
    }

    var database: any Store { store }

    func write<T>(_ body: (any QueueStore) throws -> T) throws -> T { try store.write { try body($0) } }

    func insert(_ message: NewMessage, now: Int64) throws -> AcceptedMessage {
        try store.write { try $0.insertMessage(message, now: now) }
    }

    func register(_ token: String, app: String, user: String?, now: Int64) throws {
        try store.write { try $0.upsertToken(token, app: app, user: user, now: now) }
    }

    func pause(_ app: String, now: Int64) throws {
        try store.write { _ = try $0.pauseApp(app, reason: "test", now: now) }
    }

    func resume(_ app: String) throws { try store.write { _ = try $0.resumeApp(app) } }

    func closeGate(_ app: String, until: Int64, reason: GateReason, now: Int64) throws {
        try store.write { try $0.closeGate(app, until: until, reason: reason, now: now) }
    }

    func cancel(_ messageID: String, now: Int64) throws -> Int? {
        try store.write { try $0.cancelMessage(id: messageID, now: now) }
    }

    func setTTLZeroWindow(_ millis: Int64) { store.ttlZeroWindowMillis = millis }

    func strings(_ sql: String, _ arguments: [SQLValue]) throws -> [String] {
        try store.connection.query(sql, arguments.map(PGValue.init)) { $0.optionalString(0) ?? "NULL" }
    }
}

extension PGValue {
    init(_ value: SQLValue) {
        switch value {
        case .null: self = .null
        case .integer(let integer): self = .integer(integer)
        case .real(let real): self = .real(real)
        case .text(let text): self = .text(text)
        }
    }
}
