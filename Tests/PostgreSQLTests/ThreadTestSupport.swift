import Foundation
import Synchronization
import Testing

@testable import PostgreSQL
import PostgreSQLTestSupport

/// Holds the writer thread inside a job, so the jobs enqueued meanwhile are taken as one group once it opens.
final class WriterGate: Sendable {
    private let entered = DispatchSemaphore(value: 0)
    private let opened = DispatchSemaphore(value: 0)

    /// Enqueues the job that waits, and returns once the writer is inside it.
    init(_ writer: PGWriter) {
        writer.enqueue({ [entered, opened] (_: PGQueueStore) in
            entered.signal()
            opened.wait()
        }, completion: { _ in })
        entered.wait()
    }

    func open() { opened.signal() }
}

/// Results arriving on other threads, collected for the test thread.
final class Collected<T: Sendable>: Sendable {
    private let items = Mutex<[T]>([])

    func append(_ item: T) { items.withLock { $0.append(item) } }
    var all: [T] { items.withLock { $0 } }
}

extension TestDatabase {
    /// A connection to the server's `postgres` database, which stays reachable while this one refuses connections.
    func connectElsewhere() throws -> PGConnection { try PGConnection(url: Self.url(url, database: "postgres")) }

    /// Ends this database's sessions of `applicationName`, waiting until they are gone; returns how many.
    func terminate(applicationName: String) throws -> Int {
        try connectElsewhere().query(
            """
            SELECT pg_terminate_backend(pid, 30000) FROM pg_stat_activity
            WHERE datname = $1 AND application_name = $2
            """, [.text(name), .text(applicationName)]) { $0.bool(0) }.count
    }

    /// Ends session `pid`, waiting until it is gone.
    func terminate(pid: Int32) throws {
        let ended = try connectElsewhere().queryOne("SELECT pg_terminate_backend($1, 30000)", [.integer(Int64(pid))]) {
            $0.bool(0)
        }
        #expect(ended == true)
    }

    /// Stops (or again allows) new connections to this database.
    func allowConnections(_ allowed: Bool) throws {
        try connectElsewhere().execute("ALTER DATABASE \(name) ALLOW_CONNECTIONS \(allowed)")
    }

    /// One number from `sql` on a connection of its own.
    func count(_ sql: String, _ arguments: [PGValue] = []) throws -> Int {
        try connect().queryOne(sql, arguments) { $0.int(0) } ?? 0
    }
}
