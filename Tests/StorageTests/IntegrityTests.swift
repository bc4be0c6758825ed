import Foundation
import Testing

import Queue
@testable import Storage

private let t0: Int64 = 1_700_000_000_000

/// Acknowledged work is never lost, misrouted or sent twice (SPEC §3, §5, §11): collapse_key, idempotency keys,
/// TTL 0, leases and the bookkeeping reconciliation reads.
@Suite struct IntegrityTests {
    let directory = TemporaryDirectory()
    let writer: DatabaseWriter

    init() throws {
        writer = try DatabaseWriter(path: directory.path("herald.db"))
    }

    @discardableResult
    private func insert(
        _ tokens: [String], app: String = "default", payload: String = "{}", key: String? = nil,
        collapseKey: String? = nil, ttl: Int = 3600, dryRun: Bool = false, at now: Int64
    ) throws -> AcceptedMessage {
        try writer.write {
            try $0.insertMessage(NewMessage(
                app: app, idempotencyKey: key, payload: payload, target: .tokens(tokens), collapseKey: collapseKey,
                ttlSeconds: ttl, dryRun: dryRun), now: now)
        }
    }

    private func claim(owner: String = "w1", lease: Int64 = 60_000, now: Int64) throws -> ClaimResult {
        try writer.write { try $0.claim(app: "default", limit: 100, owner: owner, leaseMillis: lease, now: now) }
    }

    @discardableResult
    private func apply(_ updates: [DeliveryUpdate], owner: String = "w1", now: Int64) throws -> AppliedOutcomes {
        try writer.write { try $0.apply(updates, owner: owner, now: now) }
    }

    private func state(of messageID: String) throws -> String? {
        try writer.write {
            try $0.queryOne("SELECT state || coalesce('/' || reason, '') FROM deliveries WHERE message_id = ?",
                            [.text(messageID)]) { $0.string(0) }
        }
    }

    /// A older message with collapse_key "score" to T that FCM answered Unavailable: back in the queue in backoff.
    private func olderMessageInBackoff() throws -> String {
        let older = try insert(["T"], collapseKey: "score", at: t0).id
        let claimed = try #require(try claim(now: t0 + 10).deliveries.first)
        try apply([.retry(id: claimed.id, at: t0 + 5_000, reason: .unavailable, status: 200)], now: t0 + 20)
        return older
    }

    // MARK: - collapse_key

    @Test func aDryRunSupersedesNothing() throws {
        let older = try olderMessageInBackoff()
        let dryRun = try insert(["T"], collapseKey: "score", dryRun: true, at: t0 + 1_000).id
        let claimed = try claim(now: t0 + 5_000)
        #expect(Set(claimed.deliveries.map(\.messageID)) == [older, dryRun])
        #expect(claimed.dropped == 0)
    }

    @Test func aCancelledNewerMessageSupersedesNothing() throws {
        let older = try olderMessageInBackoff()
        let newer = try insert(["T"], collapseKey: "score", at: t0 + 1_000).id
        #expect(try writer.write { try $0.cancelMessage(id: newer, now: t0 + 1_100) } == 1)
        #expect(try claim(now: t0 + 5_000).deliveries.map(\.messageID) == [older])
    }

    @Test func aNewerMessageThatDiedSupersedesNothing() throws {
        let older = try olderMessageInBackoff()
        let newer = try insert(["T"], collapseKey: "score", at: t0 + 1_000).id
        let claimed = try #require(try claim(now: t0 + 1_100).deliveries.first)
        #expect(claimed.messageID == newer)
        try apply([.dead(id: claimed.id, reason: .invalidRegistration, status: 200)], now: t0 + 1_200)
        #expect(try claim(now: t0 + 5_000).deliveries.map(\.messageID) == [older])
    }

    @Test func anExpiredNewerMessageSupersedesNothing() throws {
        let older = try olderMessageInBackoff()
        try insert(["T"], collapseKey: "score", ttl: 2, at: t0 + 1_000)
        // At t0 + 5 s the newer one's 2 s TTL is over: it will never reach the device.
        let claimed = try claim(now: t0 + 5_000)
        #expect(claimed.deliveries.map(\.messageID) == [older])
        #expect(claimed.expired == 1)
    }

    @Test func aPendingOrDeliveredNewerMessageCollapsesTheOlderOne() throws {
        let older = try olderMessageInBackoff()
        let newer = try insert(["T"], collapseKey: "score", at: t0 + 1_000).id
        let claimed = try #require(try claim(now: t0 + 1_100).deliveries.first)
        #expect(claimed.messageID == newer)
        try apply([.delivered(id: claimed.id, fcmMessageID: "m", canonicalToken: nil, status: 200)], now: t0 + 1_200)
        let later = try claim(now: t0 + 5_000)
        #expect(later.deliveries.isEmpty && later.dropped == 1)
        #expect(try state(of: older) == "dropped/Collapsed")
    }

    // MARK: - Idempotency-Key

    @Test func idempotencyKeysAreScopedToTheirApp() throws {
        let shop = try insert(["a"], app: "shop", payload: #"{"data":{"order":"42"}}"#, key: "order-42", at: t0)
        let news = try insert(["b"], app: "news", payload: #"{"data":{"story":"1"}}"#, key: "order-42", at: t0 + 1)
        #expect(!news.isRepeat)
        #expect(news.id != shop.id)
        #expect(try state(of: news.id) == "queued")
    }

    @Test func theSameKeyWithTheSameMessageRepeatsTheFirstAnswer() throws {
        let first = try insert(["a", "b"], payload: #"{"data":{"x":"1"}}"#, key: "k", at: t0)
        let again = try insert(["a", "b"], payload: #"{"data":{"x":"1"}}"#, key: "k", at: t0 + 1_000)
        #expect(again.isRepeat && again.id == first.id && again.deliveries == 2)
    }

    @Test func theSameKeyWithAnotherMessageIsAConflictAndStoresNothing() throws {
        try insert(["a"], payload: #"{"data":{"x":"1"}}"#, key: "k", at: t0)
        #expect(throws: IdempotencyConflict.self) {
            try insert(["a"], payload: #"{"data":{"x":"2"}}"#, key: "k", at: t0 + 1_000)
        }
        #expect(throws: IdempotencyConflict.self) {
            try insert(["other"], payload: #"{"data":{"x":"1"}}"#, key: "k", at: t0 + 1_000)
        }
        let messages = try writer.write { try $0.queryOne("SELECT count(*) FROM messages") { $0.int(0) } }
        #expect(messages == 1)
    }

    // MARK: - time_to_live 0

    @Test func ttlZeroIsSentWithinItsWindowOrNever() throws {
        let prompt = try insert(["now"], ttl: 0, at: t0).id
        #expect(try claim(now: t0 + defaultTTLZeroWindowMillis - 1).deliveries.map(\.messageID) == [prompt])

        let held = try insert(["held"], ttl: 0, at: t0).id
        let late = try claim(now: t0 + defaultTTLZeroWindowMillis + 1_000)
        #expect(late.deliveries.isEmpty && late.expired == 1)
        #expect(try state(of: held) == "dead/Expired")
        let requeued = try writer.write {
            try $0.requeueDeadLetters(DeadLetterFilter(), now: t0 + 10_000, limit: 100)
        }
        #expect(requeued == 0)
        #expect(try state(of: held) == "dead/Expired")
    }

    @Test func theTTLZeroWindowIsASetting() throws {
        try writer.write { $0.ttlZeroWindowMillis = 60_000 }
        let id = try insert(["t"], ttl: 0, at: t0).id
        #expect(try claim(now: t0 + 30_000).deliveries.map(\.messageID) == [id])
    }

    // MARK: - Leases

    @Test func renewedLeasesAreNotRescued() throws {
        try insert(["a", "b"], at: t0)
        let claimed = try claim(lease: 1_000, now: t0)
        let ids = claimed.deliveries.map(\.id)
        let renewed = try writer.write { try $0.renewLeases([ids[0]], owner: "w1", leaseMillis: 2_000, now: t0) }
        #expect(renewed == 1)
        #expect(
            try writer.write { try $0.renewLeases([ids[1]], owner: "someone-else", leaseMillis: 2_000, now: t0) } == 0)
        let rescued = try writer.write { try $0.rescueExpiredLeases(now: t0 + 1_500) }
        #expect(rescued == 1)
        // The renewed row's answer still lands; the rescued one's late answer does not.
        let applied = try apply(
            ids.map { .delivered(id: $0, fcmMessageID: "m", canonicalToken: nil, status: 200) }, now: t0 + 1_600)
        #expect(applied.updated == [ids[0]])
    }

    // MARK: - Bookkeeping retention

    @Test func trimmingTheFeedKeepsDeadTokensDead() throws {
        let first = try insert(["dead"], at: t0)
        let claimed = try #require(try claim(now: t0 + 1).deliveries.first)
        try apply([.dropped(id: claimed.id, reason: .notRegistered, status: 200)], now: t0 + 2)
        let later = try insert(["dead"], at: t0 + 10).id
        let trimmed = try writer.write { try $0.pruneTokenEvents(before: t0 + 100, limit: 100) }
        #expect(trimmed == 1)
        #expect(try writer.write { try $0.tokenEvents(after: 0, limit: 10) }.isEmpty)
        let reclaim = try claim(now: t0 + 20)
        #expect(reclaim.deliveries.isEmpty && reclaim.dropped == 1)
        #expect(try state(of: later) == "dropped/NotRegistered")
        #expect(try state(of: first.id) == "dropped/NotRegistered")
    }

    @Test func bookkeepingOlderThanTheLongestTTLIsTrimmedWithoutChangingOutcomes() throws {
        let older = try insert(["T"], collapseKey: "score", ttl: 2_419_200, at: t0).id
        let newer = try insert(["T"], collapseKey: "score", ttl: 2_419_200, at: t0 + 1).id
        let claimed = try #require(try claim(now: t0 + 2).deliveries.first { $0.messageID == newer })
        try apply([.delivered(id: claimed.id, fcmMessageID: "m", canonicalToken: nil, status: 200)], now: t0 + 3)
        #expect(try state(of: older) == "dropped/Collapsed")
        // Nothing is young enough to be trimmed yet.
        #expect(try writer.write { try $0.pruneReconciliationState(now: t0 + 10, limit: 100) } == 0)
        let horizon = t0 + 1 + reconciliationHorizonMillis + 1
        #expect(try writer.write { try $0.pruneReconciliationState(now: horizon, limit: 100) } == 1)
        #expect(try writer.write { try $0.queryOne("SELECT count(*) FROM collapse_heads") { $0.int(0) } } == 0)
    }
}
