import Foundation
import Queue
import Storage
import Support
import Synchronization
import Testing

@testable import PostgreSQL
import PostgreSQLTestSupport

private let t0: Int64 = 1_700_000_000_000

/// What only PostgreSQL has to hold: several Heralds on one queue, each with its own connection, at once.
/// (Everything one store does alone is in `QueueStoreSuite`, on both engines.)
@Suite struct PGQueueStoreTests {
    let schema: PGTestSchema

    init() throws { schema = try PGTestSchema() }

    private func store() throws -> PGQueueStore {
        let connection = try schema.connect()
        // A claim that waited for another's row locks instead of skipping them would hang this thread forever;
        // fail instead.
        try connection.execute("SET lock_timeout = '30s'")
        return PGQueueStore(connection: connection)
    }

    @discardableResult
    private func enqueue(_ store: PGQueueStore, tokens count: Int, key: String? = nil) throws -> AcceptedMessage {
        try store.write {
            try $0.insertMessage(
                NewMessage(app: "default", idempotencyKey: key, payload: "{}",
                           target: .tokens((0..<count).map { "token-\($0)" })),
                now: t0)
        }
    }

    @Test func aClaimSkipsRowsAnotherInstanceHoldsInsteadOfWaiting() throws {
        let (first, second) = (try store(), try store())
        try enqueue(first, tokens: 6)
        let (mine, theirs) = try first.write { first -> ([Int64], [Int64]) in
            let mine = try first.claim(app: "default", limit: 3, owner: "a", leaseMillis: 60_000, now: t0 + 1)
            // `first` has not committed: its three rows are locked while `second` claims.
            let theirs = try second.write {
                try $0.claim(app: "default", limit: 10, owner: "b", leaseMillis: 60_000, now: t0 + 1)
            }
            return (mine.deliveries.map(\.id), theirs.deliveries.map(\.id))
        }
        #expect(mine.count == 3 && theirs.count == 3)
        #expect(Set(mine).isDisjoint(with: theirs))
        let owners = try first.connection.query(
            "SELECT lease_owner || ' ' || CAST(count(*) AS TEXT) FROM deliveries GROUP BY lease_owner ORDER BY 1"
        ) { $0.string(0) }
        #expect(owners == ["a 3", "b 3"])
    }

    @Test func instancesClaimingAtOnceLeaseEachRowOnce() throws {
        let seeder = try store()
        let rows = 300
        try enqueue(seeder, tokens: rows)
        let instances = try (0..<4).map { _ in try store() }
        let claimed = Mutex<[Int64]>([])
        let failures = Mutex<[String]>([])
        let group = DispatchGroup()
        // Threads of their own: libpq blocks.
        for (index, instance) in instances.enumerated() {
            let box = StoreBox(instance)
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    while true {
                        let ids = try box.store.write { store -> [Int64] in
                            let result = try store.claim(
                                app: "default", limit: 7, owner: "instance-\(index)", leaseMillis: 60_000, now: t0 + 1)
                            let ids = result.deliveries.map(\.id)
                            try store.apply(
                                ids.map { .delivered(id: $0, fcmMessageID: "m", canonicalToken: nil, status: 200) },
                                owner: "instance-\(index)", now: t0 + 2)
                            return ids
                        }
                        if ids.isEmpty { break }
                        claimed.withLock { $0 += ids }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }.start()
        }
        group.wait()
        #expect(failures.withLock { $0 } == [])
        let ids = claimed.withLock { $0 }
        #expect(ids.count == rows, "every row claimed once")
        #expect(Set(ids).count == ids.count, "no row claimed twice")
        let states = try seeder.connection.query(
            "SELECT state || ' ' || CAST(attempts AS TEXT) || ' ' || CAST(count(*) AS TEXT) FROM deliveries "
                + "GROUP BY state, attempts"
        ) { $0.string(0) }
        #expect(states == ["delivered 1 \(rows)"])
    }

    @Test func theSameKeyFromTwoInstancesAtOnceStoresOneMessage() throws {
        let (first, second) = (try store(), try store())
        let outcome = try raceOnKey(first, second, secondPayload: "{}")
        let (original, repeated) = (outcome.first, try outcome.second.get())
        #expect(repeated.isRepeat && repeated.id == original.id && repeated.deliveries == 2)
        #expect(try first.connection.queryOne("SELECT count(*) FROM messages") { $0.int(0) } == 1)
        #expect(try first.connection.queryOne("SELECT count(*) FROM deliveries") { $0.int(0) } == 2)
    }

    @Test func theSameKeyWithAnotherMessageFromTwoInstancesAtOnceIsAConflict() throws {
        let (first, second) = (try store(), try store())
        let outcome = try raceOnKey(first, second, secondPayload: #"{"data":{"x":"2"}}"#)
        #expect(throws: IdempotencyConflict.self) { try outcome.second.get() }
        #expect(try first.connection.queryOne("SELECT count(*) FROM messages") { $0.int(0) } == 1)
    }

    /// `first` stores a message with key "k" and, before committing, waits until `second`, inserting the same key
    /// on another thread, is blocked on it (the unique index); then commits and returns what `second` answered.
    private func raceOnKey(
        _ first: PGQueueStore, _ second: PGQueueStore, secondPayload: String
    ) throws -> (first: AcceptedMessage, second: Result<AcceptedMessage, Error>) {
        let message = NewMessage(app: "default", idempotencyKey: "k", payload: "{}", target: .tokens(["a", "b"]))
        var other = message
        other.payload = secondPayload
        let secondMessage = other
        return try schema.whileHolding(first, { try $0.insertMessage(message, now: t0) },
                                       second, { try $0.insertMessage(secondMessage, now: t0 + 1) })
    }

    /// Two instances whose clocks are twenty minutes apart, each passing its own time as `now`, agree on when a
    /// lease runs out: PostgreSQL's clock stamps, renews and expires it (`PGQueueStore.LeaseClock.database`).
    @Test func leasesRunOnTheDatabasesClockWhateverTheInstancesClocksSay() throws {
        let (slow, fast) = (try store(), try store())
        let local = Clock.nowMillis()
        let (slowNow, fastNow) = (local - 600_000, local + 600_000)
        try slow.write {
            _ = try $0.insertMessage(NewMessage(app: "default", payload: "{}", target: .tokens(["a", "b"])),
                                     now: slowNow - 60_000)
        }
        func databaseNow() throws -> Int64 {
            try #require(try slow.connection.queryOne("SELECT " + PGLeaseSQL.databaseNow) { $0.int64(0) })
        }
        func expiry(_ id: Int64) throws -> Int64? {
            try slow.connection.queryOne(
                "SELECT lease_expires_at FROM deliveries WHERE id = $1", [.integer(id)]) { $0.optionalInt64(0) } ?? nil
        }

        // The slow instance leases `a` for a minute: a minute of the database's clock, not of its own.
        var before = try databaseNow()
        let a = try #require(try slow.write {
            try $0.claim(app: "default", limit: 1, owner: "slow", leaseMillis: 60_000, now: slowNow)
        }.deliveries.first?.id)
        var after = try databaseNow()
        #expect(try expiry(a).map { (before + 60_000...after + 60_000).contains($0) } == true)

        // The fast instance's rescuer, ten minutes past that minute by its own clock, leaves the live lease alone.
        #expect(try fast.write { try $0.rescueExpiredLeases(now: fastNow) } == 0)

        // A renewal by the slow instance is again a minute from the database's now.
        before = try databaseNow()
        #expect(try slow.write { try $0.renewLeases([a], owner: "slow", leaseMillis: 60_000, now: slowNow) } == 1)
        after = try databaseNow()
        #expect(try expiry(a).map { (before + 60_000...after + 60_000).contains($0) } == true)

        // A lease that has run out is taken back even by the slow instance, whose clock says it has ten minutes
        // left; the live one stays.
        let b = try #require(try fast.write {
            try $0.claim(app: "default", limit: 1, owner: "fast", leaseMillis: 0, now: fastNow)
        }.deliveries.first?.id)
        #expect(try slow.write { try $0.rescueExpiredLeases(now: slowNow) } == 1)
        #expect(try expiry(b) == nil)
        #expect(try expiry(a) != nil)
    }

    @Test func theClaimWalksTheReadyIndexWithoutSorting() throws {
        let connection = try schema.connect()
        // An empty table would be read sequentially; the point is that the index serves the claim, sorted.
        try connection.execute("SET enable_seqscan = off")
        let plan = try connection.query(
            "EXPLAIN " + PGLeaseSQL.leaseReady, ["w", 60_000, 5, "default", 0, 100, nil]
        ) { $0.string(0) }.joined(separator: "\n")
        #expect(plan.contains("deliveries_ready"), "plan was: \(plan)")
        #expect(!plan.contains("Sort"), "the claim must not sort: \(plan)")
        #expect(plan.contains("LockRows"), "the sub-select must lock (SKIP LOCKED): \(plan)")
    }
}

