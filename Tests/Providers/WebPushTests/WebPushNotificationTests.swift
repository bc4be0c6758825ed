import Queue
import Support
import Testing

@testable import Delivery
@testable import WebPush

private let now: Int64 = 1_700_000_000_000

private func message(
    _ payload: String, format: MessageFormat, ttl: Int = 3600, collapseKey: String? = nil
) -> ClaimedMessage {
    ClaimedMessage(
        id: "m1", app: "web", payload: payload, targetKind: .tokens, ttlSeconds: ttl, dryRun: false,
        expiresAt: now + Int64(ttl) * 1000, collapseKey: collapseKey, format: format)
}

private func render(_ message: ClaimedMessage) throws -> (headers: [String: String], plaintext: String) {
    let rendered = try WebPushNotification.render(message, now: now)
    let headers = Dictionary(rendered.headers.map { ($0.name, $0.value) }, uniquingKeysWith: { $1 })
    return (headers, String(decoding: rendered.plaintext, as: UTF8.self))
}

/// SPEC §16's rendering: the common `notification`/`data` with the `webpush` block's over them, its link, and
/// the `TTL`, `Urgency` and `Topic` headers.
@Suite struct WebPushNotificationTests {
    @Test func aV1WebpushBlockOverlaysTheCommonFields() throws {
        let payload = #"""
            {"notification":{"title":"Hi","body":"there"},"data":{"order":"42","kind":"a"},
             "webpush":{"headers":{"Urgency":"low","TTL":"60","Topic":"order-42"},
                        "notification":{"body":"from webpush","icon":"/i.png"},"data":{"kind":"b"},
                        "fcm_options":{"link":"https://example.com/o/42"}}}
            """#
        let (headers, plaintext) = try render(message(payload, format: .v1, ttl: 60, collapseKey: "ignored"))
        #expect(plaintext == #"""
            {"notification":{"title":"Hi","body":"from webpush","icon":"/i.png"},"data":{"order":"42","kind":"b"},"link":"https://example.com/o/42"}
            """#)
        #expect(headers == ["ttl": "60", "urgency": "low", "topic": "order-42"])
    }

    @Test func highPriorityIsUrgentAndTheCollapseKeyIsTheTopic() throws {
        let v1 = #"{"data":{"a":"b"},"android":{"priority":"HIGH","collapse_key":"score"}}"#
        let (headers, plaintext) = try render(message(v1, format: .v1, collapseKey: "score"))
        #expect(plaintext == #"{"data":{"a":"b"}}"#)
        #expect(headers == ["ttl": "3600", "urgency": "high", "topic": "score"])
        let legacy = #"{"priority":"normal","notification":{"title":"Goal","click_action":"https://e.x/g"}}"#
        let (legacyHeaders, legacyText) = try render(message(legacy, format: .legacy, collapseKey: "not a topic!"))
        #expect(legacyText == #"{"notification":{"title":"Goal","click_action":"https://e.x/g"},"link":"https://e.x/g"}"#)
        #expect(legacyHeaders == ["ttl": "3600", "urgency": "normal"], "a collapse key that is no Topic is left out")
    }

    @Test func theRemainingTTLIsSentAndZeroStaysZero() throws {
        var stored = message(#"{"data":{"a":"b"}}"#, format: .legacy, ttl: 600)
        stored.expiresAt = now + 90_000
        #expect(try render(stored).headers["ttl"] == "90")
        #expect(try render(message(#"{"data":{"a":"b"}}"#, format: .legacy, ttl: 0)).headers["ttl"] == "0")
    }

    @Test func morePlaintextThanOneRecordHoldsIsRefused() {
        let big = String(repeating: "x", count: WebPushNotification.maximumPlaintextBytes)
        #expect(throws: WebPushNotification.Unrenderable(reason: .messageTooBig)) {
            try WebPushNotification.render(message(#"{"data":{"a":"\#(big)"}}"#, format: .legacy), now: now)
        }
    }
}
