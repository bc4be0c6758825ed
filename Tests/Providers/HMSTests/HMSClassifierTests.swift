import Classify
import Support
import Testing

@testable import HMS

private let now: Int64 = 1_700_000_000_000

private func reply(_ code: String, _ msg: String = "x") -> String {
    JSON.object([("code", .string(code)), ("msg", .string(msg)), ("requestId", "r-1")]).serialized()
}

private let delivered = Outcome.delivered(fcmMessageID: "r-1", canonicalToken: nil)

/// SPEC §21's table and the digest's codes (docs/hms-protocol.md), row by row, for a request of two tokens.
@Suite struct HMSClassifierTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let status: Int
        let body: String
        var headers: [(name: String, value: String)] = []
        let outcomes: [Outcome]
        var closesGate = false
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "80000000 success", status: 200, body: reply("80000000", "Success"),
            outcomes: [delivered, delivered]),
        Row(name: "80100000 partial: illegal_tokens in msg, a JSON string", status: 200,
            body: reply("80100000", #"{"success":1,"failure":1,"illegal_tokens":["t2"]}"#),
            outcomes: [delivered, .notRegistered]),
        Row(name: "80100000 partial in HarmonyOS's words: illegalTokens by cause", status: 200,
            body: reply("80100000", #"{"illegalTokens":{"tokenFormatError":["t1"]},"success":1,"failure":1}"#),
            outcomes: [.notRegistered, delivered]),
        Row(name: "80100000 with a msg that names nothing: delivered, never sent again", status: 200,
            body: reply("80100000", "Some tokens are failed"), outcomes: [delivered, delivered]),
        Row(name: "80100001 parameter error", status: 400, body: reply("80100001"),
            outcomes: dead(.invalidParameter)),
        Row(name: "80100003 message structure", status: 400, body: reply("80100003"),
            outcomes: dead(.invalidMessageStructure)),
        Row(name: "80100004 TTL earlier than now", status: 400, body: reply("80100004"), outcomes: dead(.ttlBeforeNow)),
        Row(name: "80100013 collapse_key", status: 400, body: reply("80100013"), outcomes: dead(.invalidCollapseKey)),
        Row(name: "80300008 message over 4 KB", status: 400, body: reply("80300008"), outcomes: dead(.messageTooBig)),
        Row(name: "80300010 token count", status: 400, body: reply("80300010"), outcomes: dead(.invalidTokenCount)),
        Row(name: "80300011 high urgency not allowed", status: 400, body: reply("80300011"),
            outcomes: dead(.highUrgencyNotAllowed)),
        Row(name: "an unknown 801 code is a parameter error too", status: 400, body: reply("80100016"),
            outcomes: Array(repeating: .deadMessage(reason: .other("80100016")), count: 2)),
        Row(name: "80200001 auth error: renewed once (the credentials decide)", status: 401, body: reply("80200001"),
            outcomes: requeue(.oauthAuthenticationError)),
        Row(name: "80200003 token expired: renewed, not an attempt", status: 401, body: reply("80200003"),
            outcomes: requeue(.oauthTokenExpired)),
        Row(name: "80300002 no permission pauses the app", status: 403, body: reply("80300002"),
            outcomes: Array(repeating: .pauseApp(reason: HMSCode.noPermission.reason), count: 2)),
        Row(name: "80300007 all tokens invalid: dead letters, the registry kept", status: 400,
            body: reply("80300007", "All the tokens are invalid"),
            outcomes: Array(repeating: .deadToken(reason: HMSCode.allTokensInvalid.reason), count: 2)),
        Row(name: "81000001 internal error", status: 500, body: reply("81000001"),
            outcomes: retry(HMSCode.internalError.reason), closesGate: true),
        Row(name: "80600003 OAuth service failed", status: 200, body: reply("80600003"),
            outcomes: retry(HMSCode.oauthServerError.reason)),
        Row(name: "HTTP 503 flow control without a code", status: 503, body: "Service Unavailable",
            outcomes: retry(.httpStatus(503)), closesGate: true),
        Row(name: "HTTP 503 with Retry-After", status: 503, body: "", headers: [("Retry-After", "7")],
            outcomes: retry(.httpStatus(503)), closesGate: true),
        Row(name: "HTTP 500", status: 500, body: "", outcomes: retry(.httpStatus(500)), closesGate: true),
        Row(name: "HTTP 502 from a proxy", status: 502, body: "<html>Bad Gateway</html>",
            outcomes: retry(.httpStatus(502)), closesGate: true),
        Row(name: "HTTP 429, undocumented: taken as flow control", status: 429, body: "",
            outcomes: retry(.httpStatus(429)), closesGate: true),
        Row(name: "HTTP 401 without a code: the token renewed", status: 401, body: "",
            outcomes: Array(repeating: .requeue(reason: .httpStatus(401)), count: 2)),
        Row(name: "200 that is not Huawei's answer", status: 200, body: "<html>",
            outcomes: retry(.invalidResponse)),
        Row(name: "an unknown code is retried under its own name", status: 200, body: reply("89999999"),
            outcomes: retry(.other("89999999"))),
        Row(name: "a code that is no code", status: 200, body: reply("<script>"), outcomes: retry(.unknownError)),
        Row(name: "a numeric code", status: 200, body: #"{"code":80000000,"msg":"Success","requestId":"r-1"}"#,
            outcomes: [delivered, delivered]),
    ]

    private static func dead(_ code: HMSCode) -> [Outcome] {
        Array(repeating: .deadMessage(reason: code.reason), count: 2)
    }

    private static func requeue(_ code: HMSCode) -> [Outcome] {
        Array(repeating: .requeue(reason: code.reason), count: 2)
    }

    private static func retry(_ reason: DeliveryReason) -> [Outcome] {
        Array(repeating: .retry(reason: reason), count: 2)
    }

    @Test(arguments: rows) func classifies(_ row: Row) {
        let classification = HMSClassifier.classify(
            status: row.status, headers: row.headers, body: Array(row.body.utf8), targets: ["t1", "t2"], now: now)
        #expect(classification.outcomes == row.outcomes)
        #expect(classification.closesGate == row.closesGate)
    }

    @Test func aRetryAfterIsAFloor() {
        let classification = HMSClassifier.classify(
            status: 503, headers: [("Retry-After", "7")], body: [], targets: ["t1"], now: now)
        #expect(classification.retryAfterUntil == now + 7000)
    }

    @Test func theStoredReasonIsHuaweisCodeAsWritten() {
        for code in HMSCode.allCases {
            #expect(code.reason.rawValue == code.rawValue)
            #expect(DeliveryReason(stored: code.rawValue) == code.reason)
        }
    }

    @Test func everyTargetGetsOneOutcomeWhateverTheAnswer() {
        for body in [reply("80100000", #"{"illegal_tokens":["t9","t2","t2"]}"#), "", "{}", "[]", reply("80000000")] {
            let outcomes = HMSClassifier.classify(
                status: 200, headers: [], body: Array(body.utf8), targets: ["t1", "t2", "t3"], now: now).outcomes
            #expect(outcomes.count == 3, "\(body)")
        }
    }
}
