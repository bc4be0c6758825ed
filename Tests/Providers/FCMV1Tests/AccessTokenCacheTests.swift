import Foundation
import HTTP
import OAuth
import Send
import Support
import Testing
import TestSupport

@testable import Delivery
@testable import FCMV1

@Suite struct AccessTokenCacheTests {
    /// A cache on a token endpoint of its own (`TestTokenEndpoint`'s answers unless given others) and a clock the test
    /// moves; `shutdown()` stops the endpoint.
    struct Fixture {
        let endpoint: TestTokenEndpoint
        let clock = TestClock()
        let cache: AccessTokenCache

        init(answer: (@Sendable (Int, [String: String]) -> HTTPResponse)? = nil) throws {
            endpoint = try TestTokenEndpoint(answer: answer)
            let clock = clock
            cache = AccessTokenCache(app: "default", account: testAccount(), tokenURI: endpoint.url,
                                     pool: HTTPClientPool(maxConnectionsPerHost: 2, name: "oauth-test"),
                                     clock: { clock.now })
        }

        /// What `fetch` reports at the clock's time.
        func fetch() -> ProviderReadiness? { readiness { cache.fetch(now: clock.now, completion: $0) } }

        /// The token a request would be sent with at the clock's time.
        var usableToken: String? { cache.usableToken(now: clock.now)?.value }

        func shutdown() { endpoint.shutdown() }
    }

    @Test func theAssertionIsASignedJWTBearerGrant() throws {
        let fixture = try Fixture()
        defer { fixture.shutdown() }
        #expect(fixture.fetch() == .ready)
        let form = try #require(fixture.endpoint.forms.first)
        #expect(form["content-type"] == "application/x-www-form-urlencoded")
        #expect(form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer")
        let jwt = try JWT.verify(try #require(form["assertion"]), with: v1TestKey.publicKey)
        #expect(jwt.header["alg"]?.stringValue == "RS256")
        #expect(jwt.claims["iss"]?.stringValue == "herald-test@test-project.iam.gserviceaccount.com")
        #expect(jwt.claims["scope"]?.stringValue == "https://www.googleapis.com/auth/firebase.messaging")
        #expect(jwt.claims["aud"]?.stringValue == fixture.endpoint.url)
        let iat = try #require(jwt.claims["iat"]?.int64Value)
        let exp = try #require(jwt.claims["exp"]?.int64Value)
        #expect(iat == fixture.clock.now / 1000)
        #expect(exp > iat && exp - iat <= 3600)
    }

    @Test func aUsableTokenIsCachedNotFetchedAgain() throws {
        let fixture = try Fixture()
        defer { fixture.shutdown() }
        #expect(fixture.usableToken == nil)
        #expect(fixture.fetch() == .ready)
        fixture.clock.advance(seconds: 1800)
        #expect(fixture.fetch() == .ready)
        fixture.cache.renewIfDue(now: fixture.clock.now)
        #expect(fixture.usableToken == "token-1")
        #expect(fixture.endpoint.forms.count == 1)
    }

    @Test func theTokenIsRenewedInTheBackgroundBeforeItExpires() throws {
        let fixture = try Fixture()
        defer { fixture.shutdown() }
        #expect(fixture.fetch() == .ready)
        // Four minutes before expiry: still sent with, and a renewal starts.
        fixture.clock.advance(seconds: 3600 - 240)
        #expect(fixture.usableToken == "token-1")
        fixture.cache.renewIfDue(now: fixture.clock.now)
        eventually("the renewed token") { fixture.usableToken == "token-2" }
        #expect(fixture.endpoint.forms.count == 2)
        let token = try #require(fixture.cache.usableToken(now: fixture.clock.now))
        #expect(token.expiresAt == fixture.clock.now + 3_600_000)
    }

    @Test func anExpiredTokenIsNotUsedAndIsFetchedAgain() throws {
        let fixture = try Fixture()
        defer { fixture.shutdown() }
        #expect(fixture.fetch() == .ready)
        fixture.clock.advance(seconds: 3590)
        #expect(fixture.usableToken == nil, "a token in its last 30 s is not sent with")
        #expect(fixture.fetch() == .ready)
        #expect(fixture.usableToken == "token-2")
    }

    @Test func aRefusedTokenIsRenewedOnceThenThePauseComes() throws {
        let fixture = try Fixture()
        defer { fixture.shutdown() }
        #expect(fixture.fetch() == .ready)
        #expect(fixture.cache.rejected("token-1") == .renew)
        #expect(fixture.usableToken == nil)
        #expect(fixture.cache.rejected("token-1") == .stale, "other requests that carried it are only requeued")
        #expect(fixture.fetch() == .ready)
        #expect(fixture.usableToken == "token-2")
        #expect(fixture.cache.rejected("token-2") == .pause)
    }

    @Test func aTokenThatWorksEarnsTheNextRefusalItsOwnRenewal() throws {
        let fixture = try Fixture()
        defer { fixture.shutdown() }
        #expect(fixture.fetch() == .ready)
        #expect(fixture.cache.rejected("token-1") == .renew)
        #expect(fixture.fetch() == .ready)
        fixture.cache.accepted { "token-2" }
        #expect(fixture.cache.rejected("token-2") == .renew)
    }

    @Test func aRefusedAssertionPausesWithTheOAuthError() throws {
        let fixture = try Fixture { _, _ in
            .json(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#)
        }
        defer { fixture.shutdown() }
        #expect(fixture.fetch() == .pause(reason: "OAuth invalid_grant: Invalid JWT Signature."))
        #expect(fixture.usableToken == nil)
    }

    @Test func aFailingEndpointIsRetriedWithBackoff() throws {
        let fixture = try Fixture { n, _ in
            n <= 2 ? .text(503, "busy") : .json(200, #"{"access_token":"token-\#(n)","expires_in":3600}"#)
        }
        defer { fixture.shutdown() }
        let clock = fixture.clock
        #expect(fixture.fetch() == .retry(at: clock.now + 1000))
        #expect(fixture.fetch() == .retry(at: clock.now + 1000), "no second request before the backoff has passed")
        clock.advance(seconds: 1)
        #expect(fixture.fetch() == .retry(at: clock.now + 2000))
        clock.advance(seconds: 2)
        #expect(fixture.fetch() == .ready)
        #expect(fixture.endpoint.forms.count == 3)
    }

    @Test func concurrentFetchesShareOneRequest() throws {
        let fixture = try Fixture()
        defer { fixture.shutdown() }
        let group = DispatchGroup()
        let results = Locked<[ProviderReadiness]>([])
        for _ in 0..<5 {
            group.enter()
            fixture.cache.fetch(now: fixture.clock.now) { value in
                results.withLock { $0.append(value) }
                group.leave()
            }
        }
        #expect(group.wait(timeout: .now() + 20) == .success)
        #expect(results.withLock { $0 } == Array(repeating: .ready, count: 5))
        #expect(fixture.endpoint.forms.count == 1)
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
