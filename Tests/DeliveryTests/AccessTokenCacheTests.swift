import Foundation
import HTTP
import OAuth
import Send
import Support
import Testing
import TestSupport

@testable import Delivery

@Suite struct AccessTokenCacheTests {
    let pool = HTTPClientPool(maxConnectionsPerHost: 2, name: "oauth-test")

    func cache(_ endpoint: TestTokenEndpoint, clock: TestClock) -> AccessTokenCache {
        AccessTokenCache(app: "default", account: testAccount(), tokenURI: endpoint.url, pool: pool,
                         clock: { clock.now })
    }

    @Test func theAssertionIsASignedJWTBearerGrant() throws {
        let endpoint = try TestTokenEndpoint()
        defer { endpoint.shutdown() }
        let clock = TestClock()
        #expect(readiness { cache(endpoint, clock: clock).fetch(now: clock.now, completion: $0) } == .ready)
        let form = try #require(endpoint.forms.first)
        #expect(form["content-type"] == "application/x-www-form-urlencoded")
        #expect(form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer")
        let jwt = try JWT.verify(try #require(form["assertion"]), with: v1TestKey.publicKey)
        #expect(jwt.header["alg"]?.stringValue == "RS256")
        #expect(jwt.claims["iss"]?.stringValue == "herald-test@test-project.iam.gserviceaccount.com")
        #expect(jwt.claims["scope"]?.stringValue == "https://www.googleapis.com/auth/firebase.messaging")
        #expect(jwt.claims["aud"]?.stringValue == endpoint.url)
        let iat = try #require(jwt.claims["iat"]?.int64Value)
        let exp = try #require(jwt.claims["exp"]?.int64Value)
        #expect(iat == clock.now / 1000)
        #expect(exp > iat && exp - iat <= 3600)
    }

    @Test func aUsableTokenIsCachedNotFetchedAgain() throws {
        let endpoint = try TestTokenEndpoint()
        defer { endpoint.shutdown() }
        let clock = TestClock()
        let cache = cache(endpoint, clock: clock)
        #expect(cache.usableToken(now: clock.now) == nil)
        #expect(readiness { cache.fetch(now: clock.now, completion: $0) } == .ready)
        clock.advance(seconds: 1800)
        #expect(readiness { cache.fetch(now: clock.now, completion: $0) } == .ready)
        cache.renewIfDue(now: clock.now)
        #expect(cache.usableToken(now: clock.now)?.value == "token-1")
        #expect(endpoint.forms.count == 1)
    }

    @Test func theTokenIsRenewedInTheBackgroundBeforeItExpires() throws {
        let endpoint = try TestTokenEndpoint()
        defer { endpoint.shutdown() }
        let clock = TestClock()
        let cache = cache(endpoint, clock: clock)
        #expect(readiness { cache.fetch(now: clock.now, completion: $0) } == .ready)
        // Four minutes before expiry: still sent with, and a renewal starts.
        clock.advance(seconds: 3600 - 240)
        #expect(cache.usableToken(now: clock.now)?.value == "token-1")
        cache.renewIfDue(now: clock.now)
        eventually("the renewed token") { cache.usableToken(now: clock.now)?.value == "token-2" }
        #expect(endpoint.forms.count == 2)
        let token = try #require(cache.usableToken(now: clock.now))
        #expect(token.expiresAt == clock.now + 3_600_000)
    }

    @Test func anExpiredTokenIsNotUsedAndIsFetchedAgain() throws {
        let endpoint = try TestTokenEndpoint()
        defer { endpoint.shutdown() }
        let clock = TestClock()
        let cache = cache(endpoint, clock: clock)
        #expect(readiness { cache.fetch(now: clock.now, completion: $0) } == .ready)
        clock.advance(seconds: 3590)
        #expect(cache.usableToken(now: clock.now) == nil, "a token in its last 30 s is not sent with")
        #expect(readiness { cache.fetch(now: clock.now, completion: $0) } == .ready)
        #expect(cache.usableToken(now: clock.now)?.value == "token-2")
    }

    @Test func aRefusedTokenIsRenewedOnceThenThePauseComes() throws {
        let endpoint = try TestTokenEndpoint()
        defer { endpoint.shutdown() }
        let clock = TestClock()
        let cache = cache(endpoint, clock: clock)
        #expect(readiness { cache.fetch(now: clock.now, completion: $0) } == .ready)
        #expect(cache.rejected("token-1") == .renew)
        #expect(cache.usableToken(now: clock.now) == nil)
        #expect(cache.rejected("token-1") == .stale, "other requests that carried it are only requeued")
        #expect(readiness { cache.fetch(now: clock.now, completion: $0) } == .ready)
        #expect(cache.usableToken(now: clock.now)?.value == "token-2")
        #expect(cache.rejected("token-2") == .pause)
    }

    @Test func aTokenThatWorksEarnsTheNextRefusalItsOwnRenewal() throws {
        let endpoint = try TestTokenEndpoint()
        defer { endpoint.shutdown() }
        let clock = TestClock()
        let cache = cache(endpoint, clock: clock)
        #expect(readiness { cache.fetch(now: clock.now, completion: $0) } == .ready)
        #expect(cache.rejected("token-1") == .renew)
        #expect(readiness { cache.fetch(now: clock.now, completion: $0) } == .ready)
        cache.accepted { "token-2" }
        #expect(cache.rejected("token-2") == .renew)
    }

    @Test func aRefusedAssertionPausesWithTheOAuthError() throws {
        let endpoint = try TestTokenEndpoint { _, _ in
            .json(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#)
        }
        defer { endpoint.shutdown() }
        let clock = TestClock()
        let cache = cache(endpoint, clock: clock)
        #expect(readiness { cache.fetch(now: clock.now, completion: $0) }
            == .pause(reason: "OAuth invalid_grant: Invalid JWT Signature."))
        #expect(cache.usableToken(now: clock.now) == nil)
    }

    @Test func aFailingEndpointIsRetriedWithBackoff() throws {
        let endpoint = try TestTokenEndpoint { n, _ in
            n <= 2 ? .text(503, "busy") : .json(200, #"{"access_token":"token-\#(n)","expires_in":3600}"#)
        }
        defer { endpoint.shutdown() }
        let clock = TestClock()
        let cache = cache(endpoint, clock: clock)
        #expect(readiness { cache.fetch(now: clock.now, completion: $0) } == .retry(at: clock.now + 1000))
        #expect(readiness { cache.fetch(now: clock.now, completion: $0) } == .retry(at: clock.now + 1000),
                "no second request before the backoff has passed")
        clock.advance(seconds: 1)
        #expect(readiness { cache.fetch(now: clock.now, completion: $0) } == .retry(at: clock.now + 2000))
        clock.advance(seconds: 2)
        #expect(readiness { cache.fetch(now: clock.now, completion: $0) } == .ready)
        #expect(endpoint.forms.count == 3)
    }

    @Test func concurrentFetchesShareOneRequest() throws {
        let endpoint = try TestTokenEndpoint()
        defer { endpoint.shutdown() }
        let clock = TestClock()
        let cache = cache(endpoint, clock: clock)
        let group = DispatchGroup()
        let results = Locked<[ProviderReadiness]>([])
        for _ in 0..<5 {
            group.enter()
            cache.fetch(now: clock.now) { value in
                results.withLock { $0.append(value) }
                group.leave()
            }
        }
        #expect(group.wait(timeout: .now() + 20) == .success)
        #expect(results.withLock { $0 } == Array(repeating: .ready, count: 5))
        #expect(endpoint.forms.count == 1)
    }

    // MARK: - The token endpoint's answers (pure)

    struct AnswerRow: Sendable, CustomTestStringConvertible {
        let status: Int
        let body: String
        let answer: AccessTokenCache.Answer
        var testDescription: String { "\(status) \(body.prefix(50))" }
    }

    static let answers: [AnswerRow] = [
        AnswerRow(status: 200, body: #"{"access_token":"ya29.x","expires_in":3599,"token_type":"Bearer"}"#,
                  answer: .token("ya29.x", expiresInSeconds: 3599)),
        AnswerRow(status: 200, body: #"{"access_token":"ya29.x"}"#, answer: .token("ya29.x", expiresInSeconds: 3600)),
        AnswerRow(status: 200, body: #"{"access_token":"","expires_in":3599}"#,
                  answer: .failed("the token endpoint answered 200 without an access_token")),
        AnswerRow(status: 200, body: #"{"access_token":"a b"}"#,
                  answer: .failed("the token endpoint answered 200 without an access_token")),
        AnswerRow(status: 200, body: #"{"access_token":"x","token_type":"MAC"}"#,
                  answer: .failed(#"the token endpoint gave a "MAC" token, not a Bearer token"#)),
        AnswerRow(status: 400, body: #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#,
                  answer: .refused("OAuth invalid_grant: Invalid JWT Signature.")),
        AnswerRow(status: 401,
                  body: #"{"error":"invalid_client","error_description":"The OAuth client was not found."}"#,
                  answer: .refused("OAuth invalid_client: The OAuth client was not found.")),
        AnswerRow(status: 400, body: #"{"error":"invalid_scope"}"#, answer: .refused("OAuth invalid_scope")),
        AnswerRow(status: 404, body: "<html>", answer: .refused("the token endpoint answered HTTP 404")),
        AnswerRow(status: 429, body: "", answer: .failed("the token endpoint answered HTTP 429")),
        AnswerRow(status: 503, body: "", answer: .failed("the token endpoint answered HTTP 503")),
        AnswerRow(status: 400, body: "{\"error\":\"bad\\n\\u0000\"}", answer: .refused("OAuth bad??")),
    ]

    @Test(arguments: answers)
    func tokenEndpointAnswersAreReadByRFC6749(_ row: AnswerRow) {
        let result = TransportResult.response(
            status: row.status, headers: [], body: Array(row.body.utf8), httpVersion: "1.1")
        #expect(AccessTokenCache.read(result) == row.answer)
    }

    @Test func transportFailuresAreRetried() {
        #expect(AccessTokenCache.read(.failure(.connect)) == .failed("token endpoint: connect"))
    }
}
