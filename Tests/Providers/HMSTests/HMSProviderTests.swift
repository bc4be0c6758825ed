import Delivery
import HMSSimulator
import HTTP
import ProviderKit
import Queue
import Send
import Support
import Testing

@testable import HMS

private let now: Int64 = 1_700_000_000_000

/// The simulator's HMS side on an ephemeral loopback port, and a provider pointed at it.
private final class Rig: Sendable {
    let simulator: HMSSimulator
    let server: HTTPServer
    let base: String
    let pool = HTTPClientPool(maxConnectionsPerHost: 2, name: "hms-test")

    init() throws {
        simulator = HMSSimulator(account: .init(appID: "10000001", clientSecret: "s3cret"))
        server = HTTPServer(
            configuration: HTTPServerConfiguration(address: .tcp(host: "127.0.0.1", port: 0)), handler: simulator)
        base = "http://\(try server.start())"
    }

    func provider(secret: String = "s3cret") throws -> HMSProvider {
        var settings = try HMSSettings(AppEntry(
            json: .object([("app_id", "10000001"), ("client_secret_file", "unused"), ("endpoint", .string(base)),
                           ("token_uri", .string(base + HMSSimulator.tokenPath))]), app: "hms", directory: nil))
        settings.clientSecret = secret
        return HMSProvider(app: "hms", settings: settings, tokenPool: pool)
    }

    func stop() {
        server.shutdown(gracePeriod: 0)
        pool.shutdown(gracePeriod: 0)
    }
}

private func obtain(_ credentials: (any Credentials)?) async -> ProviderReadiness? {
    guard let credentials else { return nil }
    return await withCheckedContinuation { done in
        credentials.obtain(now: Clock.nowMillis()) { done.resume(returning: $0) }
    }
}

private func deliveries(_ count: Int, prefix: String = "t") -> [ClaimedDelivery] {
    (0..<count).map { ClaimedDelivery(id: Int64($0), messageID: "m1", token: "\(prefix)\($0)", attempts: 0) }
}

private func message(_ payload: String = #"{"data":{"a":"b"}}"#, kind: TargetKind = .tokens) -> ClaimedMessage {
    ClaimedMessage(id: "m1", app: "hms", payload: payload, targetKind: kind, ttlSeconds: 3600, dryRun: false,
                   expiresAt: now + 3_600_000, format: .v1)
}

@Suite struct HMSProviderTests {
    @Test func tokensGoInRequestsOfAtMost1000() throws {
        let rig = try Rig()
        defer { rig.stop() }
        let requests = try rig.provider().requests(
            for: message(), deliveries: deliveries(2500), credential: "CV/x==", now: now)
        #expect(requests.map(\.deliveries.count) == [1000, 1000, 500])
        #expect(requests[0].outbound.url == rig.base + "/v1/10000001/messages:send")
        #expect(requests[0].outbound.headers.contains { $0 == ("Authorization", "Bearer CV/x==") })
        let tokens = try JSON.parse(requests[2].outbound.body)["message"]?["token"]?.arrayValue
        #expect(tokens?.map(\.stringValue) == (2000..<2500).map { "t\($0)" })
    }

    @Test func aTopicIsARequestOfItsOwn() throws {
        let rig = try Rig()
        defer { rig.stop() }
        let requests = try rig.provider().requests(
            for: message(kind: .topic), deliveries: deliveries(2, prefix: "/topics/news"), credential: "c", now: now)
        #expect(requests.count == 2)
        #expect(try JSON.parse(requests[0].outbound.body)["message"]?["topic"] == "news0")
    }

    @Test func aMessageOverHuaweisLimitIsRefusedUnsent() throws {
        let rig = try Rig()
        defer { rig.stop() }
        let big = #"{"data":{"a":"\#(String(repeating: "x", count: 4100))"}}"#
        let requests = try rig.provider().requests(
            for: message(big), deliveries: deliveries(3), credential: "c", now: now)
        #expect(requests.count == 1)
        #expect(requests[0].refusal?.rawValue == "80300008")
        #expect(requests[0].deliveries.count == 3)
    }

    @Test func theClientCredentialsGrantIsFormEncoded() {
        #expect(HMSSettings.grant(clientID: "10000001", clientSecret: "a+b/c= d&e")
            == "grant_type=client_credentials&client_id=10000001&client_secret=a%2Bb%2Fc%3D%20d%26e")
    }

    @Test func theClientCredentialsGetATokenWithSlashesInIt() async throws {
        let rig = try Rig()
        defer { rig.stop() }
        let provider = try rig.provider()
        #expect(await obtain(provider.credentials) == .ready)
        let token = try #require(provider.credentials?.current(now: Clock.nowMillis()))
        #expect(token.hasPrefix("CV/") && token.contains("/"), "read as JSON: \\/ is /")
        // The simulator takes it, and answers its send.
        let requests = provider.requests(for: message(), deliveries: deliveries(2), credential: token, now: now)
        let answer = await send(requests[0], rig: rig)
        #expect(provider.classify(answer, of: requests[0], now: now).outcomes.allSatisfy {
            if case .delivered = $0 { true } else { false }
        })
    }

    @Test func aRefusedClientPausesTheApp() async throws {
        let rig = try Rig()
        defer { rig.stop() }
        let readiness = await obtain(try rig.provider(secret: "not-it-zq9").credentials)
        guard case .pause(let reason)? = readiness else { Issue.record("\(String(describing: readiness))"); return }
        #expect(reason.contains("1101") && reason.contains("12304"), "\(reason)")
        #expect(!reason.contains("not-it-zq9"), "the secret is never in the reason")
    }

    @Test func anExpiredTokenIsRenewedOnceThenTheNewOneWorks() async throws {
        let rig = try Rig()
        defer { rig.stop() }
        let provider = try rig.provider()
        let credentials = try #require(provider.credentials)
        #expect(await obtain(credentials) == .ready)
        let first = try #require(credentials.current(now: Clock.nowMillis()))
        rig.simulator.expireTokens()
        let request = provider.requests(for: message(), deliveries: deliveries(1), credential: first, now: now)[0]
        let outcome = provider.classify(await send(request, rig: rig), of: request, now: now).outcomes
        #expect(outcome == [.requeue(reason: HMSCode.oauthTokenExpired.reason)])
        #expect(credentials.refused(request) == .renew)
        #expect(await obtain(credentials) == .ready)
        let second = try #require(credentials.current(now: Clock.nowMillis()))
        #expect(second != first)
        #expect(rig.simulator.stats().tokenRequests == 2)
    }

    private func send(_ request: PreparedRequest, rig: Rig) async -> TransportResult {
        await withCheckedContinuation { done in
            rig.pool.submit(request.outbound) { result, _ in done.resume(returning: result) }
        }
    }
}
