import Queue
import Support
import Testing

@testable import APNs
@testable import Delivery

private let now: Int64 = 1_700_000_000_000

private func message(
    _ payload: String, format: MessageFormat, ttl: Int = 3600, collapseKey: String? = nil
) -> ClaimedMessage {
    ClaimedMessage(
        id: "m1", app: "ios", payload: payload, targetKind: .tokens, ttlSeconds: ttl, dryRun: false,
        expiresAt: now + Int64(ttl) * 1000, collapseKey: collapseKey, format: format)
}

private func render(_ message: ClaimedMessage) throws -> (headers: [String: String], order: [String], body: JSON) {
    let rendered = try APNsNotification.render(message, topic: "com.example.app", now: now)
    let headers = Dictionary(rendered.headers.map { ($0.name, $0.value) }, uniquingKeysWith: { $1 })
    return (headers, rendered.headers.map(\.name), try JSON.parse(rendered.body))
}

/// SPEC §15's rendering: the v1 `apns` block as it came, the common fields where it is silent, legacy mapped.
@Suite struct APNsNotificationTests {
    @Test func aV1ApnsBlockGoesOutAsItCameWithTheCommonFieldsWhereItIsSilent() throws {
        let payload = #"""
            {"notification":{"title":"Hi","body":"there"},"data":{"order":"42","aps":"not this"},
             "apns":{"headers":{"apns-priority":"5","apns-collapse-id":"c1","apns-topic":"ignored"},
                     "payload":{"aps":{"badge":3,"sound":"ping.caf"},"order":"from apns","extra":"x"}}}
            """#
        let (headers, _, body) = try render(message(payload, format: .v1))
        #expect(headers["apns-priority"] == "5")
        #expect(headers["apns-collapse-id"] == "c1")
        #expect(headers["apns-push-type"] == "alert")
        #expect(headers["apns-topic"] == "com.example.app")
        #expect(headers["apns-expiration"] == String((now + 3_600_000) / 1000))
        #expect(body["aps"] == JSON.object([
            ("alert", .object([("title", "Hi"), ("body", "there")])), ("badge", .int(3)), ("sound", "ping.caf"),
        ]))
        #expect(body["order"]?.stringValue == "from apns", "the apns payload's own key wins over data")
        #expect(body["extra"]?.stringValue == "x")
    }

    @Test func aLegacyMessageIsMapped() throws {
        let payload = #"""
            {"to":"t","priority":"high","collapse_key":"score","content_available":true,
             "notification":{"title":"Goal","body":"2-1","badge":"7","sound":"default","click_action":"GOAL"},
             "data":{"match":"9"}}
            """#
        let (headers, _, body) = try render(message(payload, format: .legacy, collapseKey: "score"))
        #expect(headers["apns-priority"] == "10")
        #expect(headers["apns-collapse-id"] == "score")
        #expect(headers["apns-push-type"] == "alert")
        let aps = try #require(body["aps"])
        #expect(aps["alert"] == JSON.object([("title", "Goal"), ("body", "2-1")]))
        #expect(aps["badge"]?.int64Value == 7)
        #expect(aps["sound"]?.stringValue == "default")
        #expect(aps["category"]?.stringValue == "GOAL")
        #expect(aps["content-available"]?.int64Value == 1)
        #expect(body["match"]?.stringValue == "9")
    }

    @Test func aSilentPushIsBackgroundAtPriorityFive() throws {
        let (headers, _, _) = try render(message(
            #"{"apns":{"payload":{"aps":{"content-available":1}}},"data":{"sync":"1"}}"#, format: .v1))
        #expect(headers["apns-push-type"] == "background")
        #expect(headers["apns-priority"] == "5")
    }

    @Test func ttlZeroIsExpirationZeroAndAVoIPPushGetsItsTopicSuffix() throws {
        let (headers, _, _) = try render(message(
            #"{"apns":{"headers":{"apns-push-type":"voip"},"payload":{"aps":{}}}}"#, format: .v1, ttl: 0))
        #expect(headers["apns-expiration"] == "0")
        #expect(headers["apns-topic"] == "com.example.app.voip")
    }

    @Test func aBodyOverAPNsLimitIsADeadLetterForTheMessage() {
        let big = String(repeating: "x", count: 4100)
        #expect(throws: APNsNotification.Unrenderable(reason: .apns(.payloadTooLarge))) {
            try APNsNotification.render(
                message(#"{"data":{"big":"\#(big)"}}"#, format: .v1), topic: "com.example.app", now: now)
        }
    }

    @Test func theApnsIDIsTheDeliverysIdAsAUUID() {
        #expect(APNsNotification.apnsID(delivery: 42) == "00000000-0000-4000-8000-00000000002a")
        #expect(APNsNotification.apnsID(delivery: Int64.max) == "00000000-0000-4007-8fff-ffffffffffff")
    }
}
