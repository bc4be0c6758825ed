import Classify
import Foundation
import HTTP
import OAuth
import Queue
import Send
import Support
import Testing

@testable import Delivery
@testable import FCMV1

@Suite struct V1ProviderTests {
    let pool = HTTPClientPool(maxConnectionsPerHost: 2, name: "oauth-test")
    let now = Clock.nowMillis()

    func provider(_ endpoint: TestTokenEndpoint, base: String = "https://fcm.example.test/") -> V1Provider {
        V1Provider(app: "default", account: testAccount(), projectID: "test-project", endpoint: base,
                   tokenURI: endpoint.url, tokenPool: pool)
    }

    func message(kind: TargetKind = .tokens) -> ClaimedMessage {
        ClaimedMessage(id: "m1", app: "default", payload: #"{"data":{"a":"b"}}"#, targetKind: kind, ttlSeconds: 60,
                       dryRun: false, expiresAt: now + 60_000)
    }

    func deliveries(_ tokens: [String]) -> [ClaimedDelivery] {
        tokens.enumerated().map {
            ClaimedDelivery(id: Int64($0.offset), messageID: "m1", token: $0.element, attempts: 0)
        }
    }

    func answer(_ status: Int, _ body: String) -> TransportResult {
        .response(status: status, headers: [], body: Array(body.utf8), httpVersion: "2")
    }

    static let unauthenticated = #"{"error":{"code":401,"message":"Request had invalid authentication credentials.","#
        + #""status":"UNAUTHENTICATED"}}"#

    /// The token the credentials hold now, which the scheduler hands to `requests`.
    func token(_ provider: V1Provider) -> String? {
        provider.credentials?.current(now: now)
    }

    func obtain(_ provider: V1Provider) -> ProviderReadiness? {
        readiness { provider.credentials?.obtain(now: now, completion: $0) }
    }

    @Test func needsATokenBeforeItCanSend() throws {
        let endpoint = try TestTokenEndpoint()
        defer { endpoint.shutdown() }
        let provider = provider(endpoint)
        #expect(token(provider) == nil)
        #expect(obtain(provider) == .ready)
        #expect(token(provider) == "token-1")
    }

    @Test func oneRequestPerTokenWithTheBearerToken() throws {
        let endpoint = try TestTokenEndpoint()
        defer { endpoint.shutdown() }
        let provider = provider(endpoint)
        #expect(obtain(provider) == .ready)
        let requests = provider.requests(
            for: message(), deliveries: deliveries(["a", "b", "c"]), credential: token(provider), now: now)
        #expect(requests.count == 3)
        #expect(requests.map { $0.deliveries.map(\.token) } == [["a"], ["b"], ["c"]])
        for request in requests {
            #expect(request.outbound.url == "https://fcm.example.test/v1/projects/test-project/messages:send")
            #expect(request.outbound.headers.map(\.name) == ["Content-Type", "Authorization"])
            #expect(request.outbound.headers.map(\.value) == ["application/json", "Bearer token-1"])
            #expect(request.kind == .tokens)
        }
        let body = String(decoding: requests[1].outbound.body, as: UTF8.self)
        #expect(body.hasPrefix(#"{"validate_only":false,"message":{"token":"b","data":{"a":"b"}"#))
    }

    @Test func topicsAndConditionsAreOneRequestEach() throws {
        let endpoint = try TestTokenEndpoint()
        defer { endpoint.shutdown() }
        let provider = provider(endpoint)
        let topic = provider.requests(
            for: message(kind: .topic), deliveries: deliveries(["/topics/news"]), credential: "t", now: now)
        #expect(topic.map(\.kind) == [.topic])
        #expect(String(decoding: topic[0].outbound.body, as: UTF8.self).contains(#""topic":"news""#))
    }

    @Test func messagesWithOnePayloadInARowKeepTheirOwnTargetsTTLsAndFlags() throws {
        let endpoint = try TestTokenEndpoint()
        defer { endpoint.shutdown() }
        let provider = provider(endpoint)
        let payload = #"{"data":{"a":"b"},"priority":"high"}"#
        func legacy(_ id: String, expiresIn seconds: Int64, dryRun: Bool = false) -> ClaimedMessage {
            ClaimedMessage(id: id, app: "default", payload: payload, targetKind: .tokens, ttlSeconds: 600,
                           dryRun: dryRun, expiresAt: now + seconds * 1000 + 500)
        }
        let v1Payload = #"{"data":{"a":"b"},"android":{"ttl":"600s"}}"#
        func v1(_ id: String, expiresIn seconds: Int64) -> ClaimedMessage {
            ClaimedMessage(id: id, app: "default", payload: v1Payload, targetKind: .tokens, ttlSeconds: 600,
                           dryRun: false, expiresAt: now + seconds * 1000 + 500, format: .v1)
        }
        func body(_ message: ClaimedMessage, _ token: String, at time: Int64? = nil) -> String {
            let request = provider.requests(
                for: message, deliveries: deliveries([token]), credential: "t", now: time ?? now)[0]
            return String(decoding: request.outbound.body, as: UTF8.self)
        }

        // Each is rendered after the one before it, with the same payload: none may get its neighbour's values.
        let first = body(legacy("m1", expiresIn: 600), "t1")
        let second = body(legacy("m2", expiresIn: 600), "t2")
        let older = body(legacy("m3", expiresIn: 300), "t3")
        let dry = body(legacy("m4", expiresIn: 300, dryRun: true), "t4")
        let later = body(legacy("m5", expiresIn: 300), "t5", at: now + 2_000)
        let fresh = body(v1("m6", expiresIn: 600), "t6")
        let aged = body(v1("m7", expiresIn: 450), "t7")

        #expect(first.contains(#""token":"t1""#) && first.contains(#""ttl":"600s""#))
        #expect(second.contains(#""token":"t2""#) && second.contains(#""ttl":"600s""#))
        #expect(older.contains(#""token":"t3""#) && older.contains(#""ttl":"300s""#))
        #expect(dry.hasPrefix(#"{"validate_only":true,"#) && dry.contains(#""token":"t4""#))
        #expect(later.contains(#""ttl":"298s""#))
        #expect(fresh.contains(#""token":"t6""#) && fresh.contains(#""ttl":"600s""#))
        #expect(aged.contains(#""token":"t7""#) && aged.contains(#""ttl":"450s""#))
    }

    @Test func deliveredCarriesTheMessageName() throws {
        let endpoint = try TestTokenEndpoint()
        defer { endpoint.shutdown() }
        let provider = provider(endpoint)
        let request = provider.requests(for: message(), deliveries: deliveries(["a"]), credential: "t", now: now)[0]
        let classification = provider.classify(answer(200, #"{"name":"projects/test-project/messages/1"}"#),
                                               of: request, now: now)
        #expect(classification.outcomes == [.delivered(fcmMessageID: "projects/test-project/messages/1",
                                                       canonicalToken: nil)])
    }

    @Test func unauthenticatedRenewsTheTokenOnceThenPauses() throws {
        let endpoint = try TestTokenEndpoint()
        defer { endpoint.shutdown() }
        let provider = provider(endpoint)
        #expect(obtain(provider) == .ready)
        let credentials = try #require(provider.credentials)
        let first = provider.requests(for: message(), deliveries: deliveries(["a", "b"]), credential: token(provider),
                                      now: now)

        // A refusal is classified as a requeue whatever the token, and classifying it leaves the token alone.
        #expect(provider.classify(answer(401, Self.unauthenticated), of: first[0], now: now).outcomes
            == [.requeue(reason: .v1(.unauthenticated))])
        #expect(token(provider) == "token-1")
        // The first refusal drops the token, to be renewed; another request that carried it is only requeued.
        #expect(credentials.refused(first[0]) == .renew)
        #expect(token(provider) == nil)
        #expect(credentials.refused(first[1]) == .stale)

        #expect(obtain(provider) == .ready)
        #expect(endpoint.forms.count == 2)
        let second = provider.requests(for: message(), deliveries: deliveries(["a"]), credential: token(provider),
                                       now: now)
        #expect(second[0].outbound.headers.last?.value == "Bearer token-2")
        #expect(credentials.accepted(first[0]), "an answer to the old token proves nothing of the new one")
        // The renewed token refused too: renewing again cannot help.
        #expect(credentials.refused(second[0]) == .pause)
    }

    @Test func requeueReleasesWithoutChargingAndWithoutPausing() {
        let request = PreparedRequest(
            app: "default", message: message(), deliveries: deliveries(["a"]),
            outbound: OutboundRequest(url: "http://127.0.0.1:1"), kind: .tokens, format: .json)
        var random = SplitMix64(seed: 1)
        let plan = OutcomePlanner.plan(
            Classification(outcomes: [.requeue(reason: .v1(.unauthenticated))]), for: request, status: 401,
            policy: RetryPolicy(), fallbackGateMillis: 1000, now: now, using: &random)
        #expect(plan == OutcomePlan(updates: [.release(id: 0)], pauseReason: nil, gateUntil: nil))
    }

    @Test func transportFailuresRetry() throws {
        let endpoint = try TestTokenEndpoint()
        defer { endpoint.shutdown() }
        let provider = provider(endpoint)
        let request = provider.requests(for: message(), deliveries: deliveries(["a"]), credential: "t", now: now)[0]
        let classification = provider.classify(.failure(.timeout), of: request, now: now)
        #expect(classification.outcomes == [.retry(reason: .other("timeout"))])
        #expect(classification.closesGate)
    }

    @Test func anHTTPSEndpointGetsHeraldsOwnHTTP2ClientSizedForItsConcurrency() throws {
        let endpoint = try TestTokenEndpoint()
        let https = provider(endpoint).makeTransport(concurrency: 1000, name: "send-test", liveness: .standard)
        let cleartext = provider(endpoint, base: "http://127.0.0.1:9/").makeTransport(
            concurrency: 8, name: "send-test", liveness: .standard)
        defer {
            https.shutdown(gracePeriod: 0)
            cleartext.shutdown(gracePeriod: 0)
        }

        #expect(https is HTTP2ClientPool)
        #expect(cleartext is HTTPClientPool)
        // ceil(1000 / 100) + 1 over HTTP/2; one per request in flight over HTTP/1.1.
        #expect(provider(endpoint).maxConnections(concurrency: 1000) == 11)
        #expect(provider(endpoint, base: "http://127.0.0.1:9/").maxConnections(concurrency: 8) == 8)
    }
}
