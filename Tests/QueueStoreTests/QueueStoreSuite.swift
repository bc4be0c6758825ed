import Foundation
import Queue
import Storage
import Support
import Testing

private let t0: Int64 = 1_700_000_000_000

/// The queue's behaviour through `QueueStore`, the same test code on every engine (`Engine`): claim order and
/// lanes, paused and gated apps, expiry, leases, outcomes and what they do to the token registry, reconciliation
/// at claim, collapse_key, idempotency and the bookkeeping retention trims. Each engine's only tests of these rules:
/// SQLite's run always, PostgreSQL's where `scripts/test` has started a server (`Engine.available`).
@Suite struct QueueStoreSuite {
    /// One engine's store with the helpers the tests share.
    final class Queue {
        let store: StoreUnderTest

        init(_ engine: Engine) throws { store = try engine.make() }

        @discardableResult
        func insert(
            _ tokens: [String], app: String = "default", payload: String = "{}", key: String? = nil,
            collapseKey: String? = nil, priority: Priority = .normal, ttl: Int = 3600, dryRun: Bool = false,
            at now: Int64 = t0
        ) throws -> AcceptedMessage {
            try store.insert(
                NewMessage(
                    app: app, idempotencyKey: key, payload: payload, target: .tokens(tokens), collapseKey: collapseKey,
                    priority: priority, ttlSeconds: ttl, dryRun: dryRun),
                now: now)
        }

        @discardableResult
        func enqueue(
            _ tokens: [String], collapseKey: String? = nil, priority: Priority = .normal, ttl: Int = 3600,
            at now: Int64 = t0
        ) throws -> String {
            try insert(tokens, collapseKey: collapseKey, priority: priority, ttl: ttl, at: now).id
        }

        @discardableResult
        func claim(limit: Int = 100, owner: String = "w1", lease: Int64 = 60_000, now: Int64) throws -> ClaimResult {
            try store.write { try $0.claim(app: "default", limit: limit, owner: owner, leaseMillis: lease, now: now) }
        }

        @discardableResult
        func apply(_ updates: [DeliveryUpdate], owner: String = "w1", now: Int64) throws -> AppliedOutcomes {
            try store.write { try $0.apply(updates, owner: owner, now: now) }
        }

        /// Leases the deliveries of `message` and applies `outcome(id)` to each (matched by token); the other
        /// leases go back first, so reconciliation sees them queued as they would be.
        @discardableResult
        func answer(_ message: String, _ outcomes: [String: (Int64) -> DeliveryUpdate]) throws -> AppliedOutcomes {
            try store.write { store in
                let claimed = try store.claim(app: "default", limit: 1000, owner: "w", leaseMillis: 60_000, now: t0 + 1)
                let updates = claimed.deliveries.filter { $0.messageID == message }.compactMap { delivery in
                    outcomes[delivery.token].map { $0(delivery.id) }
                }
                let releases = claimed.deliveries.filter { $0.messageID != message || outcomes[$0.token] == nil }
                    .map { DeliveryUpdate.release(id: $0.id) }
                try store.apply(releases, owner: "w", now: t0 + 2, chargeAttempt: false)
                return try store.apply(updates, owner: "w", now: t0 + 2)
            }
        }

        /// Claims everything ready and hands it back unsent: what the next claim does before it would send.
        func claimPass() throws {
            try store.write { store in
                let claimed = try store.claim(
                    app: "default", limit: 1000, owner: "pass", leaseMillis: 60_000, now: t0 + 3)
                try store.apply(claimed.deliveries.map { .release(id: $0.id) }, owner: "pass", now: t0 + 3,
                                chargeAttempt: false)
            }
        }

        /// token → state/reason.
        func states() throws -> [String: String] {
            Dictionary(uniqueKeysWithValues: try store.strings(
                "SELECT token || ' ' || state || coalesce('/' || reason, '') FROM deliveries"
            ).map { line in
                let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
                return (parts[0], parts[1])
            })
        }

        /// "token state/reason" per delivery, in id order.
        func rows() throws -> [String] {
            try store.strings("SELECT token || ' ' || state || coalesce('/' || reason, '') FROM deliveries ORDER BY id")
        }

        func state(of messageID: String) throws -> String? {
            try store.strings(
                "SELECT state || coalesce('/' || reason, '') FROM deliveries WHERE message_id = $1", [.text(messageID)]
            ).first
        }

        func events() throws -> [String] {
            try store.strings(
                "SELECT kind || ' ' || token || coalesce(' → ' || replacement, '') FROM token_events ORDER BY id")
        }

        func registry() throws -> [String] {
            try store.strings("SELECT token || ' ' || coalesce(\"user\", '-') FROM tokens ORDER BY token")
        }

        func register(_ token: String, user: String) throws {
            try store.register(token, app: "default", user: user, now: t0)
        }

        /// An older message with collapse_key "score" to T that FCM answered Unavailable: back in the queue in
        /// backoff.
        func olderMessageInBackoff() throws -> String {
            let older = try insert(["T"], collapseKey: "score", at: t0).id
            let claimed = try #require(try claim(now: t0 + 10).deliveries.first)
            try apply([.retry(id: claimed.id, at: t0 + 5_000, reason: .unavailable, status: 200)], now: t0 + 20)
            return older
        }
    }

    // MARK: - Claim

    @Test(arguments: Engine.available) func claimTakesHighPriorityFirstThenOldest(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.enqueue(["old-normal"], at: t0)
        try queue.enqueue(["new-normal"], at: t0 + 10)
        try queue.enqueue(["new-high"], priority: .high, at: t0 + 20)
        let claimed = try queue.claim(limit: 2, now: t0 + 100)
        #expect(claimed.deliveries.map(\.token) == ["new-high", "old-normal"])
        #expect(try queue.states()["new-normal"] == "queued")
        #expect(try queue.claim(now: t0 + 100).deliveries.map(\.token) == ["new-normal"])
        #expect(try queue.claim(now: t0 + 100).deliveries.isEmpty)
    }

    @Test(arguments: Engine.available) func aClaimReadsEachOfItsMessagesOnce(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let first = try queue.insert(["a", "b"], payload: #"{"data":{"n":"1"}}"#).id
        let second = try queue.insert(["c"], payload: #"{"data":{"n":"2"}}"#, ttl: 60, dryRun: true).id
        let claimed = try queue.claim(now: t0 + 1)
        #expect(claimed.deliveries.count == 3)
        #expect(Set(claimed.messages.keys) == [first, second])
        #expect(claimed.messages[first]?.payload.contains(#""n":"1""#) == true)
        #expect(claimed.messages[first]?.dryRun == false)
        #expect(claimed.messages[second]?.payload.contains(#""n":"2""#) == true)
        #expect(claimed.messages[second]?.dryRun == true)
        #expect(claimed.messages[second]?.ttlSeconds == 60)
        let read = try queue.store.write { try $0.claimedMessages(ids: [second, "missing", second]) }
        #expect(Array(read.keys) == [second])
        #expect(read[second] == claimed.messages[second])
    }

    @Test(arguments: Engine.available) func claimReturnsRowsOldestDueFirst(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.enqueue(["a", "b", "c"], at: t0)
        let first = try queue.claim(now: t0 + 1).deliveries
        // b goes back first and is due last: a short claim takes the rows due first, not the first inserted.
        try queue.apply([
            .retry(id: first[1].id, at: t0 + 300, reason: .unavailable, status: 503),
            .retry(id: first[0].id, at: t0 + 200, reason: .unavailable, status: 503),
            .retry(id: first[2].id, at: t0 + 100, reason: .unavailable, status: 503),
        ], now: t0 + 2)
        #expect(Set(try queue.claim(limit: 2, now: t0 + 1_000).deliveries.map(\.token)) == ["c", "a"])
        #expect(try queue.claim(now: t0 + 1_000).deliveries.map(\.token) == ["b"])
    }

    @Test(arguments: Engine.available) func claimSkipsRowsNotYetDueAndReportsWhenTheNextIsDue(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.enqueue(["later"], at: t0 + 5_000)
        let claimed = try queue.claim(now: t0)
        #expect(claimed.deliveries.isEmpty)
        #expect(claimed.nextDueAt == t0 + 5_000)
    }

    @Test(arguments: Engine.available) func pausedOrGatedAppsGetNothing(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.enqueue(["a"], at: t0)
        try queue.store.pause("default", now: t0)
        #expect(try queue.claim(now: t0 + 1).deliveries.isEmpty)
        #expect(try queue.claim(now: t0 + 1).app?.paused == true)
        try queue.store.resume("default")
        try queue.store.closeGate("default", until: t0 + 2_000, reason: .http(503), now: t0 + 1)
        #expect(try queue.claim(now: t0 + 1_999).deliveries.isEmpty)
        #expect(try queue.claim(now: t0 + 2_000).deliveries.map(\.token) == ["a"])
    }

    @Test(arguments: Engine.available) func expiredRowsAreDeadLettersNotSends(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.enqueue(["short"], ttl: 1, at: t0)
        try queue.enqueue(["now-or-never"], ttl: 0, at: t0)
        let claimed = try queue.claim(now: t0 + 1_000)
        #expect(claimed.deliveries.map(\.token) == ["now-or-never"])
        #expect(claimed.expired == 1)
        #expect(try queue.states()["short"] == "dead/Expired")
    }

    @Test(arguments: Engine.available) func ttlZeroIsSentWithinItsWindowOrNever(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let prompt = try queue.insert(["now"], ttl: 0, at: t0).id
        #expect(try queue.claim(now: t0 + defaultTTLZeroWindowMillis - 1).deliveries.map(\.messageID) == [prompt])
        let held = try queue.insert(["held"], ttl: 0, at: t0).id
        let late = try queue.claim(now: t0 + defaultTTLZeroWindowMillis + 1_000)
        #expect(late.deliveries.isEmpty && late.expired == 1)
        #expect(try queue.state(of: held) == "dead/Expired")
    }

    @Test(arguments: Engine.available) func theTTLZeroWindowIsASetting(_ engine: Engine) throws {
        let queue = try Queue(engine)
        queue.store.setTTLZeroWindow(60_000)
        let id = try queue.insert(["t"], ttl: 0, at: t0).id
        #expect(try queue.claim(now: t0 + 30_000).deliveries.map(\.messageID) == [id])
    }

    // MARK: - send_at and cancelling

    /// A message to `tokens` not to be sent before `sendAt`.
    private func schedule(
        _ queue: Queue, _ tokens: [String], sendAt: Int64, ttl: Int = 3600, collapseKey: String? = nil,
        key: String? = nil, at now: Int64 = t0
    ) throws -> AcceptedMessage {
        try queue.store.insert(
            NewMessage(
                app: "default", idempotencyKey: key, payload: "{}", target: .tokens(tokens), collapseKey: collapseKey,
                ttlSeconds: ttl, sendAt: sendAt),
            now: now)
    }

    @Test(arguments: Engine.available) func aScheduledMessageIsClaimedAtItsTimeNeverBefore(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let at = t0 + 60_000
        let id = try schedule(queue, ["a", "b"], sendAt: at).id
        let early = try queue.claim(now: at - 1)
        #expect(early.deliveries.isEmpty)
        #expect(early.nextDueAt == at, "the claimer sleeps until then")
        #expect(try queue.claim(now: at).deliveries.map(\.messageID) == [id, id])
        let record = try #require(try queue.store.database.message(id: id))
        #expect(record.sendAt == at)
        #expect(record.createdAt == t0)
    }

    @Test(arguments: Engine.available) func theTTLCountsFromSendAt(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let at = t0 + 60_000
        let kept = try schedule(queue, ["kept"], sendAt: at, ttl: 10).id
        #expect(try queue.store.database.message(id: kept)?.expiresAt == at + 10_000)
        #expect(try queue.claim(now: at + 9_999).deliveries.map(\.messageID) == [kept])
        let late = try schedule(queue, ["late"], sendAt: at, ttl: 10).id
        #expect(try queue.claim(now: at + 10_000).expired == 1)
        #expect(try queue.state(of: late) == "dead/Expired")
        let prompt = try schedule(queue, ["prompt"], sendAt: at, ttl: 0).id
        let claimed = try queue.claim(now: at + defaultTTLZeroWindowMillis - 1).deliveries
        #expect(claimed.map(\.messageID) == [prompt], "now or never counts from send_at too")
    }

    @Test(arguments: Engine.available) func aPastSendAtMeansNow(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let id = try schedule(queue, ["a"], sendAt: t0 - 3_600_000, ttl: 10).id
        let record = try #require(try queue.store.database.message(id: id))
        #expect(record.sendAt == t0)
        #expect(record.expiresAt == t0 + 10_000)
        #expect(try queue.claim(now: t0).deliveries.map(\.messageID) == [id])
    }

    @Test(arguments: Engine.available) func anotherSendAtUnderTheSameKeyIsAnotherMessage(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let first = try schedule(queue, ["a"], sendAt: t0 + 60_000, key: "k")
        let repeated = try schedule(queue, ["a"], sendAt: t0 + 60_000, key: "k", at: t0 + 1)
        #expect(repeated.id == first.id && repeated.isRepeat)
        #expect(throws: IdempotencyConflict.self) { try schedule(queue, ["a"], sendAt: t0 + 60_001, key: "k") }
        #expect(throws: IdempotencyConflict.self) { try queue.insert(["a"], key: "k") }
    }

    @Test(arguments: Engine.available) func aCancelledScheduledMessageIsNeverClaimed(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let at = t0 + 60_000
        let id = try schedule(queue, ["a", "b"], sendAt: at).id
        let other = try schedule(queue, ["c"], sendAt: at).id
        #expect(try queue.store.database.scheduledMessageCounts(now: t0) == ["default": 2])
        #expect(try queue.store.cancel(id, now: t0 + 1) == 2)
        #expect(try queue.store.cancel(id, now: t0 + 2) == 0, "nothing left to cancel")
        #expect(try queue.store.cancel("01NOSUCHMESSAGE", now: t0 + 2) == nil)
        #expect(try queue.claim(now: at).deliveries.map(\.messageID) == [other])
        #expect(try queue.rows().prefix(2) == ["a dropped/Cancelled", "b dropped/Cancelled"])
        #expect(try queue.store.database.message(id: id)?.cancelledAt == t0 + 1, "the first cancel's time")
        #expect(try queue.store.database.scheduledMessageCounts(now: t0 + 3) == ["default": 1])
        #expect(try queue.store.database.scheduledMessageCounts(now: at) == [:], "its time has come")
    }

    /// A claim and a cancel, one after the other (SQLite has one writer; PostgreSQL's interleavings are in
    /// `PGWriteRaceTests`): what was leased first is sent and its outcome stands, what was cancelled first is never
    /// leased.
    @Test(arguments: Engine.available)
    func aCancelLeavesWhatIsInFlightAndAClaimWhatIsCancelled(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let sent = try queue.insert(["sent"]).id
        let leased = try #require(try queue.claim(now: t0 + 1).deliveries.first)
        #expect(try queue.store.cancel(sent, now: t0 + 2) == 0)
        try queue.apply([.delivered(id: leased.id, fcmMessageID: "m", canonicalToken: nil, status: 200)], now: t0 + 3)
        #expect(try queue.state(of: sent) == "delivered")
        let cancelled = try queue.insert(["cancelled"], at: t0 + 4).id
        #expect(try queue.store.cancel(cancelled, now: t0 + 5) == 1)
        #expect(try queue.claim(now: t0 + 6).deliveries.isEmpty)
        #expect(try queue.state(of: cancelled) == "dropped/Cancelled")
    }

    @Test(arguments: Engine.available) func aNewerMessageScheduledForLaterSupersedesNothingYet(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let older = try queue.insert(["T"], collapseKey: "score", at: t0).id
        let newer = try schedule(queue, ["T"], sendAt: t0 + 60_000, collapseKey: "score", at: t0 + 1_000).id
        #expect(try queue.claim(now: t0 + 2_000).deliveries.map(\.messageID) == [older])
        #expect(try queue.claim(now: t0 + 60_000).deliveries.map(\.messageID) == [newer])
    }

    // MARK: - Outcomes and leases

    @Test(arguments: Engine.available) func outcomesOnlyTouchRowsStillLeasedByTheirOwner(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.enqueue(["a", "b", "c", "d"], at: t0)
        let ids = try queue.claim(now: t0).deliveries.map(\.id)
        let updated = try queue.apply([
            .delivered(id: ids[0], fcmMessageID: "0:1", canonicalToken: "a2", status: 200),
            .retry(id: ids[1], at: t0 + 9_000, reason: .unavailable, status: 503),
            .dead(id: ids[2], reason: .invalidRegistration, status: 200),
        ], now: t0 + 1)
        #expect(updated.updated == Array(ids[0...2]))
        let stranger = try queue.apply([.dropped(id: ids[3], reason: .notRegistered, status: 200)], owner: "w2",
                                       now: t0)
        #expect(stranger.updated.isEmpty)
        let rows = try queue.store.strings(
            """
            SELECT token || ' ' || state || ' ' || attempts || ' ' || (next_attempt_at - $1) || ' '
                || coalesce(fcm_message_id, '-') || ' ' || coalesce(canonical_token, '-')
            FROM deliveries ORDER BY id
            """, [.integer(t0)])
        #expect(rows == ["a delivered 1 0 0:1 a2", "b queued 1 9000 - -", "c dead 1 0 - -", "d inflight 0 0 - -"])
    }

    @Test(arguments: Engine.available)
    func plainSuccessesAreWrittenTogetherOnlyUnderAHeldLease(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.enqueue(["a", "b", "c"], at: t0)
        let ids = try queue.claim(lease: 1_000, now: t0).deliveries.map(\.id)
        try queue.store.write { _ = try $0.renewLeases([ids[0], ids[2]], owner: "w1", leaseMillis: 5_000, now: t0) }
        // b's lease ran out at t0 + 1 s and the rescuer took it back: its success is not written; a and c (renewed)
        // are, with id and status.
        #expect(try queue.store.write { try $0.rescueExpiredLeases(now: t0 + 1_500) } == 1)
        let applied = try queue.apply([
            .delivered(id: ids[2], fcmMessageID: "m-c", canonicalToken: nil, status: 200),
            .delivered(id: ids[1], fcmMessageID: "m-b", canonicalToken: nil, status: 200),
            .delivered(id: ids[0], fcmMessageID: nil, canonicalToken: nil, status: nil),
        ], now: t0 + 2_000)
        #expect(Set(applied.updated) == [ids[2], ids[0]])
        let rows = try queue.store.strings(
            """
            SELECT token || ' ' || state || ' ' || attempts || ' ' || coalesce(fcm_message_id, '-') || ' '
                || coalesce(CAST(last_status AS TEXT), '-') || ' ' || coalesce(lease_owner, '-')
            FROM deliveries ORDER BY id
            """)
        #expect(rows == ["a delivered 1 - - -", "b queued 0 - - -", "c delivered 1 m-c 200 -"])
    }

    @Test(arguments: Engine.available) func releaseReturnsALeaseWithoutChargingAnAttempt(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.enqueue(["a"], at: t0)
        let id = try #require(try queue.claim(now: t0).deliveries.first?.id)
        try queue.apply([.release(id: id)], now: t0 + 1)
        let row = try queue.store.strings(
            "SELECT state || ' ' || attempts || ' ' || coalesce(lease_owner, '-') FROM deliveries")
        #expect(row == ["queued 0 -"])
    }

    @Test(arguments: Engine.available) func aDeferredRowIsQueuedUnchargedUntilItsTimeAndKeepsItsLastError(
        _ engine: Engine
    ) throws {
        let queue = try Queue(engine)
        try queue.enqueue(["sent", "unsent"], at: t0)
        let ids = Dictionary(uniqueKeysWithValues: try queue.claim(now: t0).deliveries.map { ($0.token, $0.id) })
        let applied = try queue.apply([
            .deferred(id: try #require(ids["sent"]), until: t0 + 5_000, reason: .httpStatus(403), status: 403),
            .deferred(id: try #require(ids["unsent"]), until: t0 + 7_000, reason: nil, status: nil),
        ], now: t0 + 1)
        #expect(applied.updated.count == 2 && applied.deadLetters == 0)
        let rows = try queue.store.strings(
            """
            SELECT token || ' ' || state || ' ' || attempts || ' ' || CAST(next_attempt_at - $1 AS TEXT) || ' '
                || coalesce(reason, '-') || ' ' || coalesce(CAST(last_status AS TEXT), '-') || ' '
                || coalesce(lease_owner, '-')
            FROM deliveries ORDER BY id
            """, [.integer(t0)])
        #expect(rows == ["sent queued 0 5000 HTTP 403 403 -", "unsent queued 0 7000 - - -"])
        #expect(try queue.claim(now: t0 + 4_999).deliveries.isEmpty, "not due before its time")
        #expect(try queue.claim(now: t0 + 5_000).deliveries.map(\.token) == ["sent"])
    }

    @Test(arguments: Engine.available) func rescuerReturnsOnlyExpiredLeases(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.enqueue(["a", "b"], at: t0)
        try queue.claim(limit: 1, owner: "dead-process", now: t0)
        try queue.claim(limit: 1, owner: "live-process", now: t0 + 30_000)
        let rescued = try queue.store.write { try $0.rescueExpiredLeases(now: t0 + 60_000) }
        #expect(rescued == 1)
        #expect(try queue.states() == ["a": "queued", "b": "inflight"])
    }

    @Test(arguments: Engine.available) func foreignLeasesAreReleasedAtStartUp(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.enqueue(["a", "b"], at: t0)
        try queue.claim(limit: 1, owner: "previous-run", now: t0)
        try queue.claim(limit: 1, owner: "this-run", now: t0)
        let released = try queue.store.write { try $0.releaseForeignLeases(owner: "this-run", now: t0 + 1) }
        #expect(released == 1)
        #expect(try queue.states() == ["a": "queued", "b": "inflight"])
    }

    @Test(arguments: Engine.available) func renewedLeasesAreNotRescued(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.insert(["a", "b"], at: t0)
        let ids = try queue.claim(lease: 1_000, now: t0).deliveries.map(\.id)
        #expect(try queue.store.write { try $0.renewLeases([ids[0]], owner: "w1", leaseMillis: 2_000, now: t0) } == 1)
        #expect(
            try queue.store.write { try $0.renewLeases([ids[1]], owner: "someone-else", leaseMillis: 2_000, now: t0) }
                == 0)
        #expect(try queue.store.write { try $0.rescueExpiredLeases(now: t0 + 1_500) } == 1)
        // The renewed row's answer still lands; the rescued one's late answer does not.
        let applied = try queue.apply(
            ids.map { .delivered(id: $0, fcmMessageID: "m", canonicalToken: nil, status: 200) }, now: t0 + 1_600)
        #expect(applied.updated == [ids[0]])
        #expect(try queue.store.database.outcomes(after: 0, app: nil, limit: 10).map(\.token) == ["a"],
                "the feed has the row the answer wrote, not the rescued one")
    }

    /// A database outage longer than the lease: the answers are true and nobody took the rows back, so they are
    /// written rather than the rows rescued and sent again. Once a row is rescued, its late answer is refused.
    @Test(arguments: Engine.available) func anAnswerAfterTheLeaseRanOutCountsUntilTheRowIsTakenBack(
        _ engine: Engine
    ) throws {
        let queue = try Queue(engine)
        try queue.insert(["a", "b", "c"], at: t0)
        let ids = try queue.claim(lease: 1_000, now: t0).deliveries.map(\.id)
        #expect(
            try queue.store.write { try $0.renewLeases([ids[0], ids[1]], owner: "w1", leaseMillis: 2_000, now: t0) }
                == 2)
        #expect(try queue.store.write { try $0.rescueExpiredLeases(now: t0 + 1_500) } == 1, "c's lease ran out")
        let applied = try queue.apply(
            [
                .delivered(id: ids[0], fcmMessageID: "m", canonicalToken: nil, status: 200),
                .retry(id: ids[1], at: t0 + 60_000, reason: .unavailable, status: 503),
                .delivered(id: ids[2], fcmMessageID: "m", canonicalToken: nil, status: 200),
            ], now: t0 + 5_000)
        #expect(applied.updated.sorted() == [ids[0], ids[1]], "a and b ran out too, but nobody took them back")
        #expect(try queue.states() == ["a": "delivered", "b": "queued/Unavailable", "c": "queued"])
    }

    // MARK: - What answers do to the token registry

    @Test(arguments: Engine.available)
    func notRegisteredDeletesTheTokenAndDropsItsOtherDeliveriesWhenClaimed(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.register("dead", user: "u1")
        let first = try queue.enqueue(["dead"])
        try queue.enqueue(["dead", "alive"])
        let applied = try queue.answer(first, ["dead": { .dropped(id: $0, reason: .notRegistered, status: 200) }])
        #expect(applied.tokensDeleted == 1)
        #expect(try queue.registry().isEmpty)
        #expect(try queue.rows() == ["dead dropped/NotRegistered", "dead queued", "alive queued"])
        try queue.claimPass()
        #expect(try queue.rows() == ["dead dropped/NotRegistered", "dead dropped/NotRegistered", "alive queued"],
                "the other delivery to the dead token is dropped when claimed, never sent")
        #expect(try queue.events() == ["deleted dead"])
    }

    /// SPEC §17: a message to users with no app reaches their tokens in every app, each delivery in its token's
    /// app, in the order the tokens were first registered — the same order on both engines, with the users'
    /// registrations interleaved across users and apps.
    @Test(arguments: Engine.available)
    func usersWithoutAnAppReachEveryAppInTheOrderTheTokensWereRegistered(_ engine: Engine) throws {
        let queue = try Queue(engine)
        // The apps serve registers as it starts (a message to each does the same).
        for app in ["android", "ios"] { try queue.insert([], app: app) }
        let registrations = [
            ("a1", "android", "u1"), ("i2", "ios", "u2"), ("a2", "android", "u2"), ("i1", "ios", "u1"),
            ("x9", "android", "u9"), ("a3", "android", "u1"),
        ]
        for (offset, (token, app, user)) in registrations.enumerated() {
            try queue.store.register(token, app: app, user: user, now: t0 + Int64(offset))
        }
        func fanOut(_ app: String, key: String? = nil) throws -> AcceptedMessage {
            try queue.store.insert(
                NewMessage(app: app, idempotencyKey: key, payload: "{}", target: .users(["u2", "u1"])), now: t0 + 10)
        }

        let everywhere = try fanOut(NewMessage.everyApp, key: "k")
        #expect(everywhere.deliveries == 5)
        #expect(try queue.store.strings(
            "SELECT token || ' ' || app FROM deliveries WHERE message_id = $1 ORDER BY id", [.text(everywhere.id)])
            == ["a1 android", "i2 ios", "a2 android", "i1 ios", "a3 android"])
        let inOneApp = try fanOut("ios", key: "k")
        #expect(!inOneApp.isRepeat, "a key of the backend's is not an app's")
        #expect(try queue.store.strings(
            "SELECT token || ' ' || app FROM deliveries WHERE message_id = $1 ORDER BY id", [.text(inOneApp.id)])
            == ["i2 ios", "i1 ios"])
        #expect(try fanOut(NewMessage.everyApp, key: "k").isRepeat)
        #expect(try queue.store.strings("SELECT name FROM apps ORDER BY name").contains("*") == false)
    }

    /// APNs' 410 carries the time Apple learnt the token was gone: a token registered again after it (a reinstall
    /// Apple had not seen yet) stays; one registered before goes, with its event, as NotRegistered does.
    @Test(arguments: Engine.available)
    func anUnregisteredTokenGoesUnlessItWasRegisteredAgainAfterTheProvidersTimestamp(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.register("stale", user: "u1")
        try queue.register("fresh", user: "u2")
        let message = try queue.enqueue(["stale", "fresh"])
        let unregistered = DeliveryReason(stored: "Unregistered")
        let applied = try queue.answer(message, [
            "stale": { .forgetToken(id: $0, state: .dropped, reason: unregistered, status: 410, since: t0 + 5) },
            "fresh": { .forgetToken(id: $0, state: .dropped, reason: unregistered, status: 410, since: t0 - 5) },
        ])
        #expect(applied.tokensDeleted == 1)
        #expect(try queue.registry() == ["fresh u2"])
        #expect(try queue.rows() == ["stale dropped/Unregistered", "fresh dropped/Unregistered"])
        #expect(try queue.store.strings("SELECT kind || ' ' || token || ' ' || reason FROM token_events")
            == ["deleted stale Unregistered"])
    }

    /// APNs' `BadDeviceToken`: the delivery is a dead letter and the token can never work, so it goes too.
    @Test(arguments: Engine.available) func anInvalidTokenIsADeadLetterAndLeavesTheRegistry(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.register("bad", user: "u1")
        let message = try queue.enqueue(["bad"])
        let applied = try queue.answer(message, [
            "bad": {
                .forgetToken(id: $0, state: .dead, reason: .other("BadDeviceToken"), status: 400, since: nil)
            },
        ])
        #expect(applied.tokensDeleted == 1)
        #expect(try queue.registry().isEmpty)
        #expect(try queue.rows() == ["bad dead/BadDeviceToken"])
        #expect(try queue.events() == ["deleted bad"])
    }

    @Test(arguments: Engine.available)
    func canonicalIdMovesTheRegistryRowAndRetargetsQueuedDeliveriesWhenClaimed(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.register("23", user: "carol")
        let first = try queue.enqueue(["23"])
        try queue.enqueue(["23"])
        let applied = try queue.answer(first, [
            "23": { .delivered(id: $0, fcmMessageID: "1:2342", canonicalToken: "32", status: 200) },
        ])
        #expect(applied.tokensReplaced == 1)
        #expect(try queue.registry() == ["32 carol"])
        try queue.claimPass()
        #expect(try queue.rows() == ["23 delivered", "32 queued"])
        #expect(try queue.events() == ["replaced 23 → 32"])
    }

    @Test(arguments: Engine.available)
    func canonicalIdMergesIntoAnAlreadyRegisteredTokenAndDropsDuplicates(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.register("old", user: "dave")
        try queue.register("new", user: "dave")
        let first = try queue.enqueue(["old"])
        try queue.enqueue(["old", "new"])
        try queue.answer(first, ["old": { .delivered(id: $0, fcmMessageID: "1", canonicalToken: "new", status: 200) }])
        #expect(try queue.registry() == ["new dave"])
        try queue.claimPass()
        #expect(try queue.rows() == ["old delivered", "old dropped/Replaced", "new queued"])
    }

    @Test(arguments: Engine.available) func aLaterMessageToADeadTokenIsDroppedInsteadOfSent(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let first = try queue.enqueue(["gone"])
        try queue.answer(first, ["gone": { .dropped(id: $0, reason: .notRegistered, status: 200) }])
        try queue.enqueue(["gone", "fine"], at: t0 + 10)
        let claimed = try queue.claim(owner: "w2", now: t0 + 20)
        #expect(claimed.deliveries.map(\.token) == ["fine"])
        #expect(claimed.dropped == 1)
    }

    @Test(arguments: Engine.available) func aRefusedMessageDeadLettersEveryQueuedDeliveryOfIt(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let message = try queue.enqueue(["a", "b", "c"])
        try queue.enqueue(["d"])
        let applied = try queue.answer(message, ["a": { .deadMessage(id: $0, reason: .messageTooBig, status: 200) }])
        #expect(applied.deadLetters == 3)
        #expect(try queue.rows()
            == ["a dead/MessageTooBig", "b dead/MessageTooBig", "c dead/MessageTooBig", "d queued"])
    }

    @Test(arguments: Engine.available) func aRefusedMessageLeavesItsDeliveriesInOtherApps(_ engine: Engine) throws {
        let queue = try Queue(engine)
        for app in ["default", "web"] { try queue.insert([], app: app) }  // the apps serve registers as it starts
        try queue.store.register("phone", app: "default", user: "ann", now: t0)
        try queue.store.register("laptop", app: "web", user: "ann", now: t0)
        try queue.store.register("laptop-2", app: "web", user: "ann", now: t0)
        let message = try queue.store.insert(
            NewMessage(app: NewMessage.everyApp, payload: "{}", target: .users(["ann"])), now: t0).id
        let claimed = try queue.store.write {
            try $0.claim(app: "web", limit: 1, owner: "w1", leaseMillis: 60_000, now: t0 + 1)
        }
        let refused = try #require(claimed.deliveries.first)
        let applied = try queue.apply([.deadMessage(id: refused.id, reason: .httpStatus(400), status: 400)], now: t0 + 2)
        #expect(applied.deadLetters == 2, "this app's other delivery of the message dies with it")
        #expect(try queue.store.strings(
            "SELECT app || ' ' || state FROM deliveries WHERE message_id = $1 ORDER BY app, id", [.text(message)])
            == ["default queued", "web dead", "web dead"], "the phone's delivery is its own provider's affair")
    }

    /// Each engine stores a reason as its text (SPEC §4: what users script against), which reads back as the same
    /// reason; an error FCM has no rule for is stored as it came.
    @Test(arguments: Engine.available)
    func reasonsAreStoredAsTheirTextAndUnknownErrorsVerbatim(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let tokens = ["quota", "status", "new", "transport", "dead-new", "gone", "moved"]
        for token in tokens { try queue.enqueue([token]) }
        let ids = Dictionary(uniqueKeysWithValues: try queue.claim(now: t0 + 1).deliveries.map { ($0.token, $0.id) })
        let updates: [DeliveryUpdate] = [
            .retry(id: try #require(ids["quota"]), at: t0 + 60_000, reason: .other("QUOTA_EXCEEDED"), status: 429),
            .retry(id: try #require(ids["status"]), at: t0 + 60_000, reason: .httpStatus(404), status: 404),
            .retry(id: try #require(ids["new"]), at: t0 + 60_000, reason: .other("SomethingNew"), status: 200),
            .retry(id: try #require(ids["transport"]), at: t0 + 60_000, reason: .other("no answer"), status: nil),
            .dead(id: try #require(ids["dead-new"]), reason: .other("BrandNew_Error-2"), status: 200),
            .dropped(id: try #require(ids["gone"]), reason: .notRegistered, status: 200),
            .delivered(id: try #require(ids["moved"]), fcmMessageID: "0:1", canonicalToken: "moved2", status: 200),
        ]
        #expect(try queue.apply(updates, now: t0 + 2).updated.count == tokens.count)
        let states = try queue.states()
        #expect(states == [
            "quota": "queued/QUOTA_EXCEEDED", "status": "queued/HTTP 404", "new": "queued/SomethingNew",
            "transport": "queued/no answer", "dead-new": "dead/BrandNew_Error-2", "gone": "dropped/NotRegistered",
            "moved": "delivered",
        ])
        let stored = try queue.store.strings("SELECT reason FROM deliveries WHERE reason IS NOT NULL ORDER BY id")
        let written = updates.compactMap { update -> DeliveryReason? in
            switch update {
            case .retry(_, _, let reason, _), .dead(_, let reason, _), .dropped(_, let reason, _): reason
            default: nil
            }
        }
        #expect(stored.map(DeliveryReason.init(stored:)) == written)
        #expect(try queue.store.strings("SELECT token || ' ' || reason FROM token_events ORDER BY id")
            == ["gone NotRegistered", "moved CanonicalId"])
    }

    @Test(arguments: Engine.available) func applyingTheSameOutcomesTwiceChangesNothingMore(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.register("dead", user: "u")
        try queue.enqueue(["dead"])
        let (id, first, second) = try queue.store.write { store -> (Int64, AppliedOutcomes, AppliedOutcomes) in
            let claimed = try store.claim(app: "default", limit: 10, owner: "w", leaseMillis: 60_000, now: t0 + 1)
            let id = claimed.deliveries[0].id
            let update = DeliveryUpdate.dropped(id: id, reason: .notRegistered, status: 200)
            return (id, try store.apply([update], owner: "w", now: t0 + 2),
                    try store.apply([update], owner: "w", now: t0 + 3))
        }
        #expect(first.updated == [id] && first.tokensDeleted == 1)
        #expect(second == AppliedOutcomes())
        // The token registered again later must not be deleted by a replay either.
        try queue.register("dead", user: "u")
        try queue.apply([.dropped(id: id, reason: .notRegistered, status: 200)], owner: "w", now: t0 + 4)
        #expect(try queue.registry() == ["dead u"])
        #expect(try queue.events() == ["deleted dead"])
    }

    @Test(arguments: Engine.available)
    func twoMessagesAnsweredNotRegisteredForOneTokenGiveOneEvent(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let first = try queue.enqueue(["gone"])
        try queue.answer(first, ["gone": { .dropped(id: $0, reason: .notRegistered, status: 200) }])
        let second = try queue.enqueue(["gone"], at: t0 + 10)
        try queue.answer(second, ["gone": { .dropped(id: $0, reason: .notRegistered, status: 200) }])
        #expect(try queue.events() == ["deleted gone"])
    }

    // MARK: - collapse_key

    @Test(arguments: Engine.available) func aNewerCollapseKeySupersedesTheOlderQueuedMessage(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.enqueue(["t1", "t2"], collapseKey: "score")
        try queue.enqueue(["t1"], collapseKey: "score", at: t0 + 5)
        try queue.enqueue(["t1"], collapseKey: "other", at: t0 + 6)
        try queue.claimPass()
        #expect(try queue.rows() == ["t1 dropped/Collapsed", "t2 queued", "t1 queued", "t1 queued"])
    }

    @Test(arguments: Engine.available) func aDryRunSupersedesNothing(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let older = try queue.olderMessageInBackoff()
        let dryRun = try queue.insert(["T"], collapseKey: "score", dryRun: true, at: t0 + 1_000).id
        let claimed = try queue.claim(now: t0 + 5_000)
        #expect(Set(claimed.deliveries.map(\.messageID)) == [older, dryRun])
        #expect(claimed.dropped == 0)
    }

    @Test(arguments: Engine.available) func aCancelledNewerMessageSupersedesNothing(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let older = try queue.olderMessageInBackoff()
        let newer = try queue.insert(["T"], collapseKey: "score", at: t0 + 1_000).id
        #expect(try queue.store.cancel(newer, now: t0 + 1_100) == 1)
        #expect(try queue.claim(now: t0 + 5_000).deliveries.map(\.messageID) == [older])
    }

    /// Nor once its dead letter is purged: a head whose row is gone reads as delivered (retention prunes delivered
    /// rows), so deleting a dead or dropped row takes its head with it.
    @Test(arguments: Engine.available) func aNewerMessageThatDiedSupersedesNothing(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let older = try queue.olderMessageInBackoff()
        let newer = try queue.insert(["T"], collapseKey: "score", at: t0 + 1_000).id
        let claimed = try #require(try queue.claim(now: t0 + 1_100).deliveries.first)
        #expect(claimed.messageID == newer)
        try queue.apply([.dead(id: claimed.id, reason: .invalidRegistration, status: 200)], now: t0 + 1_200)
        let retried = try queue.claim(now: t0 + 5_000).deliveries
        #expect(retried.map(\.messageID) == [older])

        try queue.apply(retried.map { .release(id: $0.id) }, now: t0 + 5_001)
        let store = queue.store.database
        let purged = try store.transaction { try store.purgeDeadLetters(DeadLetterFilter(), now: t0 + 5_002, limit: 9) }
        #expect(purged.deliveries == 1)
        #expect(try queue.claim(now: t0 + 6_000).deliveries.map(\.messageID) == [older])
    }

    @Test(arguments: Engine.available) func anExpiredNewerMessageSupersedesNothing(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let older = try queue.olderMessageInBackoff()
        try queue.insert(["T"], collapseKey: "score", ttl: 2, at: t0 + 1_000)
        // At t0 + 5 s the newer one's 2 s TTL is over: it will never reach the device.
        let claimed = try queue.claim(now: t0 + 5_000)
        #expect(claimed.deliveries.map(\.messageID) == [older])
        #expect(claimed.expired == 1)
    }

    @Test(arguments: Engine.available)
    func aPendingOrDeliveredNewerMessageCollapsesTheOlderOne(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let older = try queue.olderMessageInBackoff()
        let newer = try queue.insert(["T"], collapseKey: "score", at: t0 + 1_000).id
        let claimed = try #require(try queue.claim(now: t0 + 1_100).deliveries.first)
        #expect(claimed.messageID == newer)
        try queue.apply([.delivered(id: claimed.id, fcmMessageID: "m", canonicalToken: nil, status: 200)],
                        now: t0 + 1_200)
        let later = try queue.claim(now: t0 + 5_000)
        #expect(later.deliveries.isEmpty && later.dropped == 1)
        #expect(try queue.state(of: older) == "dropped/Collapsed")
    }

    @Test(arguments: Engine.available) func aTargetNamedTwiceGetsTheHeadOfItsLastDelivery(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.enqueue(["T", "T"], collapseKey: "score")
        let heads = try queue.store.strings("SELECT token || ' ' || CAST(delivery_id AS TEXT) FROM collapse_heads")
        let last = try queue.store.strings("SELECT CAST(max(id) AS TEXT) FROM deliveries")
        #expect(heads == ["T " + (last.first ?? "?")])
    }

    // MARK: - Bookkeeping retention

    @Test(arguments: Engine.available) func trimmingTheFeedKeepsDeadTokensDead(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let first = try queue.enqueue(["dead"], at: t0)
        let claimed = try #require(try queue.claim(now: t0 + 1).deliveries.first)
        try queue.apply([.dropped(id: claimed.id, reason: .notRegistered, status: 200)], now: t0 + 2)
        let later = try queue.enqueue(["dead"], at: t0 + 10)
        let store = queue.store.database
        #expect(try store.transaction { try store.pruneTokenEvents(before: t0 + 100, limit: 100) } == 1)
        #expect(try queue.events().isEmpty)
        let reclaim = try queue.claim(now: t0 + 20)
        #expect(reclaim.deliveries.isEmpty && reclaim.dropped == 1)
        #expect(try queue.state(of: later) == "dropped/NotRegistered")
        #expect(try queue.state(of: first) == "dropped/NotRegistered")
    }

    @Test(arguments: Engine.available)
    func bookkeepingOlderThanTheLongestTTLIsTrimmedWithoutChangingOutcomes(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let older = try queue.enqueue(["T"], collapseKey: "score", ttl: 2_419_200, at: t0)
        let newer = try queue.enqueue(["T"], collapseKey: "score", ttl: 2_419_200, at: t0 + 1)
        let claimed = try #require(try queue.claim(now: t0 + 2).deliveries.first { $0.messageID == newer })
        try queue.apply([.delivered(id: claimed.id, fcmMessageID: "m", canonicalToken: nil, status: 200)], now: t0 + 3)
        #expect(try queue.state(of: older) == "dropped/Collapsed")
        let store = queue.store.database
        // Nothing is old enough to be trimmed yet.
        #expect(try store.transaction { try store.pruneReconciliationState(now: t0 + 10, limit: 100) } == 0)
        let horizon = t0 + 1 + reconciliationHorizonMillis + 1
        #expect(try store.transaction { try store.pruneReconciliationState(now: horizon, limit: 100) } == 1)
        #expect(try queue.store.strings("SELECT CAST(count(*) AS TEXT) FROM collapse_heads") == ["0"])
    }

    // MARK: - Idempotency-Key

    @Test(arguments: Engine.available) func idempotencyKeysAreScopedToTheirApp(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let shop = try queue.insert(["a"], app: "shop", payload: #"{"data":{"order":"42"}}"#, key: "order-42", at: t0)
        let news = try queue.insert(["b"], app: "news", payload: #"{"data":{"story":"1"}}"#, key: "order-42",
                                    at: t0 + 1)
        #expect(!news.isRepeat)
        #expect(news.id != shop.id)
        #expect(try queue.state(of: news.id) == "queued")
    }

    @Test(arguments: Engine.available) func theSameKeyWithTheSameMessageRepeatsTheFirstAnswer(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let first = try queue.insert(["a", "b"], payload: #"{"data":{"x":"1"}}"#, key: "k", at: t0)
        let again = try queue.insert(["a", "b"], payload: #"{"data":{"x":"1"}}"#, key: "k", at: t0 + 1_000)
        #expect(again.isRepeat && again.id == first.id && again.deliveries == 2)
        #expect(try queue.store.strings("SELECT CAST(count(*) AS TEXT) FROM deliveries") == ["2"])
    }

    @Test(arguments: Engine.available)
    func theSameKeyWithAnotherMessageIsAConflictAndStoresNothing(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.insert(["a"], payload: #"{"data":{"x":"1"}}"#, key: "k", at: t0)
        #expect(throws: IdempotencyConflict.self) {
            try queue.insert(["a"], payload: #"{"data":{"x":"2"}}"#, key: "k", at: t0 + 1_000)
        }
        #expect(throws: IdempotencyConflict.self) {
            try queue.insert(["other"], payload: #"{"data":{"x":"1"}}"#, key: "k", at: t0 + 1_000)
        }
        #expect(try queue.store.strings("SELECT CAST(count(*) AS TEXT) FROM messages") == ["1"])
        #expect(try queue.store.strings("SELECT CAST(count(*) AS TEXT) FROM deliveries") == ["1"])
    }

    @Test(arguments: Engine.available)
    func theSameKeyForAnFIDOrAV1MessageOfTheSameTextIsAConflict(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let first = NewMessage(app: "default", idempotencyKey: "k", payload: "{}", target: .tokens(["x"]))
        _ = try queue.store.insert(first, now: t0)
        var fid = first
        fid.tokenField = .fid
        var v1 = first
        v1.format = .v1
        for other in [fid, v1] {
            #expect(throws: IdempotencyConflict.self) { try queue.store.insert(other, now: t0 + 1) }
        }
        #expect(try queue.store.insert(first, now: t0 + 2).isRepeat)
    }

    @Test(arguments: Engine.available) func anExpiredKeyIsFreeForANewMessage(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let first = try queue.insert(["a"], payload: #"{"data":{"x":"1"}}"#, key: "k", at: t0)
        let later = try queue.insert(["a"], payload: #"{"data":{"x":"2"}}"#, key: "k",
                                     at: t0 + idempotencyWindowMillis)
        #expect(!later.isRepeat && later.id != first.id)
        #expect(try queue.store.strings("SELECT CAST(count(*) AS TEXT) FROM deliveries") == ["2"])
    }

    @Test(arguments: Engine.available) func aKeyAnswersUntilTheLastMillisecondOfItsWindow(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let first = try queue.insert(["a", "b"], key: "k", at: t0)
        let repeated = try queue.insert(["a", "b"], key: "k", at: t0 + idempotencyWindowMillis - 1)
        #expect(repeated == AcceptedMessage(id: first.id, rowID: first.rowID, deliveries: 2, isRepeat: true))
        let fresh = try queue.insert(["a", "b"], key: "k", at: t0 + idempotencyWindowMillis)
        #expect(!fresh.isRepeat && fresh.id != first.id && fresh.rowID != first.rowID)
        // The old message keeps its rows and lets go of its key, which now names the new one.
        #expect(try queue.store.strings(
            "SELECT coalesce(idempotency_key, '-') FROM messages ORDER BY id") == ["-", "k"])
        #expect(try queue.store.strings("SELECT CAST(count(*) AS TEXT) FROM deliveries") == ["4"])
    }

    // MARK: - Ingest

    /// The writes of a group commit stored together (`insertMessages(writes:)`, PostgreSQL's set-based statement)
    /// leave the rows, and give the answers, that the same messages stored one at a time do: repeats of a key
    /// within a write, across writes and from before; a conflict; an expired key taken again; collapse heads
    /// replaced within the call; a `users` fan-out; a dry run. A write with a conflict anywhere in it stores
    /// nothing, and the others are kept.
    @Test(arguments: Engine.available) func aGroupOfWritesStoresWhatOneMessageAtATimeStores(_ engine: Engine) throws {
        func message(
            _ tokens: [String], key: String? = nil, payload: String = "{}", collapseKey: String? = "score",
            dryRun: Bool = false
        ) -> NewMessage {
            NewMessage(
                app: "default", idempotencyKey: key, payload: payload, target: .tokens(tokens),
                collapseKey: collapseKey, ttlSeconds: 3600, dryRun: dryRun)
        }
        let writes: [[NewMessage]] = [
            [message(["a", "b"], key: "k1"), message(["b"]), message(["a", "b"], key: "k1")],
            [message(["a", "b"], key: "k1")],
            [message(["a", "b"], key: "k1", payload: #"{"other":1}"#)],
            [message(["x"], key: "old", collapseKey: nil)],
            [
                message(["c"], key: "stale", payload: #"{"new":1}"#),
                NewMessage(app: "default", payload: "{}", target: .users(["ann"]), collapseKey: "score"),
            ],
            [message(["a"], dryRun: true)],
        ]
        let refused = [message(["d"], key: "k2"), message(["d"], key: "k2", payload: #"{"other":2}"#)]
        let now = t0 + idempotencyWindowMillis

        /// A store with a message keyed "old" (still answering), one keyed "stale" (expired), and ann's token "a".
        func prepared() throws -> Queue {
            let queue = try Queue(engine)
            try queue.insert(["x"], key: "stale", at: t0)
            try queue.insert(["x"], key: "old", at: now - 1)
            try queue.store.register("a", app: "default", user: "ann", now: t0)
            return queue
        }
        /// Messages, deliveries and collapse heads, each message id written as its place in id order.
        func contents(_ queue: Queue) throws -> [String] {
            let rows = try queue.store.strings(
                """
                SELECT id || ' ' || coalesce(idempotency_key, '-') || ' ' || payload || ' '
                       || coalesce(collapse_key, '-') || ' ' || CAST(dry_run AS TEXT) FROM messages ORDER BY id
                """)
                + queue.store.strings("SELECT message_id || ' ' || token || ' ' || state FROM deliveries ORDER BY id")
                + queue.store.strings(
                    """
                    SELECT h.collapse_key || ' ' || h.token || ' ' || h.message_id || ' ' || d.message_id
                    FROM collapse_heads AS h JOIN deliveries AS d ON d.id = h.delivery_id
                    ORDER BY h.collapse_key, h.token
                    """)
            return try renumbered(rows, queue)
        }
        func renumbered(_ lines: [String], _ queue: Queue) throws -> [String] {
            let ids = try queue.store.strings("SELECT id FROM messages ORDER BY id")
            return lines.map { line in
                ids.enumerated().reduce(line) { $0.replacingOccurrences(of: $1.element, with: "m\($1.offset)") }
            }
        }
        func answer(_ result: Result<AcceptedMessage, Error>) -> String {
            switch result {
            case .success(let accepted): "\(accepted.id) \(accepted.deliveries) \(accepted.isRepeat)"
            case .failure(let error): "\(type(of: error))"
            }
        }

        let alone = try prepared()
        let store = alone.store.database
        let aloneAnswers = writes.joined().map { message in
            answer(Result { try store.transaction { try store.insertMessage(message, now: now) } })
        }

        let together = try prepared()
        let results = try together.store.database.transaction {
            try together.store.database.insertMessages(writes: writes + [refused], now: now)
        }
        #expect(throws: IdempotencyConflict.self) { try results[writes.count].get() }
        let togetherAnswers = zip(writes, results).flatMap { write, result in
            switch result {
            case .success(let accepted): accepted.map { answer(.success($0)) }
            case .failure(let error): write.map { _ in answer(.failure(error)) }
            }
        }

        #expect(try contents(together) == contents(alone))
        #expect(try renumbered(togetherAnswers, together) == renumbered(aloneAnswers, alone))
        // What the writes were: repeats, a conflict, a key taken again, each with its deliveries.
        #expect(try renumbered(aloneAnswers, alone) == [
            "m2 2 false", "m3 1 false", "m2 2 true", "m2 2 true", "IdempotencyConflict", "m1 1 true", "m4 1 false",
            "m5 1 false", "m6 1 false",
        ])
    }

    @Test(arguments: Engine.available) func usersExpandToTheirRegisteredTokensOnce(_ engine: Engine) throws {
        let queue = try Queue(engine)
        try queue.store.register("t-ann-1", app: "default", user: "ann", now: t0)
        try queue.store.register("t-ann-2", app: "default", user: "ann", now: t0 + 1)
        try queue.store.register("t-bob", app: "default", user: "bob", now: t0 + 2)
        try queue.store.register("t-ann-other-app", app: "other", user: "ann", now: t0 + 3)
        let accepted = try queue.store.insert(
            NewMessage(
                app: "default", payload: "{}", target: .users(["ann", "bob", "ann", "nobody"]), collapseKey: "k"),
            now: t0 + 10)
        #expect(accepted.deliveries == 3)
        #expect(try queue.rows() == ["t-ann-1 queued", "t-ann-2 queued", "t-bob queued"])
        // Each token it expanded to has it as the head of its collapse key, with the delivery to that token.
        #expect(try queue.store.strings(
            """
            SELECT h.token FROM collapse_heads AS h JOIN deliveries AS d ON d.id = h.delivery_id
            WHERE d.message_id = h.message_id AND d.token = h.token AND h.message_id = $1 ORDER BY h.token
            """, [.text(accepted.id)]) == ["t-ann-1", "t-ann-2", "t-bob"])
        let nobody = try queue.store.insert(
            NewMessage(app: "default", payload: "{}", target: .users(["nobody"])), now: t0 + 11)
        #expect(nobody.deliveries == 0)
        #expect(try queue.store.database.message(id: nobody.id)?.deliveries.isEmpty == true)
    }

    /// `AcceptedMessage.rowID` (what `/fcm/send` answers as `multicast_id` or a topic's `message_id`) names the
    /// message's row on every engine.
    @Test(arguments: Engine.available) func theRowIDNamesTheMessage(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let tokens = try queue.insert(["a"])
        let topic = try queue.store.insert(
            NewMessage(app: "default", payload: "{}", target: .topic("/topics/news")), now: t0)
        #expect(tokens.rowID > 0 && topic.rowID != tokens.rowID)
        for accepted in [tokens, topic] {
            #expect(try queue.store.strings(
                "SELECT id FROM messages WHERE rowid = $1", [.integer(accepted.rowID)]) == [accepted.id])
        }
    }

    @Test(arguments: Engine.available) func cancellingDropsOnlyQueuedDeliveries(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let message = try queue.enqueue(["sent", "sending", "waiting"])
        _ = try queue.store.strings("UPDATE deliveries SET state = 'delivered' WHERE token = 'sent' RETURNING id")
        try queue.claim(limit: 1, now: t0 + 1)
        let before = try queue.states()
        #expect(before.values.sorted() == ["delivered", "inflight", "queued"])
        let queued = try #require(before.first { $0.value == "queued" }?.key)
        #expect(try queue.store.cancel(message, now: t0 + 2) == 1)
        var after = before
        after[queued] = "dropped/Cancelled"
        #expect(try queue.states() == after, "only the queued delivery is dropped; the sent and the leased stay")
        #expect(try queue.store.cancel("missing", now: t0 + 2) == nil)
    }

    @Test(arguments: Engine.available) func ingestDecidesExpiryLaneAndCollapseHeads(_ engine: Engine) throws {
        let queue = try Queue(engine)
        queue.store.setTTLZeroWindow(7_000)
        let nowOrNever = try queue.insert(["a"], collapseKey: "k", priority: .high, ttl: 0, at: t0)
        let hour = try queue.insert(["b", "c"], collapseKey: "k", ttl: 3600, at: t0 + 1)
        let dryRun = try queue.insert(["d"], collapseKey: "k", dryRun: true, at: t0 + 2)
        func expiry(_ id: String) throws -> Int64? { try queue.store.database.message(id: id)?.expiresAt }
        #expect(try expiry(nowOrNever.id) == t0 + 7_000)
        #expect(try expiry(hour.id) == t0 + 1 + 3_600_000)
        #expect(try queue.store.strings("SELECT token || ' ' || priority_rank FROM deliveries ORDER BY id") == [
            "a 0", "b 1", "c 1", "d 1",
        ])
        // A dry run reaches no device, so it heads no collapse key.
        #expect(try queue.store.strings("SELECT token FROM collapse_heads ORDER BY token") == ["a", "b", "c"])
    }

    /// README: "each token once, in the order the tokens were first registered" — across users, not user by user,
    /// and by registration even when two registrations share a millisecond; moving a token to another user or app,
    /// or registering it again, keeps its place.
    @Test(arguments: Engine.available)
    func aUsersFanOutFollowsRegistrationOrderAcrossInterleavedUsers(_ engine: Engine) throws {
        let queue = try Queue(engine)
        for (token, user, at) in [
            ("z-ann-1", "ann", t0), ("y-bob-1", "bob", t0), ("x-ann-2", "ann", t0 + 1), ("w-cid-1", "cid", t0 + 1),
            ("v-bob-2", "bob", t0 + 1), ("u-ann-3", "ann", t0 + 2), ("t-moved", "cid", t0 + 2),
        ] {
            try queue.store.register(token, app: "default", user: user, now: at)
        }
        try queue.store.register("t-moved", app: "default", user: "bob", now: t0 + 3)
        try queue.store.register("y-bob-1", app: "default", user: "bob", now: t0 + 4)
        let accepted = try queue.store.insert(
            NewMessage(app: "default", payload: "{}", target: .users(["bob", "ann"])), now: t0 + 10)
        #expect(accepted.deliveries == 6)
        #expect(try queue.rows() == [
            "z-ann-1 queued", "y-bob-1 queued", "x-ann-2 queued", "v-bob-2 queued", "u-ann-3 queued",
            "t-moved queued",
        ])
        let everyApp = try queue.store.insert(
            NewMessage(app: NewMessage.everyApp, payload: "{}", target: .users(["cid", "ann"])), now: t0 + 11)
        #expect(try queue.store.strings(
            "SELECT token FROM deliveries WHERE message_id = $1 ORDER BY id", [.text(everyApp.id)]
        ) == ["z-ann-1", "x-ann-2", "w-cid-1", "u-ann-3"])
    }

    @Test(arguments: Engine.available) func aMessageKeepsItsFormatAndTokenField(_ engine: Engine) throws {
        let queue = try Queue(engine)
        let accepted = try queue.store.insert(
            NewMessage(app: "default", payload: #"{"data":{"a":"b"}}"#, format: .v1, target: .tokens(["fid-1"]),
                       tokenField: .fid, collapseKey: "k", priority: .high, ttlSeconds: 60),
            now: t0)
        let legacy = try queue.insert(["tok-1"])
        let claimed = try queue.claim(now: t0 + 1)
        let message = try #require(claimed.messages[accepted.id])
        #expect(message == ClaimedMessage(
            id: accepted.id, app: "default", payload: #"{"data":{"a":"b"}}"#, targetKind: .tokens, ttlSeconds: 60,
            dryRun: false, expiresAt: t0 + 60_000, collapseKey: "k", format: .v1, tokenField: .fid))
        #expect(claimed.messages[legacy.id]?.format == .legacy && claimed.messages[legacy.id]?.tokenField == .token)
        #expect(try queue.store.strings("SELECT format || '/' || token_field FROM messages ORDER BY format")
            == ["legacy/token", "v1/fid"])
    }
}
