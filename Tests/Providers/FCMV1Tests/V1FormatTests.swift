import Classify
import Queue
import Send
import Support
import Testing

@testable import Delivery
@testable import FCMLegacy
@testable import FCMV1

/// Messages that arrived in FCM v1 shape (SPEC §13): sent to v1 apps as they came, with only the target and the
/// remaining TTL filled in; mapped down for legacy apps.
@Suite struct V1FormatTests {
    let now: Int64 = 1_700_000_000_000

    static let full = """
        {"data":{"score":"4x8"},"notification":{"title":"t","body":"b","image":"https://x/i.png"},\
        "android":{"ttl":"600s","priority":"high","collapse_key":"score","direct_boot_ok":true,\
        "notification":{"channel_id":"c","icon":"ic","body_loc_args":["a"]},"data":{"extra":"1"}},\
        "apns":{"headers":{"apns-priority":"10","apns-expiration":"1700000600"},\
        "payload":{"aps":{"badge":3,"sound":"s","category":"MATCH","content-available":1,\
        "alert":{"title":"t","subtitle":"sub"}},"custom":{"k":[1,2]}}},\
        "webpush":{"headers":{"TTL":"300","Urgency":"high"},"data":{"w":"1"}},\
        "fcm_options":{"analytics_label":"l"}}
        """

    /// A v1 message claimed `elapsed` seconds after it was accepted with a TTL of `ttl`.
    func message(_ payload: String = full, ttl: Int = 600, elapsed: Int64 = 0, dryRun: Bool = false,
                 kind: TargetKind = .tokens, field: TokenField = .token) -> ClaimedMessage {
        ClaimedMessage(id: "m1", app: "default", payload: payload, targetKind: kind, ttlSeconds: ttl, dryRun: dryRun,
                       expiresAt: now + Int64(ttl) * 1000 - elapsed * 1000, format: .v1, tokenField: field)
    }

    func v1Body(_ message: ClaimedMessage, _ target: String = "tok-1", _ kind: TargetKind = .tokens) -> String {
        let elapsed = message.ttlSeconds > 0 ? message.ttlSeconds - message.remainingTTL(now: now) : 0
        return String(decoding: V1Template(message).body(target: target, kind: kind, elapsedSeconds: elapsed),
                      as: UTF8.self)
    }

    // MARK: - To v1 apps

    @Test func theMessageGoesAsSentWithTargetAndRemainingTTLFilledIn() throws {
        let body = v1Body(message(elapsed: 100, dryRun: true))
        let expected = #"{"validate_only":true,"message":{"token":"tok-1","#
            + String(Self.full.dropFirst())
                .replacingOccurrences(of: #""ttl":"600s""#, with: #""ttl":"500s""#)
                .replacingOccurrences(of: #""TTL":"300""#, with: #""TTL":"200""#) + "}"
        #expect(body == expected, "byte for byte: every block as received, only the TTLs count down")
        #expect(body.contains(#""apns-expiration":"1700000600""#), "an absolute expiry is already right")
        #expect(try JSON.parse(Array(body.utf8))["message"]?["apns"]?["payload"]?["custom"] != nil)
    }

    @Test func aTTLNeverGoesBelowZeroAndAMissingOneIsNotAdded() {
        #expect(v1Body(message(#"{"webpush":{"headers":{"TTL":"30"}}}"#, elapsed: 100))
            == #"{"validate_only":false,"message":{"token":"tok-1","webpush":{"headers":{"TTL":"0"}}}}"#)
        #expect(v1Body(message(#"{"data":{"a":"b"}}"#, elapsed: 100))
            == #"{"validate_only":false,"message":{"token":"tok-1","data":{"a":"b"}}}"#)
        #expect(v1Body(message("{}"))
            == #"{"validate_only":false,"message":{"token":"tok-1"}}"#)
    }

    @Test func eachTargetKindGoesInItsOwnField() {
        #expect(v1Body(message("{}", field: .fid), "fid-1")
            == #"{"validate_only":false,"message":{"fid":"fid-1"}}"#)
        #expect(v1Body(message("{}", kind: .topic), "/topics/news", .topic)
            == #"{"validate_only":false,"message":{"topic":"news"}}"#)
        #expect(v1Body(message("{}", kind: .condition), "'a' in topics", .condition)
            == #"{"validate_only":false,"message":{"condition":"'a' in topics"}}"#)
        #expect(v1Body(message("{}"), "quote\"d") == #"{"validate_only":false,"message":{"token":"quote\"d"}}"#)
    }

    @Test func theV1ProviderRendersOnceAndSplicesEachTarget() throws {
        let endpoint = try TestTokenEndpoint()
        defer { endpoint.shutdown() }
        let provider = V1Provider(
            app: "default", account: testAccount(), projectID: "p", endpoint: "http://x", tokenURI: endpoint.url,
            tokenPool: HTTPClientPool(maxConnectionsPerHost: 1, name: "t"))
        let stored = message(#"{"android":{"ttl":"60s"}}"#, ttl: 60, field: .fid)
        let requests = provider.requests(
            for: stored, deliveries: ["f1", "f2"].enumerated().map {
                ClaimedDelivery(id: Int64($0.offset), messageID: "m1", token: $0.element, attempts: 0)
            }, credential: "t", now: now)
        #expect(requests.map { String(decoding: $0.outbound.body, as: UTF8.self) } == [
            #"{"validate_only":false,"message":{"fid":"f1","android":{"ttl":"60s"}}}"#,
            #"{"validate_only":false,"message":{"fid":"f2","android":{"ttl":"60s"}}}"#,
        ])
    }

    // MARK: - To legacy apps

    @Test func aV1MessageMapsDownToLegacyFields() throws {
        let provider = LegacyProvider(app: "default", endpoint: "http://x/fcm/send", serverKey: "k")
        let requests = provider.requests(
            for: message(elapsed: 100, dryRun: true),
            deliveries: [ClaimedDelivery(id: 1, messageID: "m1", token: "tok-1", attempts: 0)], now: now)
        let body = String(decoding: try #require(requests.first).outbound.body, as: UTF8.self)
        #expect(body == """
            {"to":"tok-1","collapse_key":"score","priority":"high","content_available":true,\
            "data":{"score":"4x8","extra":"1"},\
            "notification":{"title":"t","body":"b","image":"https://x/i.png","icon":"ic","body_loc_args":["a"],\
            "android_channel_id":"c","badge":"3","sound":"s","click_action":"MATCH","subtitle":"sub"},\
            "dry_run":true,"time_to_live":500}
            """)
    }

    @Test func apnsHeadersStandInWhereAndroidSaysNothing() {
        let members = LegacyMessage.members(fromV1: try! JSON.parse(Array(
            #"{"apns":{"headers":{"apns-priority":"5","apns-collapse-id":"c"}}}"#.utf8)))
        #expect(JSON.object(members).serialized() == #"{"collapse_key":"c","priority":"normal"}"#)
    }
}
