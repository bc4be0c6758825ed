import Classify
import FCMLegacy
import Queue
import Send
import Support
import Synchronization
import Testing

@testable import Delivery

/// The scheduling rules, event by event, without threads, a database or a network: what each event makes the
/// engine do.
@Suite struct AppSchedulerTests {
    let now: Int64 = 1_700_000_000_000
    let provider = ScriptedProvider()

    /// `credentialed`: with `provider`'s scripted credentials, which must be obtained (`prepared`) before it sends.
    func scheduler(concurrency: Int = 3, maxRate: Double? = nil, credentialed: Bool = false) -> AppScheduler {
        var options = DeliveryEngine.Options()
        options.policy = RetryPolicy()
        return AppScheduler(
            app: DeliveryEngine.App(
                name: "default", provider: credentialed ? provider : ScriptedProvider(credentialed: false),
                concurrency: concurrency, maxRate: maxRate),
            options: options)
    }

    /// A claim of `count` single-token deliveries (ids from `first`), one message each.
    func claim(_ count: Int, first: Int64 = 1, expiresAt: Int64? = nil) -> ClaimResult {
        var result = ClaimResult()
        for id in first..<(first + Int64(count)) {
            result.deliveries.append(ClaimedDelivery(id: id, messageID: "m\(id)", token: "t\(id)", attempts: 0))
            result.messages["m\(id)"] = ClaimedMessage(
                id: "m\(id)", app: "default", payload: #"{"data":{"a":"b"}}"#, targetKind: .tokens, ttlSeconds: 600,
                dryRun: false, expiresAt: expiresAt ?? now + 600_000)
        }
        return result
    }

    func answer(_ status: Int, retryAfter: String? = nil) -> TransportResult {
        let headers = retryAfter.map { [(name: "retry-after", value: $0)] } ?? []
        return .response(status: status, headers: headers, body: [], httpVersion: "2")
    }

    var random: some RandomNumberGenerator { SeededRandom(seed: 7) }

    // MARK: - Claim and send

    /// Claims are taken one at a time: for a multicast provider (HMS, FCM legacy: 1000 tokens a request) a claim of
    /// one request's worth left the window nearly empty while each claim went through the writer and back.
    @Test func aMulticastClaimTakesSeveralRequestsWorth() {
        var options = DeliveryEngine.Options()
        options.policy = RetryPolicy()
        var multicast = AppScheduler(
            app: DeliveryEngine.App(
                name: "default", provider: ScriptedProvider(credentialed: false, targetsPerRequest: 1000),
                concurrency: 64, maxRate: nil),
            options: options)
        #expect(multicast.pump(now: now).claims == [AppScheduler.requestsPerClaim * 1000])
        #expect(AppScheduler.requestsPerClaim * 1000 > options.claimLimit)
        var single = scheduler(concurrency: 64)
        #expect(single.pump(now: now).claims == [128], "one token a request: two windows, as before")
        var small = AppScheduler(
            app: DeliveryEngine.App(
                name: "default", provider: ScriptedProvider(credentialed: false, targetsPerRequest: 1000),
                concurrency: 1, maxRate: nil),
            options: options)
        #expect(small.pump(now: now).claims == [2000], "never more than two windows of requests")
    }

    @Test func aClaimAsksForTwoWindowsAndSendsOneWindow() {
        var app = scheduler(concurrency: 3)
        #expect(app.pump(now: now).claims == [6], "two concurrencies' worth of requests waiting")
        let actions = app.claimedAndRendered(claim(6), now: now)
        #expect(actions.sent == [1, 2, 3], "one window in flight, oldest first")
        #expect(actions.claims.isEmpty, "a window still waits")
        #expect(app.inFlight == 3 && app.pendingCount == 3)
        var random = random
        let answered = app.answered(actions.sentRequests[0], result: answer(200), now: now, using: &random)
        #expect(answered.sent == [4])
        #expect(answered.claims == [4], "less than a window waits: the claim fills up to two windows")
    }

    @Test func anAnswerFreesASlotWritesItsOutcomeAndOneClaimRunsAtATime() {
        var app = scheduler(concurrency: 2)
        _ = app.pump(now: now)
        let sent = app.claimedAndRendered(claim(4), now: now).sentRequests
        var random = random
        let first = app.answered(sent[0], result: answer(200), now: now, using: &random)
        #expect(first.written == [.delivered(id: 1, fcmMessageID: "sent-1", canonicalToken: nil, status: 200)])
        #expect(first.sent == [3])
        #expect(first.claims == [3], "one waits, less than a window: up to two windows")
        let second = app.answered(sent[1], result: answer(200), now: now, using: &random)
        #expect(second.sent == [4])
        #expect(second.claims.isEmpty, "the claim asked for has not come back")
        #expect(app.claimedAndRendered(claim(3, first: 5), now: now).claims.isEmpty, "three wait: more than a window")
    }

    @Test func aShortClaimWaitsForNewRowsInsteadOfAskingAgain() {
        var app = scheduler(concurrency: 5)
        _ = app.pump(now: now)
        let sent = app.claimedAndRendered(claim(2), now: now).sentRequests
        var random = random
        #expect(app.answered(sent[0], result: answer(200), now: now, using: &random).claims.isEmpty)
        #expect(app.rowsCommitted(now: now).claims == [10], "committed rows make it claim again")
    }

    @Test func aRequestWhoseTTLRanOutWhileWaitingIsExpiredNotSent() {
        var app = scheduler(concurrency: 1)
        _ = app.pump(now: now)
        var claimed = claim(1)
        let short = claim(1, first: 2, expiresAt: now + 10)
        claimed.deliveries += short.deliveries
        claimed.messages.merge(short.messages) { $1 }
        let sent = app.claimedAndRendered(claimed, now: now).sentRequests
        #expect(sent.flatMap { $0.deliveries.map(\.id) } == [1])
        var random = random
        let later = app.answered(sent[0], result: answer(200), now: now + 20, using: &random)
        #expect(later.sent.isEmpty, "delivery 2 expired while it waited")
        #expect(later.written.contains(.expired(id: 2)))
    }

    @Test func aRateLimitSendsItsBurstAndWakesForTheNextToken() {
        var app = scheduler(concurrency: 100, maxRate: 20)  // a burst of one
        _ = app.pump(now: now)
        let actions = app.claimedAndRendered(claim(5), now: now)
        #expect(actions.sent == [1])
        #expect(actions.wakes == [now + 50])
        #expect(app.timerFired(at: now + 50, now: now + 50).sent == [2])
    }

    @Test func aStaleWakeUpDoesNothing() {
        var app = scheduler(concurrency: 100, maxRate: 20)
        _ = app.pump(now: now)
        _ = app.claimedAndRendered(claim(5), now: now)  // asks for now + 50
        #expect(app.timerFired(at: now + 999, now: now + 999).isEmpty, "not the wake-up it asked for")
    }

    // MARK: - Rendering (the render stage's, answered by `rendered`)

    /// What the engine's render stage makes of the claim that `actions` asked to render.
    func rendering(of actions: [AppScheduler.Action], by app: AppScheduler) -> Rendering {
        RenderStage.render(actions.renders[0], with: app.app.provider, now: now, cores: 1)
    }

    @Test func aClaimIsUnderWayUntilItsRenderComesBackAndItsRequestsAreSentThen() {
        var app = scheduler(concurrency: 3)
        _ = app.pump(now: now)
        let claimed = app.claimed(claim(6), now: now)
        #expect(claimed.renders.map { $0.flatMap { $0.deliveries.map(\.id) } } == [[1, 2, 3, 4, 5, 6]])
        #expect(claimed.sent.isEmpty, "nothing is made on the scheduler")
        #expect(app.rowsCommitted(now: now).claims.isEmpty, "no second claim while the first renders")
        let rendered = app.rendered(rendering(of: claimed, by: app), now: now)
        #expect(rendered.sent == [1, 2, 3], "one window in flight, in the claim's order")
        #expect(app.pendingCount == 3)
    }

    @Test func aRenderThatComesBackAfterAPauseGoesBackToTheQueueUnsent() {
        var app = scheduler(concurrency: 3)
        _ = app.pump(now: now)
        let claimed = app.claimed(claim(3), now: now)
        let paused = AppState(name: "default", paused: true, pauseReason: "operator", gateUntil: 0)
        _ = app.observed(paused, nextDueAt: nil, now: now)
        let rendered = app.rendered(rendering(of: claimed, by: app), now: now)
        #expect(rendered.sent.isEmpty)
        #expect(rendered.written == [.release(id: 1), .release(id: 2), .release(id: 3)], "uncharged, not on leases")
        let resumed = AppState(name: "default", paused: false, pauseReason: nil, gateUntil: 0)
        #expect(app.observed(resumed, nextDueAt: now, now: now).claims == [6], "claimed again once resumed")
    }

    @Test func aRenderThatComesBackBehindAClosedGateGoesBackToTheQueueUnsent() {
        var app = scheduler(concurrency: 2)
        _ = app.pump(now: now)
        let sent = app.claimedAndRendered(claim(4), now: now).sentRequests
        var random = random
        #expect(app.answered(sent[0], result: answer(200), now: now, using: &random).claims == [3])
        let claimed = app.claimed(claim(3, first: 5), now: now)
        let gated = app.answered(sent[1], result: answer(503, retryAfter: "30"), now: now, using: &random)
        #expect(gated.written.contains(.release(id: 4)), "what waited goes back")
        let rendered = app.rendered(rendering(of: claimed, by: app), now: now)
        #expect(rendered.sent.isEmpty)
        #expect(rendered.written == [.release(id: 5), .release(id: 6), .release(id: 7)])
    }

    @Test func aMessageTheRenderRefusedIsADeadLetterAndTheOthersAreSent() throws {
        var app = scheduler(concurrency: 3)
        _ = app.pump(now: now)
        let claimed = app.claimed(claim(3), now: now)
        guard case .requests(let requests, _) = rendering(of: claimed, by: app) else {
            Issue.record("the claim was not rendered")
            return
        }
        let refused = PreparedRequest(
            app: "default", message: requests[1].message, deliveries: requests[1].deliveries,
            outbound: OutboundRequest(url: ""), kind: .tokens, format: .json, refusal: .messageTooBig)
        let actions = app.rendered(.requests([requests[0], refused, requests[2]], renewalDue: false), now: now)
        #expect(actions.sent == [1, 3])
        #expect(actions.written == [.deadMessage(id: 2, reason: .messageTooBig, status: nil)], "never sent")
    }

    @Test func aRenderWithoutACredentialReleasesTheClaimAndObtainsOne() {
        var app = scheduler(concurrency: 3, credentialed: true)
        _ = app.prepared(.ready, now: now)
        let claimed = app.claimed(claim(2), now: now)
        provider.scripted.state.withLock { $0.current = nil }  // ran out, its renewal failing
        let rendered = app.rendered(rendering(of: claimed, by: app), now: now)
        #expect(rendered.written == [.release(id: 1), .release(id: 2)], "back to the queue, uncharged")
        #expect(rendered.prepares == 1 && rendered.sent.isEmpty)
        #expect(app.pump(now: now).isEmpty, "nothing claimed or sent before it is obtained")
        provider.scripted.state.withLock { $0.current = "token-2" }
        #expect(app.prepared(.ready, now: now).claims == [6])
    }

    // MARK: - Gates and pauses

    @Test func aServerErrorClosesTheGateReleasesWhatWaitsAndHoldsSendsUntilItOpens() {
        var app = scheduler(concurrency: 1)
        _ = app.pump(now: now)
        let sent = app.claimedAndRendered(claim(3), now: now).sentRequests
        var random = random
        let actions = app.answered(sent[0], result: answer(503, retryAfter: "30"), now: now, using: &random)
        #expect(actions.notes == [.gateClosed(until: now + 30_000, status: 503, reason: .retryAfter)])
        #expect(actions.written.contains { if case .retry(id: 1, _, _, _) = $0 { true } else { false } })
        #expect(actions.written.contains(.release(id: 2)) && actions.written.contains(.release(id: 3)),
                "claimed rows must not wait on their leases through the gate")
        #expect(actions.sent.isEmpty && actions.claims.isEmpty)
        #expect(app.pump(now: now + 10_000).sent.isEmpty, "the gate is still closed")
        #expect(app.timerFired(at: now + 30_000, now: now + 30_000).claims == [2], "claims again once it opens")
    }

    @Test func quotaGatesWithoutRetryAfterStartAtAMinuteAndDouble() {
        var app = scheduler(concurrency: 1)
        var random = random
        var at = now
        var gates: [Int64] = []
        for _ in 0..<3 {
            _ = app.pump(now: at)
            let sent = app.claimedAndRendered(claim(1, first: at), now: at).sentRequests
            let actions = app.answered(sent[0], result: answer(429), now: at, using: &random)
            for case .gateClosed(let until, _, _) in actions.notes { gates.append(until - at) }
            at = app.gateUntil
        }
        #expect(gates == [60_000, 120_000, 240_000])
        _ = app.pump(now: at)
        let sent = app.claimedAndRendered(claim(1, first: at), now: at).sentRequests
        _ = app.answered(sent[0], result: answer(200), now: at, using: &random)
        _ = app.pump(now: at)
        let again = app.claimedAndRendered(claim(1, first: at + 1), now: at).sentRequests
        let actions = app.answered(again[0], result: answer(429), now: at, using: &random)
        #expect(actions.notes == [.gateClosed(until: at + 60_000, status: 429, reason: .quota)],
                "a success starts the backoff over")
    }

    // MARK: - One fault, one step (SPEC §11)

    @Test func aResetFailingAThousandRequestsInFlightClosesTheGateOnceForTheBase() {
        var app = scheduler(concurrency: 1_000)
        let sent = app.claimedAndRendered(claim(1_000), now: now).sentRequests
        #expect(sent.count == 1_000)
        var random = random
        var notes: [AppScheduler.Note] = []
        for request in sent {
            notes += app.answered(request, result: .failure(.reset), now: now + 2, using: &random).notes
        }
        #expect(notes == [.gateClosed(until: now + 2 + 1_000, status: nil, reason: .reset)], "closed once")
        #expect(app.gateUntil == now + 2 + 1_000, "for the base backoff, not a minute")
    }

    @Test func aBurstOfTimeoutsToRequestsSentTogetherIsOneFault() {
        var app = scheduler(concurrency: 25)
        let sent = app.claimedAndRendered(claim(25), now: now).sentRequests
        #expect(sent.count == 25)
        var random = random
        var notes: [AppScheduler.Note] = []
        let timedOut = now + 10_000
        for (index, request) in sent.enumerated() {
            let at = timedOut + Int64(index)
            notes += app.answered(request, result: .failure(.timeout), now: at, using: &random).notes
        }
        #expect(notes == [.gateClosed(until: timedOut + 1_000, status: nil, reason: .timeout)], "closed once")
        #expect(app.gateUntil == timedOut + 24 + 1_000, "held a base step from the last of them, never grown")
        // The next fault, of a request sent after the gate reopened, is the second step, not the 26th.
        let reopened = app.gateUntil
        let next = app.claimedAndRendered(claim(1, first: 100), now: reopened).sentRequests
        let actions = app.answered(next[0], result: .failure(.timeout), now: reopened + 5, using: &random)
        #expect(actions.notes == [.gateClosed(until: reopened + 5 + 2_000, status: nil, reason: .timeout)])
    }

    @Test func separateFaultsGrowTheGateOneStepEachAndASuccessStartsItOver() {
        var app = scheduler(concurrency: 5)
        var random = random
        var at = now
        var steps: [Int64] = []
        for fault in 0..<3 {
            // Five requests in flight together, all failed by one reset, each time after the gate reopened.
            let sent = app.claimedAndRendered(claim(5, first: Int64(fault) * 10 + 1), now: at).sentRequests
            #expect(sent.count == 5)
            for request in sent {
                let actions = app.answered(request, result: .failure(.reset), now: at + 1, using: &random)
                for case .gateClosed(let until, _, _) in actions.notes { steps.append(until - (at + 1)) }
            }
            at = app.gateUntil
        }
        #expect(steps == [1_000, 2_000, 4_000], "one step per fault, however many requests it failed")
        let delivered = app.claimedAndRendered(claim(1, first: 100), now: at).sentRequests
        _ = app.answered(delivered[0], result: answer(200), now: at + 1, using: &random)
        let next = app.claimedAndRendered(claim(1, first: 101), now: at + 1).sentRequests
        let actions = app.answered(next[0], result: .failure(.reset), now: at + 2, using: &random)
        #expect(actions.notes == [.gateClosed(until: at + 2 + 1_000, status: nil, reason: .reset)],
                "a success starts the backoff over")
    }

    @Test func aRequestSentBeforeTheGateClosedFailsWithThatFaultEvenAfterItReopens() {
        var app = scheduler(concurrency: 2)
        var random = random
        let early = app.claimedAndRendered(claim(2), now: now).sentRequests
        _ = app.answered(early[0], result: .failure(.reset), now: now + 1, using: &random)
        #expect(app.gateUntil == now + 1_001)
        let later = app.claimedAndRendered(claim(1, first: 10), now: now + 1_001).sentRequests
        #expect(later.count == 1, "sent once the gate reopened, beside the early request still in flight")
        let stale = app.answered(early[1], result: .failure(.timeout), now: now + 1_500, using: &random)
        #expect(stale.notes == [.gateClosed(until: now + 2_500, status: nil, reason: .timeout)],
                "the first fault's: closed again for its step, not grown")
        let own = app.answered(later[0], result: .failure(.reset), now: now + 2_600, using: &random)
        #expect(own.notes == [.gateClosed(until: now + 4_600, status: nil, reason: .reset)],
                "sent after the gate reopened: a fault of its own, the second step")
    }

    @Test func theGateNamesWhatClosedIt() {
        let cases: [(TransportResult, GateReason)] = [
            (.failure(.reset), .reset),
            (.failure(.timeout), .timeout),
            (.failure(.connect), .connect),
            (.failure(.other("SSL peer certificate or SSH remote key was not OK")), .transport),
            (answer(503), .http(503)),
            (answer(500, retryAfter: "7"), .retryAfter),
            (answer(429), .quota),
        ]
        for (result, reason) in cases {
            var app = scheduler(concurrency: 1)
            var random = random
            let sent = app.claimedAndRendered(claim(1), now: now).sentRequests
            let actions = app.answered(sent[0], result: result, now: now, using: &random)
            #expect(actions.plans.map(\.gateReason) == [reason], "\(result)")
            let noted = actions.notes.map { note -> GateReason? in
                if case .gateClosed(_, _, let reason) = note { reason } else { nil }
            }
            #expect(noted == [reason], "\(result)")
        }
    }

    @Test func aRefusedSenderPausesTheAppAndNothingMoreIsClaimed() {
        var app = scheduler(concurrency: 1)
        _ = app.pump(now: now)
        let sent = app.claimedAndRendered(claim(2), now: now).sentRequests
        var random = random
        let actions = app.answered(sent[0], result: answer(401), now: now, using: &random)
        #expect(actions.notes == [.pausedByFCM(reason: "Unauthorized")])
        #expect(actions.plans.contains { $0.pauseReason == "Unauthorized" }, "the pause is written")
        #expect(actions.written.contains(.release(id: 1)) && actions.written.contains(.release(id: 2)),
                "nothing is charged for the sender's credentials")
        #expect(app.rowsCommitted(now: now).isEmpty)
    }

    @Test func aPauseAndResumeFromOutsideAreFollowed() {
        var app = scheduler()
        let paused = AppState(name: "default", paused: true, pauseReason: "operator", gateUntil: 0)
        #expect(app.observed(paused, nextDueAt: nil, now: now).notes == [.pausedOutside(reason: "operator")])
        #expect(app.rowsCommitted(now: now).isEmpty)
        let resumed = AppState(name: "default", paused: false, pauseReason: nil, gateUntil: 0)
        let actions = app.observed(resumed, nextDueAt: now, now: now)
        #expect(actions.notes == [.resumed])
        #expect(actions.claims == [6])
    }

    // MARK: - Preparation (v1 access tokens)

    @Test func nothingIsClaimedBeforeTheProviderIsReady() {
        provider.scripted.state.withLock { $0.current = nil }
        var app = scheduler(credentialed: true)
        let actions = app.pump(now: now)
        #expect(actions.prepares == 1 && actions.claims.isEmpty)
        #expect(app.pump(now: now).isEmpty, "one preparation at a time")
        provider.scripted.state.withLock { $0.current = "token-1" }
        #expect(app.prepared(.ready, now: now).claims == [6])
    }

    @Test func aProviderThatCannotGetReadyIsAskedAgainLater() {
        provider.scripted.state.withLock { $0.current = nil }
        var app = scheduler(credentialed: true)
        _ = app.pump(now: now)
        #expect(app.prepared(.retry(at: now + 5_000), now: now).wakes == [now + 5_000])
        #expect(app.timerFired(at: now + 5_000, now: now + 5_000).prepares == 1)
    }

    @Test func refusedCredentialsPauseTheApp() {
        provider.scripted.state.withLock { $0.current = nil }
        var app = scheduler(credentialed: true)
        _ = app.pump(now: now)
        let actions = app.prepared(.pause(reason: "invalid_grant"), now: now)
        #expect(actions.notes == [.pausedForCredentials(reason: "invalid_grant")])
        #expect(actions.plans.contains { $0.pauseReason == "invalid_grant" })
        #expect(app.paused)
    }

    // MARK: - Credentials: renewed in their last minutes, judged when refused

    @Test func aClaimInTheCredentialsLastMinutesAsksForARenewalAndSendsMeanwhile() {
        var app = scheduler(concurrency: 2, credentialed: true)
        _ = app.prepared(.ready, now: now)
        #expect(app.claimedAndRendered(claim(2), now: now).renewals == 0)
        provider.scripted.state.withLock { $0.renewalDue = true }
        _ = app.rowsCommitted(now: now)
        #expect(app.claimedAndRendered(claim(0), now: now).renewals == 0, "an empty claim sends nothing: no reason to renew")
        _ = app.rowsCommitted(now: now)
        let actions = app.claimedAndRendered(claim(2, first: 3), now: now)
        #expect(actions.renewals == 1)
        #expect(actions.prepares == 0, "the current credential is still good")
    }

    @Test func aRefusedCredentialIsJudgedBeforeTheAnswerIsPlanned() {
        var app = scheduler(concurrency: 2, credentialed: true)
        _ = app.prepared(.ready, now: now)
        let sent = app.claimedAndRendered(claim(2), now: now).sentRequests
        var random = random
        let refused = app.answered(sent[0], result: answer(498), now: now, using: &random)
        #expect(refused.refused == [1] && refused.count == 1, "nothing is written before the credentials judge")
        #expect(app.inFlight == 1)
        provider.scripted.state.withLock { $0.current = nil }  // dropped by the credentials
        let renewing = app.refusalJudged(.renew, request: sent[0], result: answer(498), now: now, using: &random)
        #expect(renewing.notes == [.renewingRefusedCredential])
        #expect(renewing.written == [.release(id: 1)], "back to the queue, not charged")
        #expect(renewing.prepares == 1, "a new credential is obtained before anything more is sent")
        #expect(!app.paused)
    }

    @Test func anOlderCredentialRefusedOnlyRequeues() {
        var app = scheduler(concurrency: 2, credentialed: true)
        _ = app.prepared(.ready, now: now)
        let sent = app.claimedAndRendered(claim(2), now: now).sentRequests
        var random = random
        _ = app.answered(sent[1], result: answer(498), now: now, using: &random)
        let stale = app.refusalJudged(.stale, request: sent[1], result: answer(498), now: now, using: &random)
        #expect(stale.notes.isEmpty && stale.written == [.release(id: 2)])
    }

    @Test func aRenewedCredentialRefusedTooPausesTheApp() {
        var app = scheduler(concurrency: 2, credentialed: true)
        _ = app.prepared(.ready, now: now)
        let sent = app.claimedAndRendered(claim(2), now: now).sentRequests
        var random = random
        _ = app.answered(sent[0], result: answer(498), now: now, using: &random)
        let paused = app.refusalJudged(.pause, request: sent[0], result: answer(498), now: now, using: &random)
        #expect(paused.notes == [.pausedByFCM(reason: "UNAUTHENTICATED")])
        #expect(paused.plans.contains { $0.pauseReason == "UNAUTHENTICATED" })
        #expect(app.paused)
    }

    @Test func answersAreReportedToTheCredentialsUntilARenewedOneIsProven() {
        var app = scheduler(concurrency: 3, credentialed: true)
        _ = app.prepared(.ready, now: now)
        let sent = app.claimedAndRendered(claim(3), now: now).sentRequests
        var random = random
        #expect(app.answered(sent[0], result: answer(200), now: now, using: &random).accepted.isEmpty)
        _ = app.answered(sent[1], result: answer(498), now: now, using: &random)
        _ = app.refusalJudged(.renew, request: sent[1], result: answer(498), now: now, using: &random)
        _ = app.prepared(.ready, now: now)
        let next = app.claimedAndRendered(claim(2, first: 4), now: now).sentRequests
        #expect(app.answered(next[0], result: answer(200), now: now, using: &random).accepted == [4])
        app.credentialProven()
        #expect(app.answered(next[1], result: answer(200), now: now, using: &random).accepted.isEmpty)
    }

    @Test func aCredentialRenewedTooOftenIsKeptLongerAndTheRequestRetried() {
        var app = scheduler(concurrency: 2, credentialed: true)
        _ = app.prepared(.ready, now: now)
        let sent = app.claimedAndRendered(claim(2), now: now).sentRequests
        var random = random
        let answered = app.answered(sent[0], result: answer(497), now: now, using: &random)
        #expect(answered.keptLonger == 1)
        #expect(answered.refused.isEmpty, "not a refusal: the token is good, only renewed too often")
        #expect(answered.plans.map(\.pauseReason) == [nil], "retried with a backoff, no pause")
        #expect(answered.plans.first?.updates.count == 1)
        if case .retry(let id, _, _, _)? = answered.plans.first?.updates.first { #expect(id == 1) } else {
            Issue.record("a retry was expected: \(answered.plans)")
        }
        #expect(app.answered(sent[1], result: answer(200), now: now, using: &random).keptLonger == 0)
    }

    // MARK: - Shutdown

    @Test func stopReleasesTheDeliveriesBeingRenderedAndDropsTheirRender() {
        var app = scheduler(concurrency: 3)
        _ = app.pump(now: now)
        let claimed = app.claimed(claim(2), now: now)
        #expect(app.stop() == [.release(id: 1), .release(id: 2)])
        #expect(app.rendered(rendering(of: claimed, by: app), now: now).isEmpty, "released already: never sent")
    }

    @Test func stopReleasesWhatWaitsAndAClaimArrivingAfterIsReleasedToo() {
        var app = scheduler(concurrency: 1)
        _ = app.pump(now: now)
        let sent = app.claimedAndRendered(claim(3), now: now).sentRequests
        _ = app.rowsCommitted(now: now)
        #expect(app.stop() == [.release(id: 2), .release(id: 3)])
        let late = app.claimedAndRendered(claim(2, first: 10), now: now)
        #expect(late.sent.isEmpty && late.written == [.release(id: 10), .release(id: 11)])
        var random = random
        let cancelled = app.answered(sent[0], result: .failure(.cancelled), now: now, using: &random)
        #expect(cancelled.written == [.release(id: 1)], "a request cancelled at shutdown is not charged")
        #expect(cancelled.sent.isEmpty && cancelled.claims.isEmpty)
    }
}

// MARK: - Support

/// Legacy requests (one token each) with answers classified by status alone (498: the credential refused, as FCM
/// v1's 401 `UNAUTHENTICATED`; 497: renewed too often, as APNs' `TooManyProviderTokenUpdates`); its credentials are
/// set by the test.
final class ScriptedProvider: Provider {
    let scripted = ScriptedCredentials()
    private let credentialed: Bool
    private let legacy = LegacyProvider(app: "default", endpoint: "http://127.0.0.1:1/fcm/send", serverKey: "k")

    private let targetsPerRequest: Int

    /// `targetsPerRequest`: what the scheduler is told a request may carry (the requests stay one token each).
    init(credentialed: Bool = true, targetsPerRequest: Int = 1) {
        self.credentialed = credentialed
        self.targetsPerRequest = targetsPerRequest
    }

    var maxTargetsPerRequest: Int { targetsPerRequest }
    var credentials: (any Credentials)? { credentialed ? scripted : nil }

    func requests(
        for message: ClaimedMessage, deliveries: [ClaimedDelivery], credential: String?, now: Int64
    ) -> [PreparedRequest] {
        deliveries.flatMap { legacy.requests(for: message, deliveries: [$0], now: now) }
    }

    func classify(_ result: TransportResult, of request: PreparedRequest, now: Int64) -> Classification {
        let count = request.deliveries.count
        let retryAfter = result.header("retry-after").flatMap { Int64($0) }.map { now + $0 * 1000 }
        switch result {
        case .response(200, _, _, _):
            return Classification(outcomes: request.deliveries.map {
                .delivered(fcmMessageID: "sent-\($0.id)", canonicalToken: nil)
            })
        case .response(401, _, _, _):
            return Classification(outcomes: Array(repeating: .pauseApp(reason: .unauthorized), count: count))
        case .response(498, _, _, _):
            return Classification(outcomes: Array(repeating: .requeue(reason: .other("UNAUTHENTICATED")), count: count))
        case .response(497, _, _, _):
            return Classification(
                outcomes: Array(repeating: .retry(reason: .other("TooManyProviderTokenUpdates")), count: count),
                credentialRenewedTooOften: true)
        case .response(429, _, _, _):
            return Classification(
                outcomes: Array(repeating: .retrySlow(reason: .other("QUOTA_EXCEEDED")), count: count),
                retryAfterUntil: retryAfter, closesGate: true)
        default:
            return Classification(
                outcomes: Array(repeating: .retry(reason: .unavailable), count: count), retryAfterUntil: retryAfter,
                closesGate: true)
        }
    }
}

/// Credentials whose current value and whether a renewal is due are set by the test. The render stage reads them;
/// obtaining and judging are the engine's, answered to the scheduler by events the test sends itself.
final class ScriptedCredentials: Credentials {
    struct State {
        var current: String? = "token-1"
        var renewalDue = false
    }

    let state = Mutex(State())

    func current(now: Int64) -> String? { state.withLock { $0.current } }
    func renewalDue(now: Int64) -> Bool { state.withLock { $0.renewalDue } }
    func renew(now: Int64) {}
    func obtain(now: Int64, completion: @escaping @Sendable (ProviderReadiness) -> Void) { completion(.ready) }
    func refused(_ request: PreparedRequest) -> CredentialRefusal { .renew }
    func accepted(_ request: PreparedRequest) -> Bool { false }
}

/// A deterministic generator (SplitMix64), so a plan's jitter is the same every run.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension AppScheduler {
    /// `claimed`, and the render it asks for carried out at once, as the engine's render stage would: the actions of
    /// both.
    mutating func claimedAndRendered(_ claim: ClaimResult, now: Int64) -> [Action] {
        let actions = claimed(claim, now: now)
        guard let runs = actions.renders.first else { return actions }
        return actions + rendered(RenderStage.render(runs, with: app.provider, now: now, cores: 1), now: now)
    }
}

extension [AppScheduler.Action] {
    var claims: [Int] { compactMap { if case .claim(let limit) = $0 { limit } else { nil } } }
    var renders: [[ClaimedRun]] { compactMap { if case .render(let runs) = $0 { runs } else { nil } } }
    var sentRequests: [PreparedRequest] { compactMap { if case .send(let request) = $0 { request } else { nil } } }
    /// The delivery ids of the requests sent, in order.
    var sent: [Int64] { sentRequests.flatMap { $0.deliveries.map(\.id) } }
    var written: [DeliveryUpdate] {
        flatMap { action -> [DeliveryUpdate] in if case .write(let updates, _) = action { updates } else { [] } }
    }
    var plans: [OutcomePlan] { compactMap { if case .write(_, let plan?) = $0 { plan } else { nil } } }
    var wakes: [Int64] { compactMap { if case .wake(let at) = $0 { at } else { nil } } }
    var notes: [AppScheduler.Note] { compactMap { if case .note(let note) = $0 { note } else { nil } } }
    var prepares: Int { count { if case .prepare = $0 { true } else { false } } }
    var renewals: Int { count { if case .renewCredentials = $0 { true } else { false } } }
    var refused: [Int64] {
        compactMap { if case .credentialRefused(let request, _) = $0 { request.deliveries[0].id } else { nil } }
    }
    var keptLonger: Int { count { if case .credentialRenewedTooOften = $0 { true } else { false } } }
    var accepted: [Int64] {
        compactMap { if case .credentialAccepted(let request) = $0 { request.deliveries[0].id } else { nil } }
    }
}
