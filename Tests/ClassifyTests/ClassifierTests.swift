import Classify
import Queue
import Testing

private let now: Int64 = 1_700_000_000_000

private func classify(
    _ status: Int, _ body: String, targets: Int = 1, kind: TargetKind = .tokens, format: RequestFormat = .json,
    headers: [(name: String, value: String)] = []
) -> Classification {
    Classifier.classify(status: status, headers: headers, body: Array(body.utf8), targetCount: targets,
                        kind: kind, format: format, now: now)
}

@Suite struct ClassifierTests {
    // MARK: - SPEC §6, error codes

    struct ErrorRow: Sendable, CustomTestStringConvertible {
        let code: String
        let outcome: Outcome
        var testDescription: String { code }
    }

    static let errorRows: [ErrorRow] = [
        ErrorRow(code: "NotRegistered", outcome: .notRegistered),
        ErrorRow(code: "InvalidRegistration", outcome: .deadToken(reason: .invalidRegistration)),
        ErrorRow(code: "MismatchSenderId", outcome: .deadToken(reason: .mismatchSenderID)),
        ErrorRow(code: "InvalidPackageName", outcome: .deadToken(reason: .invalidPackageName)),
        ErrorRow(code: "MissingRegistration", outcome: .deadToken(reason: .missingRegistration)),
        ErrorRow(code: "MessageTooBig", outcome: .deadMessage(reason: .messageTooBig)),
        ErrorRow(code: "InvalidDataKey", outcome: .deadMessage(reason: .invalidDataKey)),
        ErrorRow(code: "InvalidTtl", outcome: .deadMessage(reason: .invalidTTL)),
        ErrorRow(code: "InvalidParameters", outcome: .deadMessage(reason: .invalidParameters)),
        ErrorRow(code: "Unavailable", outcome: .retry(reason: .unavailable)),
        ErrorRow(code: "InternalServerError", outcome: .retry(reason: .internalServerError)),
        ErrorRow(code: "DeviceMessageRateExceeded", outcome: .retrySlow(reason: .deviceMessageRateExceeded)),
        ErrorRow(code: "TopicsMessageRateExceeded", outcome: .retrySlow(reason: .topicsMessageRateExceeded)),
        ErrorRow(code: "InvalidApnsCredential", outcome: .pauseApp(reason: .invalidAPNsCredential)),
        ErrorRow(code: "SomethingNew", outcome: .retry(reason: .other("SomethingNew"))),
        ErrorRow(code: "notregistered", outcome: .retry(reason: .other("notregistered"))),
        ErrorRow(code: "", outcome: .retry(reason: .unknownError)),
        ErrorRow(code: "two words", outcome: .retry(reason: .unknownError)),
        ErrorRow(code: String(repeating: "A", count: 65), outcome: .retry(reason: .unknownError)),
    ]

    @Test(arguments: errorRows)
    func multicastResultErrorMapsByTable(_ row: ErrorRow) {
        let body = #"{"multicast_id":1,"success":1,"failure":1,"canonical_ids":0,"#
            + #""results":[{"message_id":"0:1"},{"error":"\#(row.code)"}]}"#
        let classification = classify(200, body, targets: 2)
        #expect(classification.outcomes == [.delivered(fcmMessageID: "0:1", canonicalToken: nil), row.outcome])
        #expect(!classification.closesGate)
        #expect(classification.retryAfterUntil == nil)
    }

    @Test(arguments: errorRows)
    func plainTextErrorMapsByTable(_ row: ErrorRow) {
        #expect(classify(200, "Error=\(row.code)\n", format: .plainText).outcomes == [row.outcome])
    }

    @Test(arguments: errorRows)
    func topicAndConditionErrorMapsByTable(_ row: ErrorRow) {
        #expect(classify(200, #"{"error":"\#(row.code)"}"#, kind: .topic).outcomes == [row.outcome])
        #expect(classify(200, #"{"error":"\#(row.code)"}"#, kind: .condition).outcomes == [row.outcome])
    }

    // MARK: - SPEC §6, HTTP status

    struct StatusRow: Sendable, CustomTestStringConvertible {
        let status: Int
        let body: String
        let outcome: Outcome
        let closesGate: Bool
        var testDescription: String { "\(status) \(body.prefix(40))" }
    }

    static let statusRows: [StatusRow] = [
        StatusRow(status: 400, body: "JSON_PARSING_ERROR: Unexpected character (x) at position 0.\n",
                  outcome: .deadMessage(reason: .invalidJSON), closesGate: false),
        StatusRow(status: 400, body: #"{"error":{"code":"InvalidJson","message":"body is not JSON"}}"#,
                  outcome: .deadMessage(reason: .invalidJSON), closesGate: false),
        StatusRow(status: 400, body: "InvalidParameters", outcome: .deadMessage(reason: .invalidParameters),
                  closesGate: false),
        StatusRow(status: 400, body: #"Field "time_to_live" must be a JSON number: abc"#,
                  outcome: .deadMessage(reason: .invalidParameters), closesGate: false),
        StatusRow(status: 400, body: "InvalidParameters: JSON_PARSING_ERROR in field data",
                  outcome: .deadMessage(reason: .invalidParameters), closesGate: false),
        StatusRow(status: 400, body: "", outcome: .deadMessage(reason: .invalidParameters), closesGate: false),
        StatusRow(status: 401, body: "<HTML><TITLE>Unauthorized</TITLE></HTML>",
                  outcome: .pauseApp(reason: .unauthorized), closesGate: false),
        StatusRow(status: 500, body: "", outcome: .retry(reason: .internalServerError), closesGate: true),
        StatusRow(status: 502, body: "", outcome: .retry(reason: .unavailable), closesGate: true),
        StatusRow(status: 503, body: #"{"results":[{"message_id":"x"}]}"#, outcome: .retry(reason: .unavailable),
                  closesGate: true),
        StatusRow(status: 504, body: "", outcome: .retry(reason: .unavailable), closesGate: true),
        StatusRow(status: 599, body: "", outcome: .retry(reason: .unavailable), closesGate: true),
        StatusRow(status: 403, body: "", outcome: .retry(reason: .httpStatus(403)), closesGate: false),
        StatusRow(status: 404, body: "", outcome: .retry(reason: .httpStatus(404)), closesGate: false),
        StatusRow(status: 429, body: "", outcome: .retry(reason: .httpStatus(429)), closesGate: false),
        StatusRow(status: 302, body: "", outcome: .retry(reason: .httpStatus(302)), closesGate: false),
        StatusRow(status: 204, body: "", outcome: .retry(reason: .httpStatus(204)), closesGate: false),
    ]

    @Test(arguments: statusRows)
    func statusAppliesToEveryTarget(_ row: StatusRow) {
        for format in [RequestFormat.json, .plainText] {
            let targets = format == .json ? 3 : 1
            let classification = classify(row.status, row.body, targets: targets, format: format)
            #expect(classification.outcomes == Array(repeating: row.outcome, count: targets))
            #expect(classification.closesGate == row.closesGate)
            #expect(classification.retryAfterUntil == nil)
        }
    }

    @Test func deliveredAndCanonicalInOneResult() {
        let body = #"{"multicast_id":7,"success":2,"failure":0,"canonical_ids":1,"results":["#
            + #"{"message_id":"0:1"},{"message_id":"0:2","registration_id":"NEW"}]}"#
        #expect(classify(200, body, targets: 2).outcomes == [
            .delivered(fcmMessageID: "0:1", canonicalToken: nil),
            .delivered(fcmMessageID: "0:2", canonicalToken: "NEW"),
        ])
    }

    // MARK: - The official example

    /// PROTOCOL.md: one message to tokens 4, 8, 15, 16, 23, 42.
    @Test func officialSixTokenExample() {
        let body = """
            { "multicast_id": 216, "success": 3, "failure": 3, "canonical_ids": 1,
              "results": [
                { "message_id": "1:0408" },
                { "error": "Unavailable" },
                { "error": "InvalidRegistration" },
                { "message_id": "1:1516" },
                { "message_id": "1:2342", "registration_id": "32" },
                { "error": "NotRegistered"} ] }
            """
        let classification = classify(200, body, targets: 6)
        #expect(classification.outcomes == [
            .delivered(fcmMessageID: "1:0408", canonicalToken: nil),
            .retry(reason: .unavailable),
            .deadToken(reason: .invalidRegistration),
            .delivered(fcmMessageID: "1:1516", canonicalToken: nil),
            .delivered(fcmMessageID: "1:2342", canonicalToken: "32"),
            .notRegistered,
        ])
        #expect(classification == Classification(outcomes: classification.outcomes, retryAfterUntil: nil,
                                                 closesGate: false))
    }

    struct PlainTextRow: Sendable, CustomTestStringConvertible {
        let body: String
        let outcome: Outcome
        var testDescription: String { body.debugDescription }
    }

    static let plainTextRows: [PlainTextRow] = [
        PlainTextRow(body: "id=1:0408\n", outcome: .delivered(fcmMessageID: "1:0408", canonicalToken: nil)),
        PlainTextRow(body: "Error=Unavailable", outcome: .retry(reason: .unavailable)),
        PlainTextRow(body: "Error=InvalidRegistration\n", outcome: .deadToken(reason: .invalidRegistration)),
        PlainTextRow(body: "id=1:2342\nregistration_id=32\n",
                     outcome: .delivered(fcmMessageID: "1:2342", canonicalToken: "32")),
        PlainTextRow(body: "id=1:2342\r\nregistration_id=32\r\n",
                     outcome: .delivered(fcmMessageID: "1:2342", canonicalToken: "32")),
        PlainTextRow(body: "\nid=1:2342\n\nregistration_id=32",
                     outcome: .delivered(fcmMessageID: "1:2342", canonicalToken: "32")),
        PlainTextRow(body: "Error=NotRegistered\n", outcome: .notRegistered),
        PlainTextRow(body: "id=0:a=b\n", outcome: .delivered(fcmMessageID: "0:a=b", canonicalToken: nil)),
        PlainTextRow(body: "id=1:1\nregistration_id=\n", outcome: .delivered(fcmMessageID: "1:1", canonicalToken: nil)),
        PlainTextRow(body: "", outcome: .retry(reason: .invalidResponse)),
        PlainTextRow(body: "id=\n", outcome: .retry(reason: .invalidResponse)),
        PlainTextRow(body: "registration_id=32\nid=1:1", outcome: .retry(reason: .invalidResponse)),
        PlainTextRow(body: "<html>oops</html>", outcome: .retry(reason: .invalidResponse)),
        PlainTextRow(body: #"{"message_id":"1:1"}"#, outcome: .retry(reason: .invalidResponse)),
    ]

    @Test(arguments: plainTextRows)
    func plainTextReply(_ row: PlainTextRow) {
        #expect(classify(200, row.body, format: .plainText).outcomes == [row.outcome])
    }

    @Test func plainTextWithInvalidUTF8Retries() {
        let classification = Classifier.classify(status: 200, headers: [], body: [0x69, 0x64, 0x3D, 0xFF, 0xFE],
                                                 targetCount: 1, kind: .tokens, format: .plainText, now: now)
        #expect(classification.outcomes == [.retry(reason: .invalidResponse)])
    }

    @Test func plainTextForSeveralTargetsIsAMismatch() {
        #expect(classify(200, "id=1:1", targets: 2, format: .plainText).outcomes
            == Array(repeating: .retry(reason: .mismatchedResults), count: 2))
    }

    // MARK: - Topics and conditions

    struct TopicRow: Sendable, CustomTestStringConvertible {
        let body: String
        let outcome: Outcome
        var testDescription: String { body }
    }

    static let topicRows: [TopicRow] = [
        TopicRow(body: #"{"message_id": 7317932311442893000}"#,
                 outcome: .delivered(fcmMessageID: "7317932311442893000", canonicalToken: nil)),
        TopicRow(body: #"{"message_id": 18446744073709551615}"#,
                 outcome: .delivered(fcmMessageID: "18446744073709551615", canonicalToken: nil)),
        TopicRow(body: #"{"message_id": 123456789012345678901234567890}"#,
                 outcome: .delivered(fcmMessageID: "123456789012345678901234567890", canonicalToken: nil)),
        TopicRow(body: #"{"message_id": 0}"#, outcome: .delivered(fcmMessageID: "0", canonicalToken: nil)),
        TopicRow(body: #"{"message_id": 1}"#, outcome: .delivered(fcmMessageID: "1", canonicalToken: nil)),
        TopicRow(body: #"{"message_id": "m-1"}"#, outcome: .delivered(fcmMessageID: "m-1", canonicalToken: nil)),
        TopicRow(body: #"{"error": "TopicsMessageRateExceeded"}"#,
                 outcome: .retrySlow(reason: .topicsMessageRateExceeded)),
        TopicRow(body: #"{"message_id": 1.5}"#, outcome: .retry(reason: .invalidResponse)),
        TopicRow(body: #"{"message_id": 1e3}"#, outcome: .retry(reason: .invalidResponse)),
        TopicRow(body: #"{"message_id": true}"#, outcome: .retry(reason: .invalidResponse)),
        TopicRow(body: #"{"message_id": ""}"#, outcome: .retry(reason: .invalidResponse)),
        TopicRow(body: #"{"message_id": null}"#, outcome: .retry(reason: .invalidResponse)),
        TopicRow(body: #"{"error": 5}"#, outcome: .retry(reason: .invalidResponse)),
        TopicRow(body: #"{}"#, outcome: .retry(reason: .invalidResponse)),
        TopicRow(body: #"{"multicast_id":1,"results":[{"message_id":"0:9"}]}"#,
                 outcome: .delivered(fcmMessageID: "0:9", canonicalToken: nil)),
    ]

    @Test(arguments: topicRows, [TargetKind.topic, .condition])
    func topicReply(_ row: TopicRow, kind: TargetKind) {
        #expect(classify(200, row.body, kind: kind).outcomes == [row.outcome])
    }

    @Test func topicShapedReplyToATokenRequestIsInvalid() {
        #expect(classify(200, #"{"message_id": 5}"#).outcomes == [.retry(reason: .invalidResponse)])
        #expect(classify(200, #"{"error": "NotRegistered"}"#).outcomes == [.retry(reason: .invalidResponse)])
    }

    // MARK: - Device groups

    static let deviceGroupRows: [TopicRow] = [
        TopicRow(body: #"{"success": 2, "failure": 0}"#, outcome: .delivered(fcmMessageID: nil, canonicalToken: nil)),
        TopicRow(body: #"{"success": 0, "failure": 0}"#, outcome: .delivered(fcmMessageID: nil, canonicalToken: nil)),
        TopicRow(body: #"{"success": 1, "failure": 2, "failed_registration_ids": ["a", "b"]}"#,
                 outcome: .retry(reason: .deviceGroupPartialFailure)),
        TopicRow(body: #"{"success": 0, "failure": 1, "failed_registration_ids": ["a"]}"#,
                 outcome: .retry(reason: .deviceGroupPartialFailure)),
        TopicRow(body: #"{"success": 1, "failure": 0, "failed_registration_ids": ["a"]}"#,
                 outcome: .retry(reason: .deviceGroupPartialFailure)),
        TopicRow(body: #"{"success": 1, "failure": "0"}"#, outcome: .retry(reason: .invalidResponse)),
        TopicRow(body: #"{"success": 1, "failure": -1}"#, outcome: .retry(reason: .invalidResponse)),
        TopicRow(body: #"{"success": 1, "failure": 0.0}"#, outcome: .retry(reason: .invalidResponse)),
    ]

    @Test(arguments: deviceGroupRows)
    func deviceGroupReply(_ row: TopicRow) {
        #expect(classify(200, row.body).outcomes == [row.outcome])
    }

    // MARK: - Result counts and hostile bodies

    @Test(arguments: [0, 1, 5, 7])
    func resultCountOtherThanTargetsRetriesEveryTarget(_ resultCount: Int) {
        let results = Array(repeating: #"{"message_id":"0:1"}"#, count: resultCount).joined(separator: ",")
        let body = #"{"multicast_id":1,"success":\#(resultCount),"failure":0,"results":[\#(results)]}"#
        #expect(classify(200, body, targets: 6).outcomes
            == Array(repeating: .retry(reason: .mismatchedResults), count: 6))
    }

    @Test func deviceGroupOrTopicReplyForSeveralTargetsIsAMismatch() {
        #expect(classify(200, #"{"success":1,"failure":0}"#, targets: 2).outcomes
            == Array(repeating: .retry(reason: .mismatchedResults), count: 2))
        #expect(classify(200, #"{"message_id":1}"#, targets: 2, kind: .topic).outcomes
            == Array(repeating: .retry(reason: .mismatchedResults), count: 2))
    }

    static let garbageBodies: [String] = [
        "",
        "not json",
        "<html><body>502 Bad Gateway</body></html>",
        "null",
        "42",
        #""results""#,
        "[1, 2, 3]",
        #"{"multicast_id":1,"success":3,"failure":0,"canonical_ids":0}"#,
        #"{"results": "none"}"#,
        #"{"results": {"0": {"message_id": "x"}}}"#,
        #"{"multicast_id":1,"results":[{"message_id":"1:0408"},"#,
        String(repeating: "[", count: 100_000),
        #"{"results":"# + String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000) + "}",
        "{\"results\":[{\"message_id\":\"\\ud800\"}]}",
    ]

    @Test(arguments: garbageBodies)
    func garbageBodyRetriesEveryTarget(_ body: String) {
        let classification = classify(200, body, targets: 3)
        #expect(classification.outcomes == Array(repeating: .retry(reason: .invalidResponse), count: 3))
        #expect(!classification.closesGate)
    }

    @Test func invalidUTF8BodyRetriesEveryTarget() {
        let body: [UInt8] = Array(#"{"results":[{"message_id":""#.utf8) + [0xC3, 0x28] + Array(#""}]}"#.utf8)
        let classification = Classifier.classify(status: 200, headers: [], body: body, targetCount: 1,
                                                 kind: .tokens, format: .json, now: now)
        #expect(classification.outcomes == [.retry(reason: .invalidResponse)])
    }

    /// A malformed entry costs only its own target a retry; its neighbours' answers stand.
    @Test func malformedResultEntryRetriesOnlyItsTarget() {
        let body = #"{"results":[{"message_id":"0:1"}, 7, {}, {"error": 3}, {"message_id": false},"#
            + #"{"message_id":"0:6","registration_id":5}, {"message_id":"0:7","error":"NotRegistered"}]}"#
        #expect(classify(200, body, targets: 7).outcomes == [
            .delivered(fcmMessageID: "0:1", canonicalToken: nil),
            .retry(reason: .invalidResponse),
            .retry(reason: .invalidResponse),
            .retry(reason: .invalidResponse),
            .retry(reason: .invalidResponse),
            .delivered(fcmMessageID: "0:6", canonicalToken: nil),
            .notRegistered,
        ])
    }

    @Test func zeroOrNegativeTargetCountGivesNoOutcomes() {
        #expect(classify(200, #"{"results":[]}"#, targets: 0).outcomes.isEmpty)
        #expect(classify(503, "", targets: -2).outcomes.isEmpty)
        #expect(Classifier.transportFailure(reason: .other("Timeout"), targetCount: -1).outcomes.isEmpty)
    }

    // MARK: - Retry-After and the gate

    @Test func unavailableWithRetryAfterSecondsClosesTheGateUntilThen() {
        let classification = classify(503, "", targets: 2, headers: [("Retry-After", "120")])
        #expect(classification == Classification(outcomes: Array(repeating: .retry(reason: .unavailable), count: 2),
                                                 retryAfterUntil: now + 120_000, closesGate: true))
    }

    @Test func unavailableWithRetryAfterHTTPDateClosesTheGateUntilThen() {
        // 1_700_000_000 s is Tue, 14 Nov 2023 22:13:20 GMT.
        let classification = classify(503, "", headers: [("Retry-After", "Tue, 14 Nov 2023 22:15:20 GMT")])
        #expect(classification.retryAfterUntil == now + 120_000)
        #expect(classification.closesGate)
        #expect(classification.outcomes == [.retry(reason: .unavailable)])
    }

    @Test(arguments: ["retry-after", "RETRY-AFTER"])
    func lowerAndUpperCaseHeaderNamesAreRead(_ name: String) {
        let classification = classify(503, "", headers: [("content-type", "text/plain"), (name, "30")])
        #expect(classification.retryAfterUntil == now + 30_000)
    }

    @Test func retryAfterOnASuccessStillClosesTheGate() {
        let classification = classify(200, #"{"results":[{"message_id":"0:1"}]}"#, headers: [("Retry-After", "10")])
        #expect(classification.outcomes == [.delivered(fcmMessageID: "0:1", canonicalToken: nil)])
        #expect(classification.retryAfterUntil == now + 10_000)
        #expect(classification.closesGate)
    }

    @Test func unparsableRetryAfterIsIgnoredButA5xxStillClosesTheGate() {
        let failure = classify(503, "", headers: [("Retry-After", "whenever")])
        #expect(failure.retryAfterUntil == nil)
        #expect(failure.closesGate)
        let success = classify(200, #"{"results":[{"message_id":"0:1"}]}"#, headers: [("Retry-After", "whenever")])
        #expect(success.retryAfterUntil == nil)
        #expect(!success.closesGate)
    }

    @Test func retryAfterOn429ClosesTheGate() {
        let classification = classify(429, "", headers: [("Retry-After", "60")])
        #expect(classification.outcomes == [.retry(reason: .httpStatus(429))])
        #expect(classification.retryAfterUntil == now + 60_000)
        #expect(classification.closesGate)
    }

    @Test func transportFailureRetriesEveryTargetAndClosesTheGate() {
        #expect(Classifier.transportFailure(reason: .other("Timeout"), targetCount: 3) == Classification(
            outcomes: Array(repeating: .retry(reason: .other("Timeout")), count: 3), retryAfterUntil: nil,
            closesGate: true))
    }
}
