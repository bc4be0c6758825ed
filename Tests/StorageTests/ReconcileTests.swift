import Foundation
import Testing

import Queue
@testable import Storage

private let t0: Int64 = 1_700_000_000_000

/// What an FCM answer does to the token registry, the feed and other queued deliveries.
@Suite struct ReconcileTests {
    let directory = TemporaryDirectory()
    let writer: DatabaseWriter

    init() throws {
        writer = try DatabaseWriter(path: directory.path("herald.db"))
    }

    @discardableResult
    private func enqueue(_ tokens: [String], collapseKey: String? = nil, at now: Int64 = t0) throws -> String {
        try writer.write { try $0.insertMessage(NewMessage(
            app: "default", payload: "{}", target: .tokens(tokens), collapseKey: collapseKey), now: now).id }
    }

    private func register(_ token: String, user: String) throws {
        try writer.write { _ = try $0.upsertToken(token, app: "default", user: user, now: t0) }
    }

    /// Leases the deliveries of `message` and applies `outcome(id)` to each (matched by token).
    @discardableResult
    private func answer(_ message: String, _ outcomes: [String: @Sendable (Int64) -> DeliveryUpdate]) throws -> AppliedOutcomes {
        try writer.write { connection in
            let claimed = try connection.claim(app: "default", limit: 1000, owner: "w", leaseMillis: 60_000, now: t0 + 1)
            let updates = claimed.deliveries.filter { $0.messageID == message }.compactMap { delivery in
                outcomes[delivery.token].map { $0(delivery.id) }
            }
            let releases = claimed.deliveries.filter { $0.messageID != message || outcomes[$0.token] == nil }
                .map { DeliveryUpdate.release(id: $0.id) }
            // The other leases go back first, so reconciliation sees them queued as they would be.
            try connection.apply(releases, owner: "w", now: t0 + 2, chargeAttempt: false)
            return try connection.apply(updates, owner: "w", now: t0 + 2)
        }
    }

    /// Claims everything ready and hands it back unsent: what the next claim does before it would send.
    private func claimPass() throws {
        try writer.write { connection in
            let claimed = try connection.claim(app: "default", limit: 1000, owner: "pass", leaseMillis: 60_000, now: t0 + 3)
            try connection.apply(claimed.deliveries.map { .release(id: $0.id) }, owner: "pass", now: t0 + 3,
                                 chargeAttempt: false)
        }
    }

    private func rows() throws -> [String] {
        try writer.write {
            try $0.query("SELECT message_id, token, state || coalesce('/' || reason, '') FROM deliveries ORDER BY id") {
                "\($0.string(1)) \($0.string(2))"
            }
        }
    }

    private func events() throws -> [String] {
        try writer.write {
            try $0.tokenEvents(after: 0, limit: 100).map { "\($0.kind) \($0.token)\($0.replacement.map { " → \($0)" } ?? "")" }
        }
    }

    @Test func notRegisteredDeletesTheTokenAndDropsItsOtherDeliveriesWhenClaimed() throws {
        try register("dead", user: "u1")
        let first = try enqueue(["dead"])
        try enqueue(["dead", "alive"])
        let applied = try answer(first, ["dead": { .dropped(id: $0, reason: .notRegistered, status: 200) }])
        #expect(applied.tokensDeleted == 1)
        #expect(try writer.write { try $0.token("dead") } == nil)
        #expect(try rows() == ["dead dropped/NotRegistered", "dead queued", "alive queued"])
        try claimPass()
        #expect(try rows() == ["dead dropped/NotRegistered", "dead dropped/NotRegistered", "alive queued"],
                "the other delivery to the dead token is dropped when claimed, never sent")
        #expect(try events() == ["deleted dead"])
    }

    @Test func canonicalIdMovesTheRegistryRowAndRetargetsQueuedDeliveriesWhenClaimed() throws {
        try register("23", user: "carol")
        let first = try enqueue(["23"])
        try enqueue(["23"])
        let applied = try answer(first, ["23": { .delivered(id: $0, fcmMessageID: "1:2342", canonicalToken: "32", status: 200) }])
        #expect(applied.tokensReplaced == 1)
        #expect(try writer.write { try $0.token("23") } == nil)
        #expect(try writer.write { try $0.token("32")?.user } == "carol")
        try claimPass()
        #expect(try rows() == ["23 delivered", "32 queued"])
        #expect(try events() == ["replaced 23 → 32"])
    }

    @Test func canonicalIdMergesIntoAnAlreadyRegisteredTokenAndDropsDuplicates() throws {
        try register("old", user: "dave")
        try register("new", user: "dave")
        let first = try enqueue(["old"])
        try enqueue(["old", "new"])
        try answer(first, ["old": { .delivered(id: $0, fcmMessageID: "1", canonicalToken: "new", status: 200) }])
        let tokens = try writer.write { try $0.query("SELECT token, user FROM tokens") { "\($0.string(0)) \($0.string(1))" } }
        #expect(tokens == ["new dave"])
        try claimPass()
        #expect(try rows() == ["old delivered", "old dropped/Replaced", "new queued"])
    }

    @Test func aLaterMessageToADeadTokenIsDroppedInsteadOfSent() throws {
        let first = try enqueue(["gone"])
        try answer(first, ["gone": { .dropped(id: $0, reason: .notRegistered, status: 200) }])
        try enqueue(["gone", "fine"], at: t0 + 10)
        let claimed = try writer.write {
            try $0.claim(app: "default", limit: 100, owner: "w2", leaseMillis: 60_000, now: t0 + 20)
        }
        #expect(claimed.deliveries.map(\.token) == ["fine"])
        #expect(claimed.dropped == 1)
    }

    @Test func aRefusedMessageDeadLettersEveryQueuedDeliveryOfIt() throws {
        let message = try enqueue(["a", "b", "c"])
        let other = try enqueue(["d"])
        try answer(message, ["a": { .deadMessage(id: $0, reason: .messageTooBig, status: 200) }])
        #expect(try rows() == ["a dead/MessageTooBig", "b dead/MessageTooBig", "c dead/MessageTooBig", "d queued"])
        _ = other
    }

    @Test func aNewerCollapseKeySupersedesTheOlderQueuedMessage() throws {
        try enqueue(["t1", "t2"], collapseKey: "score")
        try enqueue(["t1"], collapseKey: "score", at: t0 + 5)
        try enqueue(["t1"], collapseKey: "other", at: t0 + 6)
        try claimPass()
        #expect(try rows() == ["t1 dropped/Collapsed", "t2 queued", "t1 queued", "t1 queued"])
    }

    @Test func applyingTheSameOutcomesTwiceChangesNothingMore() throws {
        try register("dead", user: "u")
        let message = try enqueue(["dead"])
        let (id, first, second) = try writer.write { connection -> (Int64, AppliedOutcomes, AppliedOutcomes) in
            let claimed = try connection.claim(app: "default", limit: 10, owner: "w", leaseMillis: 60_000, now: t0 + 1)
            let id = claimed.deliveries[0].id
            let update = DeliveryUpdate.dropped(id: id, reason: .notRegistered, status: 200)
            return (id, try connection.apply([update], owner: "w", now: t0 + 2), try connection.apply([update], owner: "w", now: t0 + 3))
        }
        #expect(first.updated == [id] && first.tokensDeleted == 1)
        #expect(second == AppliedOutcomes())
        // The token registered again later must not be deleted by a replay either.
        try register("dead", user: "u")
        try writer.write { _ = try $0.apply([.dropped(id: id, reason: .notRegistered, status: 200)], owner: "w", now: t0 + 4) }
        #expect(try writer.write { try $0.token("dead") } != nil)
        #expect(try events() == ["deleted dead"])
        _ = message
    }

    @Test func twoMessagesAnsweredNotRegisteredForOneTokenGiveOneEvent() throws {
        let first = try enqueue(["gone"])
        try answer(first, ["gone": { .dropped(id: $0, reason: .notRegistered, status: 200) }])
        let second = try enqueue(["gone"], at: t0 + 10)
        try answer(second, ["gone": { .dropped(id: $0, reason: .notRegistered, status: 200) }])
        #expect(try events() == ["deleted gone"])
    }

    @Test func theFeedPagesInStableAscendingOrder() throws {
        for index in 0..<5 {
            let message = try enqueue(["dead-\(index)"])
            try answer(message, ["dead-\(index)": { .dropped(id: $0, reason: .notRegistered, status: 200) }])
        }
        let page1 = try writer.write { try $0.tokenEvents(after: 0, limit: 2) }
        let page2 = try writer.write { try $0.tokenEvents(after: page1.last!.id, limit: 2) }
        let page3 = try writer.write { try $0.tokenEvents(after: page2.last!.id, limit: 2) }
        #expect((page1 + page2 + page3).map(\.token) == (0..<5).map { "dead-\($0)" })
        #expect(try writer.write { try $0.tokenEvents(after: page3.last!.id, limit: 2) }.isEmpty)
    }
}
