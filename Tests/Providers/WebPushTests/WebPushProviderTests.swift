import Ingest
import OAuth
import Queue
import Send
import Support
import Testing
import WebPushCrypto

@testable import Delivery
@testable import WebPush

private let now: Int64 = 1_700_000_000_000

/// The provider's requests: one per subscription, each encrypted to its own keys (decrypted here with the
/// subscriber's private key), signed for its origin, sent to its endpoint (or its path on `redirect`) — and in the
/// claim's order when a claim's requests are made on several threads.
@Suite struct WebPushProviderTests {
    let key: P256PrivateKey
    let vapid: VAPID

    init() throws {
        key = try P256PrivateKey.generate()
        vapid = try VAPID(key: key, subject: "mailto:ops@example.com")
    }

    func message(_ id: String, data: String) -> ClaimedMessage {
        ClaimedMessage(
            id: id, app: "web", payload: #"{"data":{"n":"\#(data)"}}"#, targetKind: .tokens, ttlSeconds: 60,
            dryRun: false, expiresAt: now + 60_000)
    }

    func subscription(_ name: String, host: String = "push.example") throws -> (WebPushSubscriber, String) {
        let subscriber = try WebPushSubscriber.generate()
        let token = try WebPushSubscription(endpoint: "https://\(host)/push/\(name)", keys: subscriber.keys).token
        return (subscriber, token)
    }

    func header(_ request: PreparedRequest, _ name: String) -> String? {
        request.outbound.headers.first { $0.name == name }?.value
    }

    @Test func aClaimRenderedOnSeveralThreadsComesInItsOrderEachEncryptedToItsSubscription() throws {
        let provider = WebPushProvider(app: "web", vapid: vapid)
        var runs: [ClaimedRun] = []
        var subscribers: [Int64: WebPushSubscriber] = [:]
        for index in 0..<(RenderStage.runsPerChunk * 3) {
            let host = index.isMultiple(of: 2) ? "a.example" : "b.example"
            let (subscriber, token) = try subscription("s\(index)", host: host)
            let id = Int64(index + 1)
            subscribers[id] = subscriber
            runs.append(ClaimedRun(message: message("m\(index)", data: "\(index)"), deliveries: [
                ClaimedDelivery(id: id, messageID: "m\(index)", token: token, attempts: 0),
            ]))
        }
        guard case .requests(let requests, renewalDue: false) = RenderStage.render(
            runs, with: provider, now: now, cores: 2)
        else {
            Issue.record("the VAPID key is always usable")
            return
        }
        #expect(requests.map { $0.deliveries[0].id } == (1...Int64(runs.count)).map { $0 })
        for request in requests {
            let id = request.deliveries[0].id
            let subscriber = try #require(subscribers[id])
            let plaintext = try WebPushEncryption.decrypt(
                request.outbound.body, privateKey: subscriber.privateKey, auth: subscriber.keys.auth)
            #expect(String(decoding: plaintext, as: UTF8.self) == #"{"data":{"n":"\#(id - 1)"}}"#)
            #expect(request.outbound.url.hasSuffix("/push/s\(id - 1)"))
            #expect(header(request, "content-encoding") == "aes128gcm")
            #expect(header(request, "ttl") == "60")
            #expect(header(request, "authorization")?.hasPrefix("vapid t=") == true)
            #expect(request.refusal == nil)
        }
        let audiences = Set(requests.compactMap { request -> String? in
            let token = header(request, "authorization")?.split(separator: " ")[1].dropFirst(2).dropLast() ?? ""
            return (try? JWT.verifyES256(String(token), with: key.publicKey))?.claims["aud"]?.stringValue
        })
        #expect(audiences == ["https://a.example", "https://b.example"], "aud is each endpoint's origin")
    }

    @Test func aRedirectKeepsThePathAndANonSubscriptionTokenIsRefusedUnsent() throws {
        let provider = WebPushProvider(app: "web", vapid: vapid, redirect: "https://127.0.0.1:8443/")
        let (_, token) = try subscription("laptop-1")
        let requests = provider.requests(
            for: message("m1", data: "x"),
            deliveries: [
                ClaimedDelivery(id: 1, messageID: "m1", token: token, attempts: 0),
                ClaimedDelivery(id: 2, messageID: "m1", token: "an-fcm-token", attempts: 0),
            ], credential: nil, now: now)
        #expect(requests.count == 2)
        #expect(requests[0].outbound.url == "https://127.0.0.1:8443/push/laptop-1")
        #expect(requests[1].refusal == .invalidRegistration)
    }

    /// A push service's answer past 64 KiB is not read: the delivery is retried as `ResponseTooLarge`, whatever the
    /// status was going to be (SPEC §19).
    @Test func anAnswerTooLargeToReadIsRetried() throws {
        let provider = WebPushProvider(app: "web", vapid: vapid)
        let (_, token) = try subscription("laptop-1")
        let delivery = ClaimedDelivery(id: 1, messageID: "m1", token: token, attempts: 0)
        let request = provider.requests(
            for: message("m1", data: "x"), deliveries: [delivery], credential: nil, now: now)[0]

        let classification = provider.classify(.failure(.responseTooLarge), of: request, now: now)

        #expect(classification.outcomes == [.retry(reason: .other("ResponseTooLarge"))])
        #expect(provider.maxResponseBytes == HTTPClientPool.pushResponseBytes)
    }
}
