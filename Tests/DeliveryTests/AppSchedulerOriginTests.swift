import Classify
import Queue
import Send
import Support
import Testing
import WebPush

@testable import Delivery

/// SPEC §19's fault domain below the app, event by event: a push-service origin's answers gate or pause that origin,
/// never the app, and an origin gets at most its share of the app's requests.
@Suite struct AppSchedulerOriginTests {
    let now: Int64 = 1_700_000_000_000
    static let bad = "https://bad.example"
    static let good = "https://good.example"

    func scheduler(concurrency: Int = 10, originConcurrency: Int = 100) -> AppScheduler {
        AppScheduler(
            app: DeliveryEngine.App(
                name: "web", provider: OriginProvider(), concurrency: concurrency, originConcurrency: originConcurrency),
            options: DeliveryEngine.Options())
    }

    /// A claim of one delivery per subscription, in order, ids from `first`.
    func claim(_ subscriptions: [String], first: Int64 = 1) -> ClaimResult {
        var result = ClaimResult()
        for (offset, subscription) in subscriptions.enumerated() {
            let id = first + Int64(offset)
            result.deliveries.append(ClaimedDelivery(id: id, messageID: "m\(id)", token: subscription, attempts: 0))
            result.messages["m\(id)"] = ClaimedMessage(
                id: "m\(id)", app: "web", payload: "{}", targetKind: .tokens, ttlSeconds: 86_400, dryRun: false,
                expiresAt: now + 86_400_000)
        }
        return result
    }

    func answer(_ status: Int, retryAfter: String? = nil) -> TransportResult {
        let headers = retryAfter.map { [(name: "retry-after", value: $0)] } ?? []
        return .response(status: status, headers: headers, body: [], httpVersion: "2")
    }

    var random: some RandomNumberGenerator { SeededRandom(seed: 7) }

    /// Sends `subscriptions` (all at once) and returns the requests by delivery id.
    func sendAll(_ app: inout AppScheduler, _ subscriptions: [String], first: Int64 = 1) -> [Int64: PreparedRequest] {
        _ = app.pump(now: now)
        let sent = app.claimedAndRendered(claim(subscriptions, first: first), now: now).sentRequests
        return Dictionary(uniqueKeysWithValues: sent.map { ($0.deliveries[0].id, $0) })
    }

    // MARK: - Refusals

    @Test func aRefusalFromOneOriginNeverPausesOrGatesTheAppAndOtherOriginsKeepSending() throws {
        var app = scheduler()
        let sent = sendAll(&app, ["\(Self.bad)/1", "\(Self.good)/2"])
        var random = random
        let refused = app.answered(try #require(sent[1]), result: answer(403), now: now, using: &random)
        #expect(!app.paused && app.gateUntil == 0, "the app is neither paused nor gated")
        #expect(!refused.notes.contains { if case .pausedByFCM = $0 { true } else { false } })
        let origin = try #require(app.origins[Self.bad])
        #expect(origin.gate.until > now && !origin.paused)
        #expect(refused.written == [
            .deferred(id: 1, until: origin.gate.until, reason: .httpStatus(403), status: 403),
        ], "back to the queue uncharged, due when the origin's gate opens")
        #expect(refused.plans.first?.origin == Self.bad && refused.plans.first?.pauseReason == nil)

        // While the bad origin is gated, its claimed requests go back to the queue; the good origin's go out.
        let next = app.claimedAndRendered(claim(["\(Self.bad)/3", "\(Self.good)/4", "\(Self.good)/5"], first: 3), now: now + 10)
        #expect(next.sent == [4, 5])
        #expect(next.written == [.deferred(id: 3, until: origin.gate.until, reason: nil, status: nil)])
        let delivered = app.answered(try #require(sent[2]), result: answer(201), now: now + 20, using: &random)
        #expect(delivered.written == [.delivered(id: 2, fcmMessageID: nil, canonicalToken: nil, status: 201)])
    }

    @Test func fiveDifferentSubscriptionsRefusedInARowPauseTheOrigin() throws {
        var app = scheduler()
        let sent = sendAll(&app, (1...5).map { "\(Self.bad)/\($0)" } + ["\(Self.good)/6"])
        var random = random
        var plans: [OutcomePlan] = []
        var notes: [AppScheduler.Note] = []
        for id in Int64(1)...5 {
            let actions = app.answered(try #require(sent[id]), result: answer(401), now: now, using: &random)
            plans += actions.plans
            notes += actions.notes
        }
        #expect(app.origins[Self.bad]?.paused == true)
        #expect(notes.contains(.originPaused(origin: Self.bad, reason: "HTTP 401 for 5 subscriptions in a row")))
        #expect(plans.last?.origin == Self.bad && plans.last?.pauseReason != nil, "stored as the origin's pause")
        #expect(!app.paused && app.gateUntil == 0, "the app goes on")
        #expect(app.origins[Self.good] == nil || app.origins[Self.good]?.paused == false)

        // A paused origin's claimed requests go back to the queue for a minute; the others' go out.
        let next = app.claimedAndRendered(claim(["\(Self.bad)/7", "\(Self.good)/8"], first: 7), now: now + 5_000)
        #expect(next.sent == [8])
        #expect(next.written == [.deferred(id: 7, until: now + 65_000, reason: nil, status: nil)])

        // `herald resume` deletes the origin's row: the scheduler sees it at its next look and sends again.
        let resumed = app.observed(
            AppState(name: "web", paused: false, pauseReason: nil, gateUntil: 0), origins: [], nextDueAt: nil,
            now: now + 6_000)
        #expect(resumed.notes == [.originResumed(origin: Self.bad)])
        let again = app.claimedAndRendered(claim(["\(Self.bad)/9"], first: 9), now: now + 6_000)
        #expect(again.sent == [9])
    }

    @Test func fourRefusalsAndASuccessDoNotPauseTheOrigin() throws {
        var app = scheduler()
        let subscriptions = (1...4).map { "\(Self.bad)/\($0)" } + ["\(Self.bad)/ok"] + ["\(Self.bad)/6"]
        let sent = sendAll(&app, subscriptions)
        var random = random
        for id in Int64(1)...4 {
            _ = app.answered(try #require(sent[id]), result: answer(403), now: now, using: &random)
        }
        _ = app.answered(try #require(sent[5]), result: answer(201), now: now, using: &random)
        _ = app.answered(try #require(sent[6]), result: answer(403), now: now, using: &random)
        #expect(app.origins[Self.bad]?.paused == false)
        #expect(app.origins[Self.bad]?.refused == ["\(Self.bad)/6"], "the success started a new run")
    }

    @Test func oneSubscriptionRefusedAgainAndAgainCountsOnce() throws {
        var app = scheduler()
        var random = random
        for round in Int64(0)..<6 {
            let at = now + round * 120_000
            _ = app.pump(now: at)
            let sent = app.claimedAndRendered(claim(["\(Self.bad)/same"], first: round + 1), now: at).sentRequests
            _ = app.answered(try #require(sent.first), result: answer(403), now: at, using: &random)
        }
        #expect(app.origins[Self.bad]?.paused == false)
        #expect(app.origins[Self.bad]?.refused.count == 1)
    }

    /// One subscription refused again after its origin accepted others (made with an old VAPID key, say): its
    /// retries are charged and close no gate, so it ends by its attempts rather than holding the origin shut.
    @Test func aSubscriptionRefusedAgainAfterTheOriginAcceptedOthersIsRetriedChargedWithoutAGate() throws {
        var app = scheduler()
        var random = random
        let first = sendAll(&app, ["\(Self.bad)/stale", "\(Self.bad)/fresh"])
        _ = app.answered(try #require(first[1]), result: answer(403), now: now, using: &random)
        let gated = try #require(app.origins[Self.bad]).gate.until
        #expect(gated > now, "a first refusal gates the origin")
        _ = app.answered(try #require(first[2]), result: answer(201), now: now + 10, using: &random)

        let at = gated + 1
        _ = app.pump(now: at)
        let retried = app.claimedAndRendered(claim(["\(Self.bad)/stale"], first: 1), now: at).sentRequests
        let again = app.answered(try #require(retried.first), result: answer(403), now: at, using: &random)
        guard case .retry(1, _, .httpStatus(403), 403)? = again.written.first else {
            Issue.record("a charged retry, not a deferral: \(again.written)")
            return
        }
        #expect(app.origins[Self.bad]?.gate.until == gated, "no new gate for the origin")
        #expect(app.origins[Self.bad]?.paused == false)
    }

    /// One busy origin (a push service's one host) at its share: what is claimed beyond it waits behind it, counted
    /// in the app's window (so no more is claimed to be deferred again), and goes back to the queue only when it has
    /// waited `parkMillis`.
    @Test func requestsOverABusyOriginsShareWaitInTheWindowAndGoBackOnlyAfterASecond() throws {
        var app = scheduler(concurrency: 1_000, originConcurrency: 10)
        #expect(app.pump(now: now).claims == [1_000])
        // More than a window's worth (2 × concurrency) came in one claim, as a large claim limit allows.
        let over = app.claimedAndRendered(claim((1...1_500).map { "\(Self.good)/\($0)" }), now: now)
        #expect(over.sent.count == 10, "the origin's share")
        #expect(over.written.isEmpty, "nothing deferred while the origin answers")
        #expect(over.claims.isEmpty, "the window is full of requests waiting for the origin")
        var random = random
        let answered = app.answered(
            try #require(over.sentRequests.first), result: answer(201), now: now + 30, using: &random)
        #expect(answered.sent == [11], "a freed place goes to the request that waited longest")
        let aged = app.timerFired(at: now + 1_000, now: now + 1_000)
        #expect(aged.written.count == 1_489, "after a second of waiting they go back to the queue, uncharged")
        #expect(aged.claims == [1_000], "and the window is free again")
    }

    // MARK: - Gates

    @Test func aDayLongRetryAfterGatesTheOriginAnHourAtMost() throws {
        var app = scheduler()
        let sent = sendAll(&app, ["\(Self.bad)/1", "\(Self.good)/2"])
        var random = random
        let actions = app.answered(
            try #require(sent[1]), result: answer(429, retryAfter: "86400"), now: now, using: &random)
        #expect(actions.notes == [
            .originGateClosed(origin: Self.bad, until: now + 3_600_000, status: 429, reason: .retryAfter),
        ])
        #expect(app.origins[Self.bad]?.gate.until == now + 3_600_000)
        #expect(app.gateUntil == 0, "the app's gate stays open")
        guard case .retry(1, let at, _, _)? = actions.written.first else {
            Issue.record("a retry was expected: \(actions.written)")
            return
        }
        #expect(at >= now + 3_600_000 && at <= now + 3_700_000)
        #expect(actions.plans.first?.gateUntil == now + 3_600_000 && actions.plans.first?.origin == Self.bad)
    }

    @Test func aTimeoutGatesItsOriginOnceForTheFaultAndTheAppSendsOn() throws {
        var app = scheduler()
        let sent = sendAll(&app, ["\(Self.bad)/1", "\(Self.bad)/2", "\(Self.good)/3"])
        var random = random
        let first = app.answered(try #require(sent[1]), result: .failure(.timeout), now: now + 100, using: &random)
        _ = app.answered(try #require(sent[2]), result: .failure(.timeout), now: now + 100, using: &random)
        #expect(first.notes == [.originGateClosed(origin: Self.bad, until: now + 1_100, status: nil, reason: .timeout)])
        #expect(app.origins[Self.bad]?.gate.faults == 1, "two requests sent together fail as one fault")
        #expect(app.gateUntil == 0)
        #expect(app.claimedAndRendered(claim(["\(Self.good)/4"], first: 4), now: now + 200).sent == [4])
    }

    // MARK: - A share per origin

    @Test func anOriginGetsItsShareAndOtherOriginsProceed() throws {
        var app = scheduler(concurrency: 10, originConcurrency: 2)
        _ = app.pump(now: now)
        let slow = (1...5).map { "\(Self.bad)/\($0)" }
        let actions = app.claimedAndRendered(claim(slow + ["\(Self.good)/6"]), now: now)
        #expect(actions.sent == [1, 2, 6], "two to the slow origin, and the other origin's go out")
        #expect(app.origins[Self.bad]?.waiting.count == 3, "the rest waits for the origin")
        #expect(actions.written.isEmpty)
        #expect(app.pendingCount == 0)
        var random = random
        let answered = app.answered(
            try #require(actions.sentRequests.first), result: answer(201), now: now + 50, using: &random)
        #expect(answered.sent == [3], "a freed place of the origin goes to the request that waited for it")
        #expect(app.inFlight == 3)
        let more = app.claimedAndRendered(claim(["\(Self.bad)/8", "\(Self.good)/9"], first: 8), now: now + 60)
        #expect(more.sent == [9], "the other origin is not held up by the slow one")
        #expect(app.origins[Self.bad]?.waiting.count == 3)
        let aged = app.timerFired(at: now + 1_000, now: now + 1_000)
        #expect(aged.written.map(\.id) == [4, 5], "what waited a second behind the slow origin goes back to the queue")
    }

    @Test func anOriginGatedWhileRequestsWaitForItsShareDefersThem() throws {
        var app = scheduler(concurrency: 10, originConcurrency: 1)
        _ = app.pump(now: now)
        let actions = app.claimedAndRendered(claim(["\(Self.bad)/1", "\(Self.bad)/2"]), now: now)
        #expect(actions.sent == [1])
        var random = random
        let failed = app.answered(try #require(actions.sentRequests.first), result: answer(503), now: now + 10,
                                  using: &random)
        #expect(failed.written.contains(.deferred(id: 2, until: now + 1_010, reason: nil, status: nil)))
        #expect(app.origins[Self.bad]?.waiting.isEmpty == true)
    }

    @Test func stopReleasesTheRequestsWaitingForTheirOrigin() {
        var app = scheduler(concurrency: 10, originConcurrency: 1)
        _ = app.pump(now: now)
        _ = app.claimedAndRendered(claim(["\(Self.bad)/1", "\(Self.bad)/2"]), now: now)
        #expect(app.stop() == [.release(id: 2)])
    }
}

/// Web Push requests without the encryption: a delivery's token is its endpoint, whose origin is the request's, and
/// answers are read by the real `WebPushClassifier`.
final class OriginProvider: Provider {
    var maxTargetsPerRequest: Int { 1 }

    func requests(
        for message: ClaimedMessage, deliveries: [ClaimedDelivery], credential: String?, now: Int64
    ) -> [PreparedRequest] {
        deliveries.map { delivery in
            let origin = delivery.token.split(separator: "/", maxSplits: 3).prefix(2).joined(separator: "//")
            return PreparedRequest(
                app: message.app, message: message, deliveries: [delivery], outbound: OutboundRequest(url: delivery.token),
                kind: .tokens, format: .json, origin: origin)
        }
    }

    func classify(_ result: TransportResult, of request: PreparedRequest, now: Int64) -> Classification {
        switch result {
        case .response(let status, let headers, _, _):
            WebPushClassifier.classify(status: status, headers: headers, now: now)
        case .failure(let failure):
            Classifier.transportFailure(reason: DeliveryReason(failure), targetCount: 1)
        }
    }
}
