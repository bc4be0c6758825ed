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

/// Hands a store to the one thread that uses it from then on.
final class StoreBox: @unchecked Sendable {
    let store: PGQueueStore
    init(_ store: PGQueueStore) { self.store = store }
}

extension PGTestSchema {
    /// Runs `hold` in a transaction on `holder` and, before committing, `wait` on `waiter` on another thread until
    /// that is blocked on a lock `hold` took; then commits and returns both answers.
    func whileHolding<A, B: Sendable>(
        _ holder: PGQueueStore, _ hold: (PGQueueStore) throws -> A,
        _ waiter: PGQueueStore, _ wait: @escaping @Sendable (PGQueueStore) throws -> B
    ) throws -> (A, Result<B, Error>) {
        let answer = Mutex<Result<B, Error>?>(nil)
        let group = DispatchGroup()
        let box = StoreBox(waiter)
        let pid = waiter.connection.backendProcessID
        let observer = try connect()
        let held = try holder.write { holder -> A in
            let held = try hold(holder)
            group.enter()
            Thread {
                defer { group.leave() }
                let result = Result { try box.store.write { try wait($0) } }
                answer.withLock { $0 = result }
            }.start()
            // Not a timing assertion: waits (up to a minute) for the other statement to queue behind this one.
            var blocked = false
            for _ in 0..<60_000 where !blocked {
                blocked = try observer.queryOne(
                    "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1", [.integer(Int64(pid))]
                ) { $0.bool(0) } ?? false
                if !blocked { usleep(1_000) }
            }
            #expect(blocked, "the second statement never waited for the first")
            return held
        }
        group.wait()
        return (held, try #require(answer.withLock { $0 }))
    }
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
