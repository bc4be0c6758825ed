import Foundation
import Queue
import Storage
import Testing

private let t0: Int64 = 1_700_000_000_000
private let day: Int64 = 86_400_000

/// What the HTTP reads and the admin commands ask of a store, driven through `any Store` with the same test code on
/// every engine (`Engine`): a message with its deliveries, the token listing and feed, status, dead letters and
/// retention, with their cursors and limits, every dead-letter filter at once, NULL reasons, the feed's and
/// reconciliation's retention.
@Suite struct AdminStoreSuite {
    /// One engine's store with the helpers the tests share.
    final class Admin {
        let underTest: StoreUnderTest
        var store: any Store { underTest.database }

        init(_ engine: Engine) throws { underTest = try engine.make() }

        /// Stores a message to `tokens` at `now`; returns its id.
        @discardableResult
        func enqueue(
            _ tokens: [String], app: String = "default", ttl: Int = 2_419_200, key: String? = nil,
            collapseKey: String? = nil, at now: Int64 = t0
        ) throws -> String {
            try underTest.insert(
                NewMessage(
                    app: app, idempotencyKey: key, payload: "{}", target: .tokens(tokens), collapseKey: collapseKey,
                    ttlSeconds: ttl),
                now: now
            ).id
        }

        /// Puts the delivery to `token` in `state` as of `at` (the way an outcome would have left it).
        func finish(_ token: String, _ state: String, reason: String? = nil, at: Int64, attempts: Int64 = 3) throws {
            let changed = try underTest.strings(
                """
                UPDATE deliveries SET state = $1, reason = $2, attempts = $3, updated_at = $4, last_status = 200
                WHERE token = $5 RETURNING id
                """, [.text(state), .optional(reason), .integer(attempts), .integer(at), .text(token)])
            #expect(changed.count == 1, "no delivery to \(token)")
        }

        /// "state reason attempts next_attempt_at" of the delivery to `token`.
        func row(_ token: String) throws -> String? {
            try underTest.strings(
                """
                SELECT state || ' ' || coalesce(reason, '-') || ' ' || attempts || ' ' || next_attempt_at
                FROM deliveries WHERE token = $1
                """, [.text(token)]
            ).first
        }

        func id(of token: String) throws -> Int64 {
            try #require(try underTest.strings("SELECT id FROM deliveries WHERE token = $1", [.text(token)]).first
                .flatMap { Int64($0) })
        }

        func messageExists(_ id: String) throws -> Bool {
            try !underTest.strings("SELECT id FROM messages WHERE id = $1", [.text(id)]).isEmpty
        }

        func count(_ sql: String) throws -> Int {
            try underTest.strings(sql).first.flatMap { Int($0) } ?? -1
        }
    }

    // MARK: - Messages

    @Test(arguments: Engine.available) func aMessageReadsBackWithItsDeliveriesInIdOrder(_ engine: Engine) throws {
        let admin = try Admin(engine)
        let message = NewMessage(
            app: "default", payload: #"{"data":{"score":"1:0"}}"#, format: .v1, target: .tokens(["b", "a"]),
            tokenField: .fid, collapseKey: "score", priority: .high, ttlSeconds: 60)
        let id = try admin.underTest.insert(message, now: t0).id
        try admin.finish("a", "delivered", at: t0 + 5, attempts: 1)
        _ = try admin.underTest.strings(
            "UPDATE deliveries SET fcm_message_id = $1, canonical_token = $2 WHERE token = 'a' RETURNING id",
            [.text("0:1"), .text("a2")])
        let (b, a) = (try admin.id(of: "b"), try admin.id(of: "a"))
        #expect(b < a, "deliveries are numbered in the order of the targets")

        #expect(try admin.store.message(id: id) == MessageRecord(
            id: id, app: "default", payload: #"{"data":{"score":"1:0"}}"#, format: .v1, targetKind: .tokens,
            tokenField: .fid, collapseKey: "score", priority: .high, ttlSeconds: 60, dryRun: false, createdAt: t0,
            expiresAt: t0 + 60_000,
            deliveries: [
                DeliveryRecord(
                    id: b, token: "b", state: .queued, reason: nil, attempts: 0, nextAttemptAt: t0, fcmMessageID: nil,
                    canonicalToken: nil, lastStatus: nil, updatedAt: t0),
                DeliveryRecord(
                    id: a, token: "a", state: .delivered, reason: nil, attempts: 1, nextAttemptAt: t0,
                    fcmMessageID: "0:1", canonicalToken: "a2", lastStatus: 200, updatedAt: t0 + 5),
            ]))
        #expect(try admin.store.message(id: "no-such-message") == nil)
    }

    @Test(arguments: Engine.available) func aDryRunToATopicReadsBackAsStored(_ engine: Engine) throws {
        let admin = try Admin(engine)
        let id = try admin.underTest.insert(
            NewMessage(app: "second", payload: "{}", target: .topic("/topics/news"), ttlSeconds: 0, dryRun: true),
            now: t0
        ).id
        let record = try #require(try admin.store.message(id: id))
        #expect(record.targetKind == .topic && record.format == .legacy && record.tokenField == .token)
        #expect(record.dryRun && record.collapseKey == nil && record.priority == .normal && record.ttlSeconds == 0)
        #expect(record.expiresAt == t0 + defaultTTLZeroWindowMillis, "TTL 0 waits no longer than the window")
        #expect(record.deliveries.map(\.token) == ["/topics/news"])
    }

    // MARK: - Tokens

    @Test(arguments: Engine.available) func tokensListFiltersByAppAndUserInTokenOrderAndPages(_ engine: Engine) throws {
        let admin = try Admin(engine)
        let registry = [("c", "default", "u1"), ("a", "default", "u1"), ("b", "default", nil), ("d", "second", "u1")]
        for (token, app, user) in registry {
            try admin.underTest.register(token, app: app, user: user, now: t0)
        }
        try admin.underTest.register("c", app: "default", user: "u1", now: t0 + 7)
        func tokens(_ app: String?, _ user: String?, after: String? = nil, limit: Int = 10) throws -> [String] {
            try admin.store.tokens(app: app, user: user, after: after, limit: limit).map(\.token)
        }
        #expect(try tokens(nil, nil) == ["a", "b", "c", "d"])
        #expect(try tokens("default", nil) == ["a", "b", "c"])
        #expect(try tokens(nil, "u1") == ["a", "c", "d"])
        #expect(try tokens("default", "u1", after: "a") == ["c"])
        #expect(try tokens(nil, nil, limit: 2) == ["a", "b"])
        #expect(try tokens(nil, nil, after: "b", limit: 1) == ["c"])
        #expect(try tokens(nil, "u1", after: "d").isEmpty)
        #expect(try tokens("third", nil).isEmpty)
        #expect(try admin.store.tokens(app: "default", user: nil, after: "b", limit: 10) == [
            TokenRecord(token: "c", app: "default", user: "u1", createdAt: t0, updatedAt: t0 + 7)
        ])
        #expect(try admin.store.tokens(app: nil, user: nil, after: "a", limit: 1) == [
            TokenRecord(token: "b", app: "default", user: nil, createdAt: t0, updatedAt: t0)
        ])
    }

    /// Whatever order the engine sorts text in, paging with the last token as the cursor visits every token once, in
    /// the order of the whole listing.
    @Test(arguments: Engine.available) func tokenPagesVisitEveryTokenOnce(_ engine: Engine) throws {
        let admin = try Admin(engine)
        let tokens = ["dA1:APA91b-x", "Zz_9", "a:b", "A-b", "0x", "m_n", "M-n", "zz", "ä"]
        for token in tokens { try admin.underTest.register(token, app: "default", user: nil, now: t0) }
        let whole = try admin.store.tokens(app: nil, user: nil, after: nil, limit: 100).map(\.token)
        var paged: [String] = []
        var cursor: String?
        while true {
            let page = try admin.store.tokens(app: "default", user: nil, after: cursor, limit: 2).map(\.token)
            guard let last = page.last else { break }
            paged += page
            cursor = last
        }
        #expect(paged == whole)
        #expect(Set(paged) == Set(tokens) && paged.count == tokens.count)
    }

    @Test(arguments: Engine.available) func tokenEventsPageByIdOldestFirst(_ engine: Engine) throws {
        let admin = try Admin(engine)
        for (at, token, kind, replacement) in [
            (t0, "a", "deleted", nil), (t0 + 1, "b", "replaced", "b2"), (t0 + 2, "c", "deleted", nil),
        ] as [(Int64, String, String, String?)] {
            _ = try admin.underTest.strings(
                """
                INSERT INTO token_events (at, app, token, kind, replacement, reason, message_id)
                VALUES ($1, 'default', $2, $3, $4, 'NotRegistered', 'm1') RETURNING id
                """, [.integer(at), .text(token), .text(kind), .optional(replacement)])
        }
        let first = try admin.store.tokenEvents(after: 0, limit: 2)
        #expect(first.map(\.token) == ["a", "b"])
        #expect(first[0].id < first[1].id)
        #expect(first[1] == TokenEventRecord(
            id: first[1].id, at: t0 + 1, app: "default", token: "b", kind: .replaced, replacement: "b2",
            reason: .notRegistered, messageID: "m1"))
        let rest = try admin.store.tokenEvents(after: first[1].id, limit: 2)
        #expect(rest.map(\.token) == ["c"] && rest[0].replacement == nil)
        #expect(try admin.store.tokenEvents(after: rest[0].id, limit: 2).isEmpty)
    }

    @Test(arguments: Engine.available) func tokenEventsOfOneTokenNewestFirstWithinItsApp(_ engine: Engine) throws {
        let admin = try Admin(engine)
        for (at, app, token, kind) in [
            (t0, "default", "a", "replaced"), (t0 + 1, "default", "b", "deleted"), (t0 + 2, "default", "a", "deleted"),
            (t0 + 3, "second", "a", "deleted"),
        ] as [(Int64, String, String, String)] {
            _ = try admin.underTest.strings(
                "INSERT INTO token_events (at, app, token, kind) VALUES ($1, $2, $3, $4) RETURNING id",
                [.integer(at), .text(app), .text(token), .text(kind)])
        }
        let events = try admin.store.tokenEvents(app: "default", token: "a", limit: 10)
        #expect(events.map(\.at) == [t0 + 2, t0])
        #expect(try admin.store.tokenEvents(app: "default", token: "a", limit: 1).map(\.at) == [t0 + 2])
        #expect(try admin.store.tokenEvents(app: "third", token: "a", limit: 10).isEmpty)
        let recent = try admin.store.recentTokenEvents(before: nil, limit: 3)
        #expect(recent.map(\.at) == [t0 + 3, t0 + 2, t0 + 1])
        #expect(try admin.store.recentTokenEvents(before: recent[2].id, limit: 3).map(\.at) == [t0])
    }

    // MARK: - Status

    @Test(arguments: Engine.available)
    func statusCountsTheBacklogInFlightDeadAndWhatFinishedInTheLastMinutePerApp(_ engine: Engine) throws {
        let admin = try Admin(engine)
        let now = t0 + 10 * 60_000
        try admin.enqueue(["q1", "q2", "later", "run", "ok-old", "ok-new", "gone", "dead-new", "dead-old"], at: t0)
        try admin.enqueue(["s1", "s-ok"], app: "second", at: t0)
        _ = try admin.underTest.strings(
            "UPDATE deliveries SET next_attempt_at = $1 WHERE token = 'later' RETURNING id", [.integer(now + 60_000)])
        _ = try admin.underTest.strings(
            """
            UPDATE deliveries SET state = 'inflight', lease_owner = 'w', lease_expires_at = $1 WHERE token = 'run'
            RETURNING id
            """, [.integer(now + 30_000)])
        try admin.finish("ok-old", "delivered", at: now - 61_000)
        try admin.finish("ok-new", "delivered", at: now - 59_000)
        try admin.finish("gone", "dropped", reason: "NotRegistered", at: now - 1000)
        try admin.finish("dead-new", "dead", reason: "InvalidRegistration", at: now - 2000)
        try admin.finish("dead-old", "dead", reason: "InvalidRegistration", at: now - 5 * 60_000)
        try admin.finish("s-ok", "delivered", at: now - 10)

        let store = admin.store
        let statuses = try store.snapshot { try store.appStatuses(now: now, lastMinute: true) }
        #expect(statuses.map(\.name) == ["default", "second"])
        #expect(statuses.first == AppStatus(
            name: "default", queued: 3, ready: 2, oldestReadySince: t0, inflight: 1, dead: 2,
            finishedLastMinute: FinishedCounts(delivered: 1, dead: 1, dropped: 1)))
        #expect(statuses.last == AppStatus(
            name: "second", queued: 1, ready: 1, oldestReadySince: t0,
            finishedLastMinute: FinishedCounts(delivered: 1)))

        // The gauges' refresh: the same figures without the last minute's, which cost an index entry per send.
        let gauges = try store.snapshot { try store.appStatuses(now: now, lastMinute: false) }
        #expect(gauges == statuses.map { status in
            var status = status
            status.finishedLastMinute = FinishedCounts()
            return status
        })
    }

    @Test(arguments: Engine.available) func oldestReadyIsTheEarliestDueOverBothLanes(_ engine: Engine) throws {
        let admin = try Admin(engine)
        _ = try admin.underTest.insert(
            NewMessage(app: "default", payload: "{}", target: .tokens(["high"]), priority: .high), now: t0 + 50)
        try admin.enqueue(["normal"], at: t0 + 20)
        let status = try #require(try admin.store.appStatuses(now: t0 + 100, lastMinute: true).first)
        #expect(status.queued == 2 && status.ready == 2 && status.oldestReadySince == t0 + 20)
    }

    @Test(arguments: Engine.available) func statusHasNoOldestReadyWhenNothingIsDueYet(_ engine: Engine) throws {
        let admin = try Admin(engine)
        try admin.enqueue(["a"], at: t0)
        _ = try admin.underTest.strings(
            "UPDATE deliveries SET next_attempt_at = $1 RETURNING id", [.integer(t0 + 60_000)])
        let status = try #require(try admin.store.appStatuses(now: t0 + 1000, lastMinute: true).first)
        #expect(status.queued == 1 && status.ready == 0 && status.oldestReadySince == nil)
    }

    @Test(arguments: Engine.available) func statusShowsPausedAndGatedAppsWithReasonAndTimes(_ engine: Engine) throws {
        let admin = try Admin(engine)
        try admin.enqueue(["a"], at: t0)
        try admin.enqueue(["b"], app: "second", at: t0)
        try admin.underTest.pause("default", now: t0 + 5)
        try admin.underTest.closeGate("second", until: t0 + 9000, reason: .retryAfter, now: t0 + 6)
        let statuses = try admin.store.appStatuses(now: t0 + 10, lastMinute: true)
        #expect(statuses.count == 2)
        #expect(statuses[0].paused && statuses[0].pauseReason == "test" && statuses[0].pausedAt == t0 + 5)
        #expect(statuses[0].gateUntil == 0 && statuses[0].gateReason == nil && statuses[0].gatedAt == nil)
        #expect(!statuses[1].paused && statuses[1].pauseReason == nil && statuses[1].gateUntil == t0 + 9000)
        #expect(statuses[1].gateReason == .retryAfter && statuses[1].gatedAt == t0 + 6)
    }

    @Test(arguments: Engine.available) func aGateKeepsWhatClosedItLastAndSinceWhenItHasBeenClosed(
        _ engine: Engine
    ) throws {
        let admin = try Admin(engine)
        try admin.enqueue(["a"], at: t0)
        let gate = { () throws -> (until: Int64, reason: GateReason?, since: Int64?) in
            let status = try #require(try admin.store.appStatuses(now: t0, lastMinute: false).first)
            return (status.gateUntil, status.gateReason, status.gatedAt)
        }
        try admin.underTest.closeGate("default", until: t0 + 1_000, reason: .reset, now: t0)
        #expect(try gate() == (t0 + 1_000, .reset, t0))
        // Still closed: a later closing names itself but the gate has been closed since t0.
        try admin.underTest.closeGate("default", until: t0 + 1_500, reason: .timeout, now: t0 + 500)
        #expect(try gate() == (t0 + 1_500, .timeout, t0))
        try admin.underTest.closeGate("default", until: t0 + 1_200, reason: .http(503), now: t0 + 600)
        #expect(try gate() == (t0 + 1_500, .timeout, t0), "a shorter gate changes nothing")
        // Reopened at t0 + 1500, closed again later: a new closing.
        try admin.underTest.closeGate("default", until: t0 + 62_000, reason: .quota, now: t0 + 2_000)
        #expect(try gate() == (t0 + 62_000, .quota, t0 + 2_000))
        try admin.underTest.pause("default", now: t0 + 3_000)
        try admin.underTest.resume("default")
        #expect(try gate() == (0, nil, nil), "resume opens the gate")
        // A code a newer Herald wrote reads back as it was stored.
        try admin.underTest.closeGate("default", until: t0 + 1_000, reason: .other("goaway"), now: t0)
        #expect(try gate() == (t0 + 1_000, .other("goaway"), t0))
    }

    @Test(arguments: Engine.available) func originsAreStoredWhileGatedOrPausedAndResumedWithTheirApp(
        _ engine: Engine
    ) throws {
        let admin = try Admin(engine)
        let store = admin.store
        let (bad, slow, gone) = ("https://bad.example", "https://slow.example:8443", "https://gone.example")
        try store.transaction {
            try store.closeOriginGate("web", origin: slow, until: t0 + 1_000, reason: .retryAfter, now: t0)
            try store.closeOriginGate("web", origin: slow, until: t0 + 900, reason: .http(503), now: t0 + 100)
            try store.closeOriginGate("web", origin: bad, until: t0 + 500, reason: .http(403), now: t0)
            try store.closeOriginGate("other", origin: gone, until: t0 + 50, reason: .timeout, now: t0)
            #expect(try store.pauseOrigin("web", origin: bad, reason: "HTTP 403 for 5 subscriptions in a row", now: t0))
            #expect(try !store.pauseOrigin("web", origin: bad, reason: "again", now: t0 + 1), "already paused")
        }
        let web = try store.originSwitches(app: "web", now: t0 + 100)
        #expect(web == [
            OriginSwitch(
                app: "web", origin: bad, gateUntil: t0 + 500, gateReason: .http(403), gatedAt: t0, paused: true,
                pauseReason: "HTTP 403 for 5 subscriptions in a row", pausedAt: t0),
            OriginSwitch(app: "web", origin: slow, gateUntil: t0 + 1_000, gateReason: .retryAfter, gatedAt: t0),
        ], "a shorter gate changes nothing")
        #expect(try store.originSwitches(app: nil, now: t0 + 10).map(\.app) == ["other", "web", "web"])
        // Rows whose gate opened and that are not paused go: the table holds what is gated or paused now.
        #expect(try store.transaction { try store.forgetOpenOrigins(now: t0 + 1_000) } == 2)
        #expect(try store.originSwitches(app: nil, now: t0 + 1_000).map(\.origin) == [bad])
        // Resuming the app resumes its origins, even when the app itself was not paused.
        #expect(try store.transaction { try store.resumeApp("web") })
        #expect(try store.originSwitches(app: nil, now: t0).isEmpty)
        #expect(try store.transaction { try store.resumeApp("web") } == false, "nothing left to resume")
    }

    @Test(arguments: Engine.available) func queueDepthCountsEveryAppAndState(_ engine: Engine) throws {
        let admin = try Admin(engine)
        try admin.enqueue(["a", "b", "c"], at: t0)
        try admin.enqueue(["d"], app: "second", at: t0 + 3)
        try admin.finish("c", "delivered", at: t0 + 1)
        #expect(try admin.store.queueDepth() == [
            QueueDepthRow(app: "default", state: .delivered, count: 1, oldest: t0),
            QueueDepthRow(app: "default", state: .queued, count: 2, oldest: t0),
            QueueDepthRow(app: "second", state: .queued, count: 1, oldest: t0 + 3),
        ])
    }

    // MARK: - Dead letters

    @Test(arguments: Engine.available) func deadLettersFilterByAppReasonTimeAndIdNewestFirst(_ engine: Engine) throws {
        let admin = try Admin(engine)
        try admin.enqueue(["a", "b", "c"], at: t0)
        try admin.enqueue(["x"], app: "second", at: t0)
        try admin.finish("a", "dead", reason: "InvalidRegistration", at: t0 + 1000)
        try admin.finish("b", "dead", reason: "MismatchSenderId", at: t0 + 2000)
        try admin.finish("c", "delivered", at: t0 + 3000)
        try admin.finish("x", "dead", reason: "InvalidRegistration", at: t0 + 4000)

        let store = admin.store
        func tokens(_ filter: DeadLetterFilter, limit: Int = 10) throws -> [String] {
            try store.deadLetters(filter, limit: limit).map(\.token)
        }
        #expect(try tokens(DeadLetterFilter()) == ["x", "b", "a"])
        #expect(try tokens(DeadLetterFilter(), limit: 2) == ["x", "b"])
        #expect(try tokens(DeadLetterFilter(app: "default")) == ["b", "a"])
        #expect(try tokens(DeadLetterFilter(reason: "InvalidRegistration")) == ["x", "a"])
        #expect(try tokens(DeadLetterFilter(diedSince: t0 + 2000)) == ["x", "b"])
        let a = try #require(
            try store.deadLetters(DeadLetterFilter(app: "default", reason: "InvalidRegistration"), limit: 10).first)
        let message = try #require(try admin.underTest.strings("SELECT message_id FROM deliveries WHERE token = 'a'")
            .first)
        #expect(a == DeadLetterRecord(
            deliveryID: try admin.id(of: "a"), messageID: message, app: "default", token: "a",
            reason: .invalidRegistration, attempts: 3, lastStatus: 200, diedAt: t0 + 1000, messageCreatedAt: t0,
            messageExpiresAt: t0 + 2_419_200_000, ttlSeconds: 2_419_200))
        #expect(try store.deadLetter(id: a.deliveryID) == a)
        #expect(try store.deadLetter(id: try admin.id(of: "c")) == nil, "a delivered row is not a dead letter")
        #expect(try store.deadLetter(id: 987_654) == nil)
        #expect(try store.deadLetterGroups(DeadLetterFilter()) == [
            DeadLetterGroup(app: "default", reason: .invalidRegistration, count: 1),
            DeadLetterGroup(app: "default", reason: .mismatchSenderID, count: 1),
            DeadLetterGroup(app: "second", reason: .invalidRegistration, count: 1),
        ])
        #expect(try store.deadLetterGroups(DeadLetterFilter(app: "nope")).isEmpty)
    }

    /// The console's pages: key-set paging by (time of death, id), newest first, each dead letter once even where
    /// several died in the same millisecond; and the token and until terms.
    @Test(arguments: Engine.available) func deadLetterPagesByKeyVisitEachOnceNewestFirst(_ engine: Engine) throws {
        let admin = try Admin(engine)
        let tokens = (0..<7).map { "t\($0)" }
        try admin.enqueue(tokens, at: t0)
        for (index, token) in tokens.enumerated() {
            // Three share one time of death, so the id must break the tie.
            try admin.finish(token, "dead", reason: "InvalidRegistration", at: t0 + Int64(min(index, 3)))
        }
        let store = admin.store
        let whole = try store.deadLetters(DeadLetterFilter(), limit: 100)
        var paged: [DeadLetterRecord] = []
        var filter = DeadLetterFilter(reason: "InvalidRegistration")
        while true {
            let page = try store.deadLetters(filter, limit: 2)
            guard let last = page.last else { break }
            paged += page
            filter.after = DeadLetterCursor(last)
        }
        #expect(paged == whole && paged.count == 7)
        #expect(paged.map(\.diedAt) == paged.map(\.diedAt).sorted(by: >))

        #expect(try store.deadLetters(DeadLetterFilter(token: "t4"), limit: 10).map(\.token) == ["t4"])
        #expect(try store.deadLetters(DeadLetterFilter(token: "nope"), limit: 10).isEmpty)
        #expect(try store.deadLetters(DeadLetterFilter(diedUntil: t0 + 1), limit: 10).map(\.token) == ["t1", "t0"])
        let until = DeadLetterFilter(diedUntil: t0 + 2, token: "t2")
        #expect(try store.deadLetterGroups(until) == [DeadLetterGroup(app: "default", reason: .invalidRegistration,
                                                                      count: 1)])
        #expect(try store.transaction { try store.requeueDeadLetters(until, now: t0 + 10, limit: 10) } == 1)
        #expect(try admin.row("t2") == "queued - 0 \(t0 + 10)")
        #expect(try store.transaction { try store.purgeDeadLetters(DeadLetterFilter(token: "t5"), now: t0, limit: 10) }
            .deliveries == 1)
        #expect(try admin.row("t5") == nil)
    }

    @Test(arguments: Engine.available) func deadLetterGroupsPutAMissingReasonFirst(_ engine: Engine) throws {
        let admin = try Admin(engine)
        try admin.enqueue(["a", "b", "c"], at: t0)
        try admin.finish("a", "dead", reason: "MaxAttempts", at: t0 + 1)
        try admin.finish("b", "dead", at: t0 + 1)
        try admin.finish("c", "dead", reason: "InvalidRegistration", at: t0 + 1)
        #expect(try admin.store.deadLetterGroups(DeadLetterFilter()) == [
            DeadLetterGroup(app: "default", reason: nil, count: 1),
            DeadLetterGroup(app: "default", reason: .invalidRegistration, count: 1),
            DeadLetterGroup(app: "default", reason: .maxAttempts, count: 1),
        ])
    }

    /// Every filter term at once, in every statement that takes a filter: each value must land on its own
    /// placeholder after the statement's own parameters.
    @Test(arguments: Engine.available) func everyFilterTermAtOnceInEveryDeadLetterStatement(_ engine: Engine) throws {
        let admin = try Admin(engine)
        try admin.enqueue(["a", "b", "c", "d", "e"], at: t0)
        try admin.enqueue(["x"], app: "second", at: t0)
        try admin.finish("a", "dead", reason: "InvalidRegistration", at: t0 + 1000)
        try admin.finish("b", "dead", reason: "InvalidRegistration", at: t0 + 2000)
        try admin.finish("c", "dead", reason: "MismatchSenderId", at: t0 + 3000)
        try admin.finish("d", "dead", reason: "InvalidRegistration", at: t0 + 4000)
        try admin.finish("e", "dead", reason: "InvalidRegistration", at: t0 + 4500)
        try admin.finish("x", "dead", reason: "InvalidRegistration", at: t0 + 5000)
        let ids = try ["a", "b", "c", "d", "x"].map(admin.id(of:))
        let filter = DeadLetterFilter(
            app: "default", reason: "InvalidRegistration", diedSince: t0 + 2000, deliveryIDs: ids)

        let store = admin.store
        #expect(try store.deadLetters(filter, limit: 10).map(\.token) == ["d", "b"])
        #expect(try store.deadLetters(filter, limit: 1).map(\.token) == ["d"])
        #expect(try store.deadLetterGroups(filter) == [
            DeadLetterGroup(app: "default", reason: .invalidRegistration, count: 2)
        ])
        #expect(try store.expiredDeadLetterCount(filter, now: t0 + 5000) == 0)
        #expect(try store.expiredDeadLetterCount(filter, now: t0 + 30 * day) == 2)
        #expect(try store.transaction { try store.requeueDeadLetters(filter, now: t0 + 6000, limit: 1) } == 1)
        #expect(try store.transaction { try store.requeueDeadLetters(filter, now: t0 + 6000, limit: 1) } == 1)
        #expect(try store.transaction { try store.requeueDeadLetters(filter, now: t0 + 6000, limit: 1) } == 0)
        #expect(try admin.row("b") == "queued - 0 \(t0 + 6000)")
        #expect(try admin.row("d") == "queued - 0 \(t0 + 6000)")
        for token in ["a", "c", "e", "x"] {
            #expect(try admin.row(token)?.hasPrefix("dead") == true, "\(token) did not match the filter")
        }

        let purge = DeadLetterFilter(app: "default", reason: "InvalidRegistration", diedSince: t0, deliveryIDs: ids)
        let purged = try store.transaction { try store.purgeDeadLetters(purge, now: t0 + 7000, limit: 100) }
        #expect(purged.deliveries == 1 && purged.messages == 0, "only a; its message still has other deliveries")
        #expect(try admin.row("a") == nil)
        #expect(try admin.row("e")?.hasPrefix("dead") == true, "e's id was not in the filter")
    }

    @Test(arguments: Engine.available)
    func requeueMakesDeadLettersQueuedWithNoAttemptsDueNowAndSkipsExpiredMessages(_ engine: Engine) throws {
        let admin = try Admin(engine)
        let now = t0 + 120_000
        try admin.enqueue(["fresh"], at: t0)
        try admin.enqueue(["stale"], ttl: 60, at: t0)
        try admin.enqueue(["prompt"], ttl: 0, at: t0)
        try admin.enqueue(["ok"], at: t0)
        try admin.finish("fresh", "dead", reason: "MismatchSenderId", at: t0 + 1)
        try admin.finish("stale", "dead", reason: "MismatchSenderId", at: t0 + 1)
        try admin.finish("prompt", "dead", reason: "MismatchSenderId", at: t0 + 1)
        try admin.finish("ok", "delivered", at: t0 + 1)
        _ = try admin.underTest.strings(
            "UPDATE deliveries SET lease_owner = 'w', lease_expires_at = $1 WHERE token = 'fresh' RETURNING id",
            [.integer(t0)])

        let store = admin.store
        let filter = DeadLetterFilter()
        #expect(try store.expiredDeadLetterCount(filter, now: now) == 2)
        #expect(try store.transaction { try store.requeueDeadLetters(filter, now: now, limit: 100) } == 1)
        #expect(try admin.row("fresh") == "queued - 0 \(now)")
        #expect(try admin.underTest.strings(
            "SELECT coalesce(lease_owner, '-') || ' ' || coalesce(lease_expires_at, -1) || ' ' || updated_at "
                + "FROM deliveries WHERE token = 'fresh'") == ["- -1 \(now)"])
        #expect(try admin.row("prompt") == "dead MismatchSenderId 3 \(t0)", "TTL 0 is now or never: not revived")
        #expect(try admin.row("stale") == "dead MismatchSenderId 3 \(t0)", "its TTL ran out: it would expire again")
        #expect(try admin.row("ok")?.hasPrefix("delivered") == true)
        #expect(try store.transaction { try store.requeueDeadLetters(filter, now: now, limit: 100) } == 0)
        #expect(try store.deadLetterCount() == 2)
    }

    @Test(arguments: Engine.available) func requeueGoesInBoundedBatchesAndHonoursTheFilter(_ engine: Engine) throws {
        let admin = try Admin(engine)
        try admin.enqueue(["a1", "a2", "a3", "b1"], at: t0)
        for token in ["a1", "a2", "a3"] { try admin.finish(token, "dead", reason: "InvalidRegistration", at: t0 + 1) }
        try admin.finish("b1", "dead", reason: "MaxAttempts", at: t0 + 1)
        let store = admin.store
        let filter = DeadLetterFilter(reason: "InvalidRegistration")
        #expect(try store.transaction { try store.requeueDeadLetters(filter, now: t0 + 2, limit: 2) } == 2)
        #expect(try store.transaction { try store.requeueDeadLetters(filter, now: t0 + 2, limit: 2) } == 1)
        #expect(try store.transaction { try store.requeueDeadLetters(filter, now: t0 + 2, limit: 2) } == 0)
        #expect(try admin.row("b1") == "dead MaxAttempts 3 \(t0)")
        #expect(try admin.count("SELECT count(*) FROM deliveries WHERE state = 'queued'") == 3)
    }

    @Test(arguments: Engine.available) func purgeDeletesDeadLettersAndOnlyTheMessagesLeftEmpty(_ engine: Engine) throws {
        let admin = try Admin(engine)
        let alone = try admin.enqueue(["dead-alone"], at: t0)
        let twice = try admin.enqueue(["dead-1", "dead-2"], at: t0)
        let shared = try admin.enqueue(["dead-shared", "still-queued"], at: t0)
        let keyed = try admin.enqueue(["dead-keyed"], key: "k", at: t0 + 10 * day)
        for token in ["dead-alone", "dead-1", "dead-2", "dead-shared"] {
            try admin.finish(token, "dead", reason: "InvalidRegistration", at: t0 + 1)
        }
        try admin.finish("dead-keyed", "dead", reason: "InvalidRegistration", at: t0 + 10 * day + 1)

        let store = admin.store
        let purged = try store.transaction {
            try store.purgeDeadLetters(DeadLetterFilter(), now: t0 + 10 * day + 2, limit: 100)
        }
        #expect(purged.deliveries == 5)
        #expect(purged.messages == 2, "a message is counted once, however many of its dead letters went")
        #expect(try !admin.messageExists(alone))
        #expect(try !admin.messageExists(twice))
        #expect(try admin.messageExists(shared), "its other delivery is still queued")
        #expect(try admin.messageExists(keyed), "its idempotency key still answers for 24 h")
        #expect(try store.deadLetterCount() == 0)
        #expect(try admin.row("still-queued")?.hasPrefix("queued") == true)
        #expect(try store.transaction {
            try store.purgeDeadLetters(DeadLetterFilter(), now: t0 + 10 * day + 2, limit: 100)
        } == (0, 0))
    }

    /// A collapse head stays while its row does (the claim reads the row's state); deleting a dead or dropped row
    /// deletes its head, deleting a delivered one (a head that reached the device) does not.
    @Test(arguments: Engine.available) func headsGoWithTheirDeadOrDroppedRowsOnly(_ engine: Engine) throws {
        let admin = try Admin(engine)
        for (token, key) in [("h-dead", "k1"), ("h-dropped", "k2"), ("h-delivered", "k3")] {
            try admin.enqueue([token], collapseKey: key, at: t0)
        }
        try admin.finish("h-dead", "dead", reason: "InvalidRegistration", at: t0 + 1)
        try admin.finish("h-dropped", "dropped", reason: "NotRegistered", at: t0 + 1)
        try admin.finish("h-delivered", "delivered", at: t0 + 1)
        #expect(try admin.count("SELECT count(*) FROM collapse_heads") == 3)

        let store = admin.store
        #expect(try store.transaction { try store.pruneFinishedDeliveries(updatedBefore: t0 + 2, limit: 100) } == 2)
        #expect(try store.transaction {
            try store.purgeDeadLetters(DeadLetterFilter(), now: t0 + 2, limit: 100)
        }.deliveries == 1)
        #expect(try admin.count("SELECT count(*) FROM deliveries") == 0)
        #expect(try admin.underTest.strings("SELECT token FROM collapse_heads") == ["h-delivered"])
    }

    @Test(arguments: Engine.available) func purgeGoesInBoundedBatchesAndHonoursTheFilter(_ engine: Engine) throws {
        let admin = try Admin(engine)
        try admin.enqueue(["a", "b", "c", "d"], at: t0)
        try admin.finish("a", "dead", reason: "InvalidRegistration", at: t0 + 1)
        for token in ["b", "c", "d"] { try admin.finish(token, "dead", reason: "MaxAttempts", at: t0 + 1) }
        let store = admin.store
        let filter = DeadLetterFilter(reason: "MaxAttempts")
        #expect(try store.transaction { try store.purgeDeadLetters(filter, now: t0 + 2, limit: 2) } == (2, 0))
        #expect(try store.transaction { try store.purgeDeadLetters(filter, now: t0 + 2, limit: 2) } == (1, 0))
        #expect(try store.transaction { try store.purgeDeadLetters(filter, now: t0 + 2, limit: 2) } == (0, 0))
        #expect(try admin.row("a") == "dead InvalidRegistration 3 \(t0)")
        #expect(try store.deadLetterCount() == 1)
    }

    // MARK: - Retention

    @Test(arguments: Engine.available)
    func pruneDeletesOldDeliveredAndDroppedButNeverDeadLettersOrTheirMessages(_ engine: Engine) throws {
        let admin = try Admin(engine)
        let now = t0 + 30 * day
        let cutoff = now - 7 * day
        let old = try admin.enqueue(["old-ok", "old-gone"], at: t0)
        let withDead = try admin.enqueue(["old-ok-2", "old-dead"], at: t0)
        let recent = try admin.enqueue(["new-ok"], at: t0)
        let pending = try admin.enqueue(["old-queued", "old-ok-3"], at: t0)
        try admin.finish("old-ok", "delivered", at: t0 + 1)
        try admin.finish("old-gone", "dropped", reason: "NotRegistered", at: t0 + 1)
        try admin.finish("old-ok-2", "delivered", at: t0 + 1)
        try admin.finish("old-dead", "dead", reason: "InvalidRegistration", at: t0 + 1)
        try admin.finish("new-ok", "delivered", at: now - day)
        try admin.finish("old-ok-3", "delivered", at: t0 + 1)

        let store = admin.store
        #expect(try store.finishedDeliveryCount(updatedBefore: cutoff) == 4)
        #expect(try store.transaction { try store.pruneFinishedDeliveries(updatedBefore: cutoff, limit: 3) } == 3)
        #expect(try store.transaction { try store.pruneFinishedDeliveries(updatedBefore: cutoff, limit: 3) } == 1)
        #expect(try store.transaction { try store.pruneFinishedDeliveries(updatedBefore: cutoff, limit: 3) } == 0)
        #expect(try store.finishedDeliveryCount(updatedBefore: cutoff) == 0)
        let pruned = try store.transaction {
            try store.pruneEmptyMessages(createdBefore: cutoff, now: now, after: "", limit: 100)
        }
        #expect(pruned.deleted == 1)
        #expect(pruned.next == nil)

        #expect(try !admin.messageExists(old))
        #expect(try admin.messageExists(withDead), "a dead letter keeps its message")
        #expect(try admin.row("old-dead") == "dead InvalidRegistration 3 \(t0)")
        #expect(try admin.messageExists(recent))
        #expect(try admin.row("new-ok")?.hasPrefix("delivered") == true)
        #expect(try admin.messageExists(pending))
        #expect(try admin.row("old-queued")?.hasPrefix("queued") == true)
        #expect(try store.deadLetterCount() == 1)
    }

    @Test(arguments: Engine.available)
    func pruneSweepsMessagesThatNeverHadDeliveriesPageByPage(_ engine: Engine) throws {
        let admin = try Admin(engine)
        let now = t0 + 30 * day
        let cutoff = now - 7 * day
        let empty = try (0..<5).map { _ in
            try admin.underTest.insert(
                NewMessage(app: "default", payload: "{}", target: .users(["nobody"])), now: t0).id
        }
        let keyed = try admin.underTest.insert(
            NewMessage(app: "default", idempotencyKey: "k", payload: "{}", target: .users(["nobody"])), now: t0).id
        let young = try admin.enqueue(["later"], at: now)
        try admin.finish("later", "delivered", at: now)

        let store = admin.store
        var cursor: String? = ""
        var deleted: [Int] = []
        var cursors: [String] = []
        while let after = cursor {
            // Half a day after t0: the keyed message is still inside its idempotency window.
            let page = try store.transaction {
                try store.pruneEmptyMessages(createdBefore: cutoff, now: t0 + day / 2, after: after, limit: 2)
            }
            deleted.append(page.deleted)
            cursor = page.next
            if let next = page.next { cursors.append(next) }
        }
        #expect(deleted == [2, 2, 1, 0], "pages of 2 over 7 messages, stopping at the first created after the cutoff")
        #expect(cursors == [empty[1], empty[3], keyed], "each page continues after the last id it looked at")
        #expect(try empty.allSatisfy { try !admin.messageExists($0) })
        #expect(try admin.messageExists(keyed), "its idempotency key still answers")
        #expect(try admin.messageExists(young))
        #expect(try store.pruneEmptyMessages(createdBefore: cutoff, now: now, after: young, limit: 2) == (0, nil))
    }

    @Test(arguments: Engine.available) func pruneTokenEventsTrimsTheOldestEntriesInBatches(_ engine: Engine) throws {
        let admin = try Admin(engine)
        // In id order: two old entries, a recent one, then an old one recorded late.
        for (token, at) in [("o1", t0), ("o2", t0 + 1), ("new", t0 + 10 * day), ("late", t0 + 3)] {
            _ = try admin.underTest.strings(
                "INSERT INTO token_events (at, app, token, kind) VALUES ($1, 'default', $2, 'deleted') RETURNING id",
                [.integer(at), .text(token)])
        }
        let store = admin.store
        let cutoff = t0 + 5 * day
        #expect(try store.transaction { try store.pruneTokenEvents(before: cutoff, limit: 2) } == 2)
        #expect(try store.transaction { try store.pruneTokenEvents(before: cutoff, limit: 1) } == 0,
                "it looks only at the oldest entries, and the oldest left is recent")
        #expect(try store.tokenEvents(after: 0, limit: 10).map(\.token) == ["new", "late"])
        #expect(try store.transaction { try store.pruneTokenEvents(before: cutoff, limit: 10) } == 1)
        #expect(try store.tokenEvents(after: 0, limit: 10).map(\.token) == ["new"])
    }

    @Test(arguments: Engine.available)
    func pruneReconciliationStateDeletesTombstonesAndCollapseHeadsPastTheHorizon(_ engine: Engine) throws {
        let admin = try Admin(engine)
        for (token, at) in [("t-old-1", t0), ("t-old-2", t0 + 1), ("t-new", t0 + 10 * day)] {
            _ = try admin.underTest.strings(
                """
                INSERT INTO token_tombstones (app, token, kind, at) VALUES ('default', $1, 'deleted', $2)
                RETURNING token
                """, [.text(token), .integer(at)])
        }
        try admin.enqueue(["h-old-1", "h-old-2"], collapseKey: "score", at: t0)
        try admin.enqueue(["h-new"], collapseKey: "score", at: t0 + 10 * day)
        #expect(try admin.count("SELECT count(*) FROM collapse_heads") == 3)

        let store = admin.store
        let now = t0 + reconciliationHorizonMillis + day
        #expect(try store.transaction { try store.pruneReconciliationState(now: now, limit: 1) } == 2)
        #expect(try store.transaction { try store.pruneReconciliationState(now: now, limit: 1) } == 2)
        #expect(try store.transaction { try store.pruneReconciliationState(now: now, limit: 1) } == 0)
        #expect(try admin.underTest.strings("SELECT token FROM token_tombstones") == ["t-new"])
        #expect(try admin.underTest.strings("SELECT token FROM collapse_heads") == ["h-new"])
    }
}
