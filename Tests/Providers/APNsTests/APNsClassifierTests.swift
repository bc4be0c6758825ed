import Support
import Testing

@testable import APNs
@testable import Classify

private let now: Int64 = 1_700_000_000_000

private func reason(_ text: String, timestamp: Int64? = nil) -> String {
    timestamp.map { #"{"reason":"\#(text)","timestamp":\#($0)}"# } ?? #"{"reason":"\#(text)"}"#
}

/// SPEC §15's table, row by row, with the bodies Apple sends.
@Suite struct APNsClassifierTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let status: Int
        let body: String
        var headers: [(name: String, value: String)] = []
        let outcome: Outcome
        var closesGate = false
        var mayRenew = true
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "200 with apns-id", status: 200, body: "",
            headers: [("apns-id", "9a6f2d8c-0000-4000-8000-00000000002a")],
            outcome: .delivered(fcmMessageID: "9a6f2d8c-0000-4000-8000-00000000002a", canonicalToken: nil)),
        Row(name: "410 Unregistered with timestamp", status: 410, body: reason("Unregistered", timestamp: now - 60),
            outcome: .unregistered(reason: .apns(.unregistered), since: now - 60)),
        Row(name: "410 Unregistered without timestamp", status: 410, body: reason("Unregistered"),
            outcome: .unregistered(reason: .apns(.unregistered), since: nil)),
        Row(name: "410 ExpiredToken", status: 410, body: reason("ExpiredToken", timestamp: now),
            outcome: .unregistered(reason: .apns(.expiredToken), since: now)),
        Row(name: "400 BadDeviceToken", status: 400, body: reason("BadDeviceToken"),
            outcome: .invalidToken(reason: .apns(.badDeviceToken))),
        Row(name: "400 DeviceTokenNotForTopic", status: 400, body: reason("DeviceTokenNotForTopic"),
            outcome: .invalidToken(reason: .apns(.deviceTokenNotForTopic))),
        Row(name: "400 PayloadEmpty", status: 400, body: reason("PayloadEmpty"),
            outcome: .deadMessage(reason: .apns(.payloadEmpty))),
        Row(name: "400 BadCollapseId", status: 400, body: reason("BadCollapseId"),
            outcome: .deadMessage(reason: .apns(.badCollapseID))),
        Row(name: "400 BadExpirationDate", status: 400, body: reason("BadExpirationDate"),
            outcome: .deadMessage(reason: .apns(.badExpirationDate))),
        Row(name: "400 BadPriority", status: 400, body: reason("BadPriority"),
            outcome: .deadMessage(reason: .apns(.badPriority))),
        Row(name: "413 PayloadTooLarge", status: 413, body: reason("PayloadTooLarge"),
            outcome: .deadMessage(reason: .apns(.payloadTooLarge))),
        Row(name: "413 without a body", status: 413, body: "", outcome: .deadMessage(reason: .httpStatus(413))),
        Row(name: "403 ExpiredProviderToken, first time", status: 403, body: reason("ExpiredProviderToken"),
            outcome: .requeue(reason: .apns(.expiredProviderToken))),
        Row(name: "403 ExpiredProviderToken, again", status: 403, body: reason("ExpiredProviderToken"),
            outcome: .pauseApp(reason: .apns(.expiredProviderToken)), mayRenew: false),
        Row(name: "403 InvalidProviderToken", status: 403, body: reason("InvalidProviderToken"),
            outcome: .pauseApp(reason: .apns(.invalidProviderToken))),
        Row(name: "403 BadCertificate", status: 403, body: reason("BadCertificate"),
            outcome: .pauseApp(reason: .apns(.badCertificate))),
        Row(name: "403 Forbidden", status: 403, body: reason("Forbidden"),
            outcome: .pauseApp(reason: .apns(.forbidden))),
        Row(name: "400 BadTopic", status: 400, body: reason("BadTopic"),
            outcome: .pauseApp(reason: .apns(.badTopic))),
        Row(name: "400 TopicDisallowed", status: 400, body: reason("TopicDisallowed"),
            outcome: .pauseApp(reason: .apns(.topicDisallowed))),
        Row(name: "429 TooManyRequests: slow lane, no gate", status: 429, body: reason("TooManyRequests"),
            headers: [("retry-after", "30")], outcome: .retrySlow(reason: .apns(.tooManyRequests))),
        Row(name: "429 TooManyProviderTokenUpdates", status: 429, body: reason("TooManyProviderTokenUpdates"),
            outcome: .retry(reason: .apns(.tooManyProviderTokenUpdates))),
        Row(name: "500 InternalServerError", status: 500, body: reason("InternalServerError"),
            outcome: .retry(reason: .internalServerError), closesGate: true),
        Row(name: "503 ServiceUnavailable", status: 503, body: reason("ServiceUnavailable"),
            outcome: .retry(reason: .apns(.serviceUnavailable)), closesGate: true),
        Row(name: "503 Shutdown", status: 503, body: reason("Shutdown"),
            outcome: .retry(reason: .apns(.shutdown)), closesGate: true),
        Row(name: "an unknown reason on 400", status: 400, body: reason("SomethingNew"),
            outcome: .deadMessage(reason: .other("SomethingNew"))),
        Row(name: "an unknown reason on 500", status: 502, body: reason("SomethingNew"),
            outcome: .retry(reason: .other("SomethingNew")), closesGate: true),
        Row(name: "a hostile reason is not stored", status: 400, body: reason("<script>x</script>"),
            outcome: .deadMessage(reason: .unknownError)),
        Row(name: "garbage on 503", status: 503, body: "<html>", outcome: .retry(reason: .httpStatus(503)),
            closesGate: true),
    ]

    @Test(arguments: rows) func theTable(_ row: Row) {
        let classification = APNsClassifier.classify(
            status: row.status, headers: row.headers, body: Array(row.body.utf8), now: now,
            mayRenewCredentials: row.mayRenew)
        #expect(classification.outcomes == [row.outcome])
        #expect(classification.closesGate == row.closesGate)
        let tooOften = row.outcome == .retry(reason: .apns(.tooManyProviderTokenUpdates))
        #expect(classification.credentialRenewedTooOften == tooOften,
                "only TooManyProviderTokenUpdates asks for the provider token to be kept longer")
    }

    @Test func aRetryAfterOnAServerErrorIsAFloorAndClosesTheGate() {
        let classification = APNsClassifier.classify(
            status: 503, headers: [("retry-after", "120")], body: Array(reason("ServiceUnavailable").utf8), now: now,
            mayRenewCredentials: true)
        #expect(classification.retryAfterUntil == now + 120_000)
        #expect(classification.closesGate)
    }
}
