import FCMSimulator
import HTTP
import Ingest
import OAuth
import Support
import Testing
import WebPushCrypto

/// The simulator's push service (SPEC §16), called as the server calls it: subscriptions it makes, VAPID checked,
/// bodies decrypted, answers by the endpoint's last segment.
@Suite struct WebPushSimulatorTests {
    let simulator = FCMSimulator.everySide()
    let vapid = try! VAPID(key: try! P256PrivateKey.generate(), subject: "mailto:ops@example.com")
    let now = Clock.nowMillis()

    /// A subscription the simulator made: its id (the endpoint's last segment) and keys.
    func subscribe(_ name: String) throws -> (id: String, keys: WebPushKeys) {
        let answer = try simulator.call(
            "POST", "/webpush/subscriptions", body: #"{"name":"\#(name)","origin":"https://127.0.0.1:8443"}"#)
        #expect(answer.status == 201)
        let json = try JSON.parse(answer.body)
        let subscription = try WebPushSubscription(json: .object((json.objectValue ?? []).filter {
            $0.key != "private_key"
        }))
        #expect(subscription.endpoint.hasPrefix("https://127.0.0.1:8443/push/\(name)-"))
        #expect(json["private_key"]?.stringValue?.contains("BEGIN PRIVATE KEY") == true)
        return (String(subscription.endpoint.split(separator: "/").last ?? ""), subscription.keys)
    }

    func push(
        _ plaintext: String, to target: (id: String, keys: WebPushKeys), authorization: String? = nil,
        headers extra: [(name: String, value: String)] = [("ttl", "60"), ("content-encoding", "aes128gcm")]
    ) throws -> HTTPResponse {
        let body = try WebPushEncryption.encrypt(Array(plaintext.utf8), to: target.keys)
        let header = try authorization ?? vapid.authorization(origin: "https://127.0.0.1:8443", now: now)
        return try simulator.call(
            "POST", "/push/\(target.id)", headers: [("authorization", header)] + extra, bytes: body)
    }

    @Test func whatArrivesForItsSubscriptionsIsDecryptedAndLogged() throws {
        let target = try subscribe("laptop")
        let answer = try push(#"{"notification":{"title":"Hi"}}"#, to: target)
        #expect(answer.status == 201)
        #expect(answer.headers.contains { $0.name == "Location" })
        let logged = try #require(simulator.stats().requests.last?.message)
        #expect(logged["decrypted"]?["notification"]?["title"]?.stringValue == "Hi")
        #expect(logged["ttl"]?.stringValue == "60")
    }

    @Test func theEndpointsNameDecidesTheAnswer() throws {
        #expect(try push("{}", to: try subscribe("notreg")).status == 410)
        #expect(try push("{}", to: try subscribe("invalid")).status == 404)
        #expect(try push("{}", to: try subscribe("ratelimit-1")).status == 429)
        let unavailable = try subscribe("unavail-1")
        #expect(try push("{}", to: unavailable).status == 503)
        #expect(try push("{}", to: unavailable).status == 201, "only the first time")
    }

    @Test func whatAPushServiceWouldRefuseIsRefused() throws {
        let target = try subscribe("phone")
        let other = try VAPID(key: try P256PrivateKey.generate(), subject: "mailto:x@example.com")
        let forged = try vapid.authorization(origin: "https://127.0.0.1:8443", now: now)
            .replacingOccurrences(of: "k=" + vapid.publicKeyText, with: "k=" + other.publicKeyText)
        #expect(try push("{}", to: target, authorization: forged).status == 403, "a key that did not sign it")
        #expect(try push("{}", to: target, authorization: "WebPush abc").status == 403)
        #expect(try push("{}", to: target, headers: [("content-encoding", "aes128gcm")]).status == 400, "no TTL")
        #expect(try push("{}", to: target, headers: [("ttl", "60"), ("content-encoding", "aesgcm")]).status == 400)
        let stranger = try WebPushSubscriber.generate().keys
        #expect(try push("{}", to: (target.id, stranger)).status == 400, "encrypted to other keys: undecryptable")
    }
}
