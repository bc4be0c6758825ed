import Classify
import Queue
import Send
import Support
import Testing

@testable import Delivery
@testable import FCMLegacy

@Suite struct LegacyProviderTests {
    let provider = LegacyProvider(app: "default", endpoint: "http://127.0.0.1:1/fcm/send", serverKey: "k-123")
    let now: Int64 = 1_700_000_000_000

    func message(_ kind: TargetKind = .tokens,
                 payload: String = #"{"priority":"high","time_to_live":600,"data":{"a":"b"}}"#,
                 ttl: Int = 600, expiresIn: Int64 = 600_000) -> ClaimedMessage {
        ClaimedMessage(id: "m1", app: "default", payload: payload, targetKind: kind, ttlSeconds: ttl, dryRun: false,
                       expiresAt: now + expiresIn)
    }

    func deliveries(_ count: Int) -> [ClaimedDelivery] {
        (0..<count).map { ClaimedDelivery(id: Int64($0), messageID: "m1", token: "t\($0)", attempts: 0) }
    }

    func body(_ request: PreparedRequest) -> String { String(decoding: request.outbound.body, as: UTF8.self) }

    @Test func oneTokenUsesToAndCarriesTheRemainingTTL() {
        let requests = provider.requests(for: message(expiresIn: 250_500), deliveries: deliveries(1), now: now)
        #expect(requests.count == 1)
        #expect(body(requests[0]) == #"{"to":"t0","priority":"high","data":{"a":"b"},"time_to_live":250}"#)
        #expect(requests[0].outbound.headers.contains { $0.name == "Authorization" && $0.value == "key=k-123" })
        #expect(requests[0].kind == .tokens)
    }

    @Test func tokensShareRequestsOfAtMostAThousand() {
        let requests = provider.requests(for: message(), deliveries: deliveries(2500), now: now)
        #expect(requests.map(\.deliveries.count) == [1000, 1000, 500])
        let first = try? JSON.parse(requests[0].outbound.body)
        #expect(first?["registration_ids"]?.arrayValue?.count == 1000)
        #expect(first?["registration_ids"]?.arrayValue?.first == .string("t0"))
        #expect(requests[2].deliveries.first?.token == "t2000")
    }

    @Test func topicsAndConditionsKeepTheirAddress() {
        let topic = provider.requests(
            for: message(.topic),
            deliveries: [ClaimedDelivery(id: 1, messageID: "m1", token: "/topics/news", attempts: 0)],
            now: now)
        #expect(body(topic[0]).hasPrefix(#"{"to":"/topics/news","#))
        #expect(topic[0].kind == .topic)
        let condition = provider.requests(
            for: message(.condition),
            deliveries: [ClaimedDelivery(id: 1, messageID: "m1", token: "'a' in topics", attempts: 0)], now: now)
        #expect(body(condition[0]).hasPrefix(#"{"condition":"'a' in topics","#))
    }

    @Test func aZeroTTLStaysZero() {
        let requests = provider.requests(for: message(payload: #"{"time_to_live":0}"#, ttl: 0, expiresIn: 0),
                                         deliveries: deliveries(1), now: now)
        #expect(body(requests[0]) == #"{"to":"t0","time_to_live":0}"#)
    }

    /// An answer too large to read is no answer: retried, never taken as delivered (SPEC §19).
    @Test(arguments: [TransportFailure.timeout, .responseTooLarge])
    func transportFailuresRetryEveryToken(_ failure: TransportFailure) {
        let request = provider.requests(for: message(), deliveries: deliveries(3), now: now)[0]
        let classification = provider.classify(.failure(failure), of: request, now: now)
        #expect(classification.outcomes == Array(
            repeating: .retry(reason: .other(failure.description)), count: 3))
        #expect(classification.closesGate)
    }
}

@Suite struct OutcomePlannerTests {
    let now: Int64 = 1_700_000_000_000

    func request(_ count: Int, attempts: Int = 0, ttl: Int = 3600) -> PreparedRequest {
        PreparedRequest(
            app: "default",
            message: ClaimedMessage(id: "m", app: "default", payload: "{}", targetKind: .tokens, ttlSeconds: ttl,
                                    dryRun: false, expiresAt: now + Int64(ttl) * 1000),
            deliveries: (0..<count).map {
                ClaimedDelivery(id: Int64($0), messageID: "m", token: "t\($0)", attempts: attempts)
            },
            outbound: OutboundRequest(url: "http://127.0.0.1:1", headers: [], body: []), kind: .tokens, format: .json)
    }

    @Test func officialExampleBecomesOneUpdatePerToken() {
        var random = SplitMix64(seed: 7)
        let classification = Classification(outcomes: [
            .delivered(fcmMessageID: "1:0408", canonicalToken: nil), .retry(reason: .unavailable),
            .deadToken(reason: .invalidRegistration), .delivered(fcmMessageID: "1:1516", canonicalToken: nil),
            .delivered(fcmMessageID: "1:2342", canonicalToken: "32"), .notRegistered,
        ])
        let plan = OutcomePlanner.plan(classification, for: request(6), status: 200, policy: RetryPolicy(),
                                       fallbackGateMillis: 1000, now: now, using: &random)
        #expect(plan.updates.count == 6)
        #expect(plan.updates[0] == .delivered(id: 0, fcmMessageID: "1:0408", canonicalToken: nil, status: 200))
        guard case .retry(1, let at, .unavailable, 200) = plan.updates[1] else {
            Issue.record("token 8 must retry: \(plan.updates[1])")
            return
        }
        #expect(at >= now + 500 && at <= now + 1000)
        #expect(plan.updates[2] == .dead(id: 2, reason: .invalidRegistration, status: 200))
        #expect(plan.updates[4] == .delivered(id: 4, fcmMessageID: "1:2342", canonicalToken: "32", status: 200))
        #expect(plan.updates[5] == .dropped(id: 5, reason: .notRegistered, status: 200))
        #expect(plan.pauseReason == nil && plan.gateUntil == nil)
    }

    /// An error FCM has no rule for retries, and its text is the reason the row will store, as FCM spelled it.
    @Test func anUnknownErrorKeepsItsTextAsTheReason() {
        var random = SplitMix64(seed: 5)
        let reply = #"{"multicast_id":1,"success":0,"failure":2,"results":[{"error":"SomethingNew"},{"error":"x y"}]}"#
        let answer = TransportResult.response(status: 200, headers: [], body: Array(reply.utf8), httpVersion: "2")
        let provider = LegacyProvider(app: "default", endpoint: "http://127.0.0.1:1/fcm/send", serverKey: "k")
        let classification = provider.classify(answer, of: request(2), now: now)
        let plan = OutcomePlanner.plan(classification, for: request(2), status: 200, policy: RetryPolicy(),
                                       fallbackGateMillis: 1000, now: now, using: &random)
        let reasons = plan.updates.map { update -> String? in
            if case .retry(_, _, let reason, _) = update { reason.rawValue } else { nil }
        }
        // Text that is not an identifier is not stored: it could be anything the network sent.
        #expect(reasons == ["SomethingNew", "UnknownError"])
    }

    @Test func unauthorizedPausesAndReleasesWithoutCharging() {
        var random = SplitMix64(seed: 1)
        let classification = Classification(outcomes: Array(repeating: .pauseApp(reason: .unauthorized), count: 2))
        let plan = OutcomePlanner.plan(classification, for: request(2), status: 401, policy: RetryPolicy(),
                                       fallbackGateMillis: 1000, now: now, using: &random)
        #expect(plan.updates == [.release(id: 0), .release(id: 1)])
        #expect(plan.pauseReason == "Unauthorized")
    }

    @Test func retryAfterClosesTheGateAndFloorsTheRetry() {
        var random = SplitMix64(seed: 3)
        let classification = Classification(outcomes: [.retry(reason: .unavailable)], retryAfterUntil: now + 120_000,
                                            closesGate: true)
        let plan = OutcomePlanner.plan(classification, for: request(1), status: 503, policy: RetryPolicy(),
                                       fallbackGateMillis: 1000, now: now, using: &random)
        #expect(plan.gateUntil == now + 120_000)
        guard case .retry(_, let at, _, _) = plan.updates[0] else {
            Issue.record("must retry")
            return
        }
        #expect(at >= now + 120_000)
    }

    @Test func lastAttemptBecomesMaxAttemptsAndZeroTTLExpires() {
        var random = SplitMix64(seed: 3)
        let retry = Classification(outcomes: [.retry(reason: .unavailable)])
        let exhausted = OutcomePlanner.plan(retry, for: request(1, attempts: 11), status: 200, policy: RetryPolicy(),
                                            fallbackGateMillis: 1000, now: now, using: &random)
        #expect(exhausted.updates == [.dead(id: 0, reason: .maxAttempts, status: 200)])
        let nowOrNever = OutcomePlanner.plan(retry, for: request(1, ttl: 0), status: 200, policy: RetryPolicy(),
                                             fallbackGateMillis: 1000, now: now, using: &random)
        #expect(nowOrNever.updates == [.dead(id: 0, reason: .expired, status: 200)])
    }
}
