import Support
import Testing

@testable import Classify
@testable import WebPush

private let now: Int64 = 1_700_000_000_000

/// SPEC §16's outcomes, row by row, with what push services answer.
@Suite struct WebPushClassifierTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let status: Int
        var headers: [(name: String, value: String)] = []
        let outcome: Outcome
        var closesGate = false
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "201 Created keeps the Location", status: 201,
            headers: [("location", "https://fcm.googleapis.com/0:1700000000%7cabc")],
            outcome: .delivered(fcmMessageID: "https://fcm.googleapis.com/0:1700000000%7cabc", canonicalToken: nil)),
        Row(name: "201 without a Location", status: 201, outcome: .delivered(fcmMessageID: nil, canonicalToken: nil)),
        Row(name: "a Location too long to keep", status: 201,
            headers: [("location", "https://push.example/" + String(repeating: "x", count: 300))],
            outcome: .delivered(fcmMessageID: nil, canonicalToken: nil)),
        Row(name: "404: the subscription expired", status: 404,
            outcome: .unregistered(reason: .httpStatus(404), since: nil)),
        Row(name: "410: unsubscribed", status: 410, outcome: .unregistered(reason: .httpStatus(410), since: nil)),
        Row(name: "400: a malformed request ends this delivery only", status: 400,
            outcome: .deadToken(reason: .httpStatus(400))),
        Row(name: "413: the payload too large for this push service", status: 413,
            outcome: .deadToken(reason: .httpStatus(413))),
        Row(name: "401: VAPID refused gates the origin", status: 401, outcome: .senderRefused(reason: .httpStatus(401)),
            closesGate: true),
        Row(name: "403: the key is not the subscription's", status: 403,
            outcome: .senderRefused(reason: .httpStatus(403)), closesGate: true),
        Row(name: "429 with Retry-After", status: 429, headers: [("retry-after", "30")],
            outcome: .retry(reason: .httpStatus(429)), closesGate: true),
        Row(name: "429 without Retry-After", status: 429, outcome: .retry(reason: .httpStatus(429)), closesGate: true),
        Row(name: "500", status: 500, outcome: .retry(reason: .httpStatus(500)), closesGate: true),
        Row(name: "503 with Retry-After", status: 503, headers: [("retry-after", "120")],
            outcome: .retry(reason: .httpStatus(503)), closesGate: true),
        Row(name: "an unknown 4xx ends this delivery only", status: 422, outcome: .deadToken(reason: .httpStatus(422))),
    ]

    @Test(arguments: rows) func theTable(_ row: Row) {
        let classification = WebPushClassifier.classify(status: row.status, headers: row.headers, now: now)
        #expect(classification.outcomes == [row.outcome])
        #expect(classification.closesGate == row.closesGate)
        #expect(!classification.credentialRenewedTooOften)
    }

    @Test func retryAfterIsHonoured() {
        let classification = WebPushClassifier.classify(status: 429, headers: [("retry-after", "120")], now: now)
        #expect(classification.retryAfterUntil == now + 120_000)
    }

    @Test func aDayLongRetryAfterHoldsTheOriginAnHourAtMost() {
        let classification = WebPushClassifier.classify(status: 429, headers: [("retry-after", "86400")], now: now)
        #expect(classification.retryAfterUntil == now + 3_600_000)
        #expect(classification.closesGate)
    }

    @Test func noAnswerPausesTheAppOrEndsTheMessage() {
        for status in [400, 401, 403, 404, 410, 413, 422, 429, 500, 503] {
            let outcome = WebPushClassifier.classify(status: status, headers: [], now: now).outcomes
            #expect(!outcome.contains { if case .pauseApp = $0 { true } else { false } }, "\(status)")
            #expect(!outcome.contains { if case .deadMessage = $0 { true } else { false } }, "\(status)")
        }
    }

    /// SPEC §19: an endpoint whose every address the policy refused ends that delivery, and says nothing about the
    /// origin; any other failure is a fault of the origin, retried.
    @Test func aForbiddenAddressEndsTheDeliveryAndOtherFailuresRetry() {
        let forbidden = WebPushClassifier.classify(failure: DeliveryReason(stored: "ForbiddenAddress"))
        #expect(forbidden.outcomes == [.deadToken(reason: .forbiddenAddress)])
        #expect(!forbidden.closesGate)
        let reset = WebPushClassifier.classify(failure: DeliveryReason(stored: "reset"))
        #expect(reset.outcomes == [.retry(reason: .other("reset"))])
        #expect(reset.closesGate)
    }
}
