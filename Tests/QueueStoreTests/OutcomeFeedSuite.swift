import Foundation
import Queue
import Support
import Testing

private let t0: Int64 = 1_700_000_000_000

/// The outcome feed and the outcome webhooks' durable state, the same test code on every engine (`Engine`).
@Suite struct OutcomeFeedSuite {
    typealias Queue = QueueStoreSuite.Queue

    /// Each feed entry as "token state reason provider-id user".
    static func summary(_ outcomes: [OutcomeRecord]) -> [String] {
        outcomes.map {
            [$0.token, $0.state.rawValue, $0.reason?.rawValue ?? "-", $0.providerMessageID ?? "-", $0.user ?? "-"]
                .joined(separator: " ")
        }
    }

    @Test(arguments: Engine.available) func everyFinalStateIsInTheFeedInCommitOrder(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let sent = try queue.enqueue(["a", "b", "c", "d"])
        let cancelled = try queue.enqueue(["e"], at: t0 + 5)
        let expiring = try queue.enqueue(["f"], ttl: 1)
        try queue.answer(sent, [
            "a": { .delivered(id: $0, fcmMessageID: "fcm-1", canonicalToken: nil, status: 200) },
            "b": { .dropped(id: $0, reason: .notRegistered, status: 200) },
            "c": { .dead(id: $0, reason: .invalidRegistration, status: 200) },
            "d": { .delivered(id: $0, fcmMessageID: "fcm-3", canonicalToken: "d2", status: 200) },
        ])
        #expect(try queue.store.cancel(cancelled, now: t0 + 10) == 1)
        try queue.claim(now: t0 + 5_000)  // f's TTL ran out: dead/Expired at the claim
        let feed = try queue.store.database.outcomes(after: 0, app: nil, limit: 100)
        // In the order the statements ran: one answer's plain successes are written last, together.
        #expect(Self.summary(feed) == [
            "b dropped NotRegistered - -", "c dead InvalidRegistration - -", "d delivered - fcm-3 -",
            "a delivered - fcm-1 -", "e dropped Cancelled - -", "f dead Expired - -",
        ])
        #expect(feed.map(\.seq) == feed.map(\.seq).sorted() && Set(feed.map(\.seq)).count == feed.count)
        #expect(feed[0].messageID == sent && feed[4].messageID == cancelled && feed[5].messageID == expiring)
        #expect(feed[0].at == t0 + 2 && feed[4].at == t0 + 10 && feed[5].at == t0 + 5_000)
        // Requeued and delivered, a dead letter is a second outcome; purging or pruning rows is none.
        #expect(try queue.store.database.transaction {
            try queue.store.database.requeueDeadLetters(DeadLetterFilter(app: "default", reason: "InvalidRegistration"), now: t0, limit: 10)
        } == 1)
        try queue.answer(sent, ["c": { .delivered(id: $0, fcmMessageID: "fcm-2", canonicalToken: nil, status: 200) }])
        _ = try queue.store.database.transaction {
            try queue.store.database.pruneFinishedDeliveries(updatedBefore: .max, limit: 100)
        }
        #expect(Self.summary(try queue.store.database.outcomes(after: feed[5].seq, app: nil, limit: 100))
            == ["c delivered - fcm-2 -"])
    }

    /// A batch of successes as the providers give them: HMS names a whole request with one id (on SQLite, rows under
    /// one id go in together: a range of ids when they are consecutive, else a list), FCM names every token (one row
    /// each). A lease lost meanwhile keeps its row out of the answer and out of the feed, in every shape.
    @Test(arguments: Engine.available)
    func batchSuccessesAreWrittenAndFedOnlyWhereTheLeaseHeld(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.enqueue((0..<16).map { "t\($0)" }, at: t0)
        let ids = try queue.claim(lease: 1_000, now: t0).deliveries.map(\.id)
        #expect(ids.count == 16 && ids == ids.sorted())
        let lost = ids[2]
        try queue.store.write {
            _ = try $0.renewLeases(ids.filter { $0 != lost }, owner: "w1", leaseMillis: 5_000, now: t0)
        }
        #expect(try queue.store.write { try $0.rescueExpiredLeases(now: t0 + 1_500) } == 1)
        func delivered(_ id: Int64, _ name: String) -> DeliveryUpdate {
            .delivered(id: id, fcmMessageID: name, canonicalToken: nil, status: 200)
        }
        // "r1": t0…t3 in order, the lost t2 among them; "r2": t5, t4, t7 (no range).
        let shared = try queue.apply(
            ids[0...3].map { delivered($0, "r1") } + [ids[5], ids[4], ids[7]].map { delivered($0, "r2") },
            now: t0 + 2_000)
        #expect(Set(shared.updated) == Set([0, 1, 3, 4, 5, 7].map { ids[$0] }))
        // A name each: t6, t8…t15, and the lost t2 once more.
        let own = try queue.apply(
            ([6] + Array(8..<16) + [2]).map { delivered(ids[$0], "m\($0)") }, now: t0 + 2_001)
        #expect(Set(own.updated) == Set(([6] + Array(8..<16)).map { ids[$0] }))
        let name = { (index: Int) in [0, 1, 3].contains(index) ? "r1" : [4, 5, 7].contains(index) ? "r2" : "m\(index)" }
        let rows = try queue.store.strings(
            "SELECT token || ' ' || state || ' ' || coalesce(fcm_message_id, '-') FROM deliveries ORDER BY id")
        #expect(rows == (0..<16).map { $0 == 2 ? "t2 queued -" : "t\($0) delivered \(name($0))" })
        let feed = try queue.store.database.outcomes(after: 0, app: nil, limit: 100)
        let expected = (0..<16).filter { $0 != 2 }.map { "t\($0) delivered - \(name($0)) -" }
        #expect(Self.summary(feed).sorted() == expected.sorted())
    }

    @Test(arguments: Engine.available) func theFeedPagesAfterASeqAndFiltersByApp(_ engine: Engine) throws {
        let queue = try Queue(engine)
        for index in 0..<5 {
            let id = try queue.enqueue(["d\(index)"])
            try queue.answer(id, ["d\(index)": { .dropped(id: $0, reason: .notRegistered, status: nil) }])
            try queue.insert(["o\(index)"], app: "other")
        }
        try queue.store.cancel(try #require(try queue.store.strings(
            "SELECT message_id FROM deliveries WHERE app = 'other' ORDER BY id LIMIT 1").first), now: t0 + 20)
        let store = queue.store.database
        let first = try store.outcomes(after: 0, app: "default", limit: 2)
        #expect(first.map(\.token) == ["d0", "d1"])
        let rest = try store.outcomes(after: first[1].seq, app: "default", limit: 1000)
        #expect(rest.map(\.token) == ["d2", "d3", "d4"])
        #expect(try store.outcomes(after: rest[2].seq, app: "default", limit: 10).isEmpty)
        #expect(try store.outcomes(after: 0, app: "other", limit: 10).map(\.token) == ["o0"])
        #expect(try store.outcomes(after: 0, app: nil, limit: 10).map(\.token) == ["d0", "d1", "d2", "d3", "d4", "o0"])
    }

    @Test(arguments: Engine.available) func aUsersFanOutReportsTheUserAsAtIngest(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.store.register("ann-phone", app: "default", user: "ann", now: t0)
        let id = try queue.store.insert(
            NewMessage(app: "default", payload: "{}", target: .users(["ann"])), now: t0).id
        try queue.store.register("ann-phone", app: "default", user: "bob", now: t0 + 1)
        try queue.answer(id, ["ann-phone": { .delivered(id: $0, fcmMessageID: nil, canonicalToken: nil, status: 200) }])
        #expect(try queue.store.database.outcomes(after: 0, app: nil, limit: 10).map(\.user) == ["ann"])
    }

    @Test(arguments: Engine.available) func retentionTrimsTheOldestEntriesOnly(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let early = try queue.enqueue(["a"])
        try queue.store.cancel(early, now: t0 + 100)
        let late = try queue.enqueue(["b"], at: t0 + 200)
        try queue.store.cancel(late, now: t0 + 300)
        let store = queue.store.database
        #expect(try store.transaction { try store.pruneFeeds(before: t0 + 200, limit: 1000) }.outcomes == 1)
        #expect(try store.outcomes(after: 0, app: nil, limit: 10).map(\.token) == ["b"])
    }

    @Test(arguments: Engine.available) func oneOwnerAtATimeHoldsAWebhookAndItsCursor(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let id = try queue.enqueue(["a"])
        try queue.store.cancel(id, now: t0 + 1)
        let store = queue.store.database
        let lease = { (owner: String, now: Int64) in
            try store.transaction { try store.leaseOutcomeWebhook("*", owner: owner, until: now + 30_000, now: now) }
        }
        // A new webhook starts at the feed's end.
        let held = try #require(try lease("w1", t0))
        #expect(held.seq == 1 && held.inFlight.isEmpty && held.leaseOwner == "w1")
        #expect(try lease("w2", t0 + 1_000) == nil)
        #expect(try store.transaction {
            try store.saveOutcomeWebhook(
                "*", owner: "w1", seq: 1, inFlight: [7, 9], skipped: 3, lastError: "503", until: t0 + 60_000,
                now: t0 + 2_000)
        })
        // A save without a new failure keeps the last one.
        #expect(try store.transaction {
            try store.saveOutcomeWebhook(
                "*", owner: "w1", seq: 1, inFlight: [7, 9], skipped: 0, lastError: nil, until: t0 + 60_000,
                now: t0 + 3_000)
        })
        #expect(try lease("w2", t0 + 59_999) == nil)
        let taken = try #require(try lease("w2", t0 + 60_000))
        #expect(taken.inFlight == [7, 9] && taken.skipped == 3 && taken.leaseOwner == "w2")
        #expect(taken.lastError == "503" && taken.lastErrorAt == t0 + 2_000)
        #expect(try !store.transaction {
            try store.saveOutcomeWebhook(
                "*", owner: "w1", seq: 9, inFlight: [], skipped: 0, lastError: nil, until: t0 + 90_000,
                now: t0 + 60_001)
        })
        #expect(try store.outcomeWebhooks().map(\.seq) == [1])
    }
}
