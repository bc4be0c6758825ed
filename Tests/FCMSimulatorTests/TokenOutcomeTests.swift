import FCMSimulator
import HTTP
import Support
import Testing

/// Per-token outcomes by token prefix, aliases, canonical IDs, topics: PROTOCOL.md's replies.
@Suite struct TokenOutcomeTests {
    static let prefixes: [(token: String, expected: Expected)] = [
        ("notreg-a", .error("NotRegistered")),
        ("invalid-a", .error("InvalidRegistration")),
        ("mismatch-a", .error("MismatchSenderId")),
        ("badpkg-a", .error("InvalidPackageName")),
        ("apns-a", .error("InvalidApnsCredential")),
        ("unavail-1-a", .error("Unavailable")),
        ("internal-1-a", .error("InternalServerError")),
        ("ratelimit-1-a", .error("DeviceMessageRateExceeded")),
        ("ratelimit-3", .error("DeviceMessageRateExceeded")),
        ("canon-a-to-b", .canonical("b")),
        ("canon-a-to-notreg-b", .canonical("notreg-b")),
        ("error-QuotaExceeded-a", .error("QuotaExceeded")),
        ("error-SomethingNew", .error("SomethingNew")),
        ("", .error("MissingRegistration")),
        ("fcm-token-1", .delivered),
        ("unavail-0-a", .delivered),
        // Names that start like a rule but break it are delivered.
        ("unavail-x-1", .delivered),
        ("unavail-2x", .delivered),
        ("canon-a", .delivered),
        ("canon-a-to-", .delivered),
        ("error--a", .delivered),
    ]

    @Test(arguments: prefixes)
    func prefixDecidesTheJSONResult(token: String, expected: Expected) throws {
        let simulator = FCMSimulator.everySide()
        let response = try simulator.sendJSON(.object([("registration_ids", .array([.string(token)]))]))
        #expect(response.status == 200)
        #expect(response.header("content-type")?.hasPrefix("application/json") == true)
        let reply = try response.json()
        let result = try #require(reply["results"]?.arrayValue?.first)
        #expect(meaning(of: result) == expected)
        let failed: Int64 = if case .error = expected { 1 } else { 0 }
        #expect(reply["success"]?.int64Value == 1 - failed)
        #expect(reply["failure"]?.int64Value == failed)
    }

    @Test(arguments: prefixes)
    func prefixDecidesThePlainTextReply(token: String, expected: Expected) throws {
        let simulator = FCMSimulator.everySide()
        let response = try simulator.sendPlain("registration_id=\(token)&data.score=4x8")
        #expect(meaning(ofPlain: response) == expected, "\(response.status) \(response.text)")
        if expected == .error("Unavailable") {
            #expect(response.status == 500, "FCM answers a plain-text Unavailable with HTTP 500")
        }
    }

    @Test(arguments: [
        ("unavail-2-x", "Unavailable"),
        ("internal-2-x", "InternalServerError"),
        ("ratelimit-2-x", "DeviceMessageRateExceeded"),
    ])
    func countedErrorsHappenNTimesThenTheTokenIsDelivered(token: String, code: String) throws {
        let simulator = FCMSimulator.everySide()
        let answers = try (1...4).map { _ in meaning(of: try simulator.result(for: token)) }
        #expect(answers == [.error(code), .error(code), .delivered, .delivered])
        // Sightings count per exact token: another token with the same rule starts afresh.
        #expect(meaning(of: try simulator.result(for: token + "-other")) == .error(code))
    }

    @Test func unavailableTwiceInPlainTextIsTwo500sThenAnID() throws {
        let simulator = FCMSimulator.everySide()
        let statuses = try (1...3).map { _ in try simulator.sendPlain("registration_id=unavail-2-x").status }
        #expect(statuses == [500, 500, 200])
    }

    @Test func tokensInOneMulticastAreAnsweredInRequestOrder() throws {
        let simulator = FCMSimulator.everySide()
        let tokens = ["ok-1", "notreg-2", "canon-3-to-33", "ok-4", "unavail-1-5", "unavail-1-5"]
        let reply = try simulator.sendJSON(.object([("registration_ids", .array(tokens.map(JSON.string)))])).json()
        let results = try #require(reply["results"]?.arrayValue)
        #expect(results.map(meaning(of:)) == [
            .delivered, .error("NotRegistered"), .canonical("33"), .delivered, .error("Unavailable"), .delivered,
        ])
        let ids = results.compactMap { $0["message_id"]?.stringValue }
        #expect(Set(ids).count == ids.count, "message IDs are unique")
    }

    @Test func canonicalReplyHasFCMsShape() throws {
        let simulator = FCMSimulator.everySide()
        let reply = try simulator.sendJSON(#"{"registration_ids":["canon-old-to-new"],"data":{"a":"1"}}"#).json()
        #expect(reply.keys == ["multicast_id", "success", "failure", "canonical_ids", "results"])
        #expect(reply["multicast_id"]?.int64Value != nil)
        #expect(reply["success"]?.int64Value == 1)
        #expect(reply["failure"]?.int64Value == 0)
        #expect(reply["canonical_ids"]?.int64Value == 1)
        let result = try #require(reply["results"]?.arrayValue?.first)
        #expect(result.keys == ["message_id", "registration_id"])
        #expect(result["message_id"]?.stringValue?.hasPrefix("0:") == true)
        #expect(result["registration_id"]?.stringValue == "new")
    }

    /// PROTOCOL.md: one message to tokens 4, 8, 15, 16, 23, 42.
    static let officialAliases = ["8": "unavail-1-8", "15": "invalid-15", "23": "canon-23-to-32", "42": "notreg-42"]

    @Test func officialSixTokenExampleThroughAliases() throws {
        let simulator = FCMSimulator.everySide(.init(aliases: Self.officialAliases))
        let reply = try simulator.sendJSON(#"{"registration_ids":["4","8","15","16","23","42"]}"#).json()
        #expect(reply.keys == ["multicast_id", "success", "failure", "canonical_ids", "results"])
        #expect(reply["success"]?.int64Value == 3)
        #expect(reply["failure"]?.int64Value == 3)
        #expect(reply["canonical_ids"]?.int64Value == 1)
        let results = try #require(reply["results"]?.arrayValue)
        #expect(results.map(\.keys) == [
            ["message_id"], ["error"], ["error"], ["message_id"], ["message_id", "registration_id"], ["error"],
        ])
        #expect(results.map(meaning(of:)) == [
            .delivered, .error("Unavailable"), .error("InvalidRegistration"), .delivered, .canonical("32"),
            .error("NotRegistered"),
        ])
        // 8 is Unavailable once: the resend is delivered.
        #expect(meaning(of: try simulator.result(for: "8")) == .delivered)
    }

    @Test func officialExampleInPlainText() throws {
        let simulator = FCMSimulator.everySide(.init(aliases: Self.officialAliases))
        #expect(try simulator.sendPlain("registration_id=15").text == "Error=InvalidRegistration")
        let canonical = try simulator.sendPlain(
            "collapse_key=score_update&time_to_live=108&delay_while_idle=1&data.score=4x8&data.time=15:16.2342"
                + "&registration_id=23")
        let lines = canonical.text.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.first?.hasPrefix("id=0:") == true)
        #expect(lines.last == "registration_id=32")
    }

    @Test func aliasesApplyToExactTokensOnly() throws {
        let simulator = FCMSimulator.everySide(.init(aliases: ["42": "notreg-42"]))
        #expect(meaning(of: try simulator.result(for: "42")) == .error("NotRegistered"))
        #expect(meaning(of: try simulator.result(for: "420")) == .delivered)
    }

    @Test(arguments: [
        ("/topics/news", [Expected.delivered, .delivered]),
        ("/topics/ratelimit-1-news", [.error("TopicsMessageRateExceeded"), .delivered]),
        ("/topics/error-InvalidParameters-x", [.error("InvalidParameters"), .error("InvalidParameters")]),
    ])
    func topicReplies(topic: String, expected: [Expected]) throws {
        let simulator = FCMSimulator.everySide()
        var answers: [Expected?] = []
        for _ in expected {
            let reply = try simulator.sendJSON(.object([("to", .string(topic)), ("data", ["a": "1"])])).json()
            switch (reply.keys, reply["message_id"]?.int64Value, reply["error"]?.stringValue) {
            case (["message_id"], _?, nil): answers.append(.delivered)
            case (["error"], nil, let code?): answers.append(.error(code))
            default: answers.append(nil)
            }
        }
        #expect(answers == expected)
    }

    @Test func conditionIsAnsweredWithANumericMessageID() throws {
        let simulator = FCMSimulator.everySide()
        let reply = try simulator.sendJSON(#"{"condition":"'a' in topics && 'b' in topics"}"#).json()
        #expect(reply.keys == ["message_id"])
        #expect(reply["message_id"]?.int64Value != nil)
    }

    @Test func dryRunIsAnsweredWithAFakeMessageID() throws {
        let simulator = FCMSimulator.everySide()
        let reply = try simulator.sendJSON(#"{"registration_ids":["a","notreg-b"],"dry_run":true}"#).json()
        let results = try #require(reply["results"]?.arrayValue)
        #expect(results.first?["message_id"]?.stringValue == "fake_message_id")
        #expect(results.last?["error"]?.stringValue == "NotRegistered")
    }
}
