import Foundation
import Testing

import Queue
@testable import Storage

private let t0: Int64 = 1_700_000_000_000

@Suite struct DeliveryStoreTests {
    let directory = TemporaryDirectory()
    let writer: DatabaseWriter

    init() throws {
        writer = try DatabaseWriter(path: directory.path("herald.db"))
    }

    @discardableResult
    private func enqueue(_ tokens: [String], priority: String = "normal", ttl: Int = 3600, at now: Int64) throws -> String {
        try writer.write { try $0.insertMessage(NewMessage(
            app: "default", payload: "{}", target: .tokens(tokens), priority: priority, ttlSeconds: ttl), now: now).id }
    }

    @discardableResult
    private func claim(limit: Int = 100, owner: String = "w1", now: Int64) throws -> ClaimResult {
        try writer.write { try $0.claim(app: "default", limit: limit, owner: owner, leaseMillis: 60_000, now: now) }
    }

    private func states() throws -> [String: String] {
        Dictionary(uniqueKeysWithValues: try writer.write {
            try $0.query("SELECT token, state || coalesce('/' || reason, '') FROM deliveries") { ($0.string(0), $0.string(1)) }
        })
    }

    @Test func claimTakesHighPriorityFirstThenOldest() throws {
        try enqueue(["old-normal"], at: t0)
        try enqueue(["new-normal"], at: t0 + 10)
        try enqueue(["new-high"], priority: "high", at: t0 + 20)
        let claimed = try claim(limit: 2, now: t0 + 100)
        #expect(claimed.deliveries.map(\.token) == ["new-high", "old-normal"])
        #expect(try states()["new-normal"] == "queued")
        #expect(try claim(now: t0 + 100).deliveries.map(\.token) == ["new-normal"])
        #expect(try claim(now: t0 + 100).deliveries.isEmpty)
    }

    @Test func claimSkipsRowsNotYetDueAndReportsWhenTheNextIsDue() throws {
        try enqueue(["later"], at: t0 + 5_000)
        let claimed = try claim(now: t0)
        #expect(claimed.deliveries.isEmpty)
        #expect(claimed.nextDueAt == t0 + 5_000)
    }

    @Test func pausedOrGatedAppsGetNothing() throws {
        try enqueue(["a"], at: t0)
        try writer.write { _ = try $0.pauseApp("default", reason: "test", now: t0) }
        #expect(try claim(now: t0 + 1).deliveries.isEmpty)
        try writer.write { _ = try $0.resumeApp("default") }
        try writer.write { try $0.closeGate("default", until: t0 + 2_000) }
        #expect(try claim(now: t0 + 1_999).deliveries.isEmpty)
        #expect(try claim(now: t0 + 2_000).deliveries.map(\.token) == ["a"])
    }

    @Test func expiredRowsAreDeadLettersNotSends() throws {
        try enqueue(["short"], ttl: 1, at: t0)
        try enqueue(["now-or-never"], ttl: 0, at: t0)
        let claimed = try claim(now: t0 + 1_000)
        #expect(claimed.deliveries.map(\.token) == ["now-or-never"])
        #expect(claimed.expired == 1)
        #expect(try states()["short"] == "dead/Expired")
    }

    @Test func outcomesOnlyTouchRowsStillLeasedByTheirOwner() throws {
        try enqueue(["a", "b", "c", "d"], at: t0)
        let ids = try claim(now: t0).deliveries.map(\.id)
        let updated = try writer.write { connection in
            try connection.apply([
                .delivered(id: ids[0], fcmMessageID: "0:1", canonicalToken: "a2", status: 200),
                .retry(id: ids[1], at: t0 + 9_000, reason: .unavailable, status: 503),
                .dead(id: ids[2], reason: .invalidRegistration, status: 200),
            ], owner: "w1", now: t0 + 1)
        }
        #expect(updated.updated == Array(ids[0...2]))
        let stranger = try writer.write { try $0.apply([.dropped(id: ids[3], reason: .notRegistered, status: 200)], owner: "w2", now: t0) }
        #expect(stranger.updated.isEmpty)
        let rows = try writer.write {
            try $0.query("SELECT token, state, attempts, next_attempt_at, fcm_message_id, canonical_token FROM deliveries ORDER BY id") {
                "\($0.string(0)) \($0.string(1)) \($0.int(2)) \($0.int64(3) - t0) \($0.optionalString(4) ?? "-") \($0.optionalString(5) ?? "-")"
            }
        }
        #expect(rows == ["a delivered 1 0 0:1 a2", "b queued 1 9000 - -", "c dead 1 0 - -", "d inflight 0 0 - -"])
    }

    @Test func releaseReturnsALeaseWithoutChargingAnAttempt() throws {
        try enqueue(["a"], at: t0)
        let id = try #require(try claim(now: t0).deliveries.first?.id)
        _ = try writer.write { try $0.apply([.release(id: id)], owner: "w1", now: t0 + 1) }
        let row = try writer.write { try $0.queryOne("SELECT state, attempts, lease_owner FROM deliveries") { "\($0.string(0)) \($0.int(1)) \($0.optionalString(2) ?? "-")" } }
        #expect(row == "queued 0 -")
    }

    @Test func rescuerReturnsOnlyExpiredLeases() throws {
        try enqueue(["a", "b"], at: t0)
        try claim(limit: 1, owner: "dead-process", now: t0)
        try claim(limit: 1, owner: "live-process", now: t0 + 30_000)
        let rescued = try writer.write { try $0.rescueExpiredLeases(now: t0 + 60_000) }
        #expect(rescued == 1)
        #expect(try states() == ["a": "queued", "b": "inflight"])
    }

    @Test func foreignLeasesAreReleasedAtStartUp() throws {
        try enqueue(["a", "b"], at: t0)
        try claim(limit: 1, owner: "previous-run", now: t0)
        try claim(limit: 1, owner: "this-run", now: t0)
        let released = try writer.write { try $0.releaseForeignLeases(owner: "this-run", now: t0 + 1) }
        #expect(released == 1)
        #expect(try states() == ["a": "queued", "b": "inflight"])
    }
}
