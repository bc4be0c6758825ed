import Queue
import Support
import Testing

@testable import HMS

private let now: Int64 = 1_700_000_000_000

private func message(
    _ payload: String, format: MessageFormat = .v1, ttl: Int = 3600, kind: TargetKind = .tokens, dryRun: Bool = false
) -> ClaimedMessage {
    ClaimedMessage(
        id: "m1", app: "hms", payload: payload, targetKind: kind, ttlSeconds: ttl, dryRun: dryRun,
        expiresAt: now + Int64(ttl) * 1000, format: format)
}

private func sent(_ rendered: HMSMessage, tokens: [String] = ["t1"]) throws -> JSON {
    try JSON.parse(rendered.body(tokens: tokens))
}

/// SPEC §21's rendering: FCM v1's shape (a legacy message mapped there first) in HMS's words.
@Suite struct HMSMessageTests {
    @Test func dataGoesAsOneStringOfStrings() throws {
        let body = try sent(HMSMessage(message(#"{"data":{"score":"4x8","n":"1"}}"#), now: now))
        #expect(body["message"]?["data"]?.stringValue == #"{"score":"4x8","n":"1"}"#)
        #expect(body["validate_only"] == false)
        #expect(body["message"]?["token"] == ["t1"])
    }

    @Test func androidDataReplacesDataAsOnFCM() throws {
        let body = try sent(HMSMessage(message(#"{"data":{"a":"1"},"android":{"data":{"b":"2"}}}"#), now: now))
        #expect(body["message"]?["data"]?.stringValue == #"{"b":"2"}"#)
    }

    @Test func aLegacyMessageIsMappedThroughV1sShape() throws {
        let legacy = #"{"data":{"n":1},"priority":"high","collapse_key":"7","notification":{"title":"Hi","#
            + #""body":"there","click_action":"OPEN_ORDER","android_channel_id":"orders"}}"#
        let body = try sent(HMSMessage(message(legacy, format: .legacy, ttl: 600), now: now + 100_000))
        let sent = try #require(body["message"])
        #expect(sent["data"]?.stringValue == #"{"n":"1"}"#)
        #expect(sent["notification"] == ["title": "Hi", "body": "there"])
        #expect(sent["android"]?["urgency"] == "HIGH")
        #expect(sent["android"]?["collapse_key"] == .int(7))
        #expect(sent["android"]?["ttl"] == "500s", "the remaining TTL, never the original")
        let notification = try #require(sent["android"]?["notification"])
        #expect(notification["channel_id"] == "orders")
        #expect(notification["click_action"] == ["type": 1, "action": "OPEN_ORDER"])
        #expect(sent["apns"] == nil && sent["webpush"] == nil)
    }

    @Test func theAndroidBlockIsMappedToHMSs() throws {
        let v1 = #"{"notification":{"title":"T","body":"B","image":"https://i.example/x.png"},"android":{"#
            + #""priority":"normal","ttl":"60s","fcm_options":{"analytics_label":"spring"},"notification":{"#
            + ##""icon":"ic","color":"#112233","sound":"ding","tag":"t","channel_id":"c","notification_priority":"##
            + #""PRIORITY_HIGH","default_vibrate_timings":true,"sticky":true,"visibility":"PUBLIC"}}}"#
        let body = try sent(HMSMessage(message(v1, ttl: 60), now: now))
        let sent = try #require(body["message"])
        #expect(sent["notification"] == ["title": "T", "body": "B", "image": "https://i.example/x.png"])
        let android = try #require(sent["android"])
        #expect(android["urgency"] == "NORMAL")
        #expect(android["bi_tag"] == "spring")
        #expect(android["ttl"] == "60s")
        let notification = try #require(android["notification"])
        for (key, value) in [("icon", "ic"), ("color", "#112233"), ("sound", "ding"), ("tag", "t"),
                             ("channel_id", "c"), ("importance", "HIGH"), ("visibility", "PUBLIC")] {
            #expect(notification[key]?.stringValue == value, "\(key)")
        }
        #expect(notification["use_default_vibrate"] == true)
        #expect(notification["auto_cancel"] == false)
        #expect(notification["default_sound"] == nil, "a sound was given")
        #expect(notification["click_action"] == ["type": 3], "HMS requires one: open the app")
    }

    @Test func aDataMessageHasNoNotification() throws {
        let body = try sent(HMSMessage(message(#"{"data":{"a":"b"}}"#), now: now))
        #expect(body["message"]?["android"]?["notification"] == nil)
        #expect(body["message"]?["notification"] == nil)
    }

    @Test(arguments: [
        (3600, "3600s"), (1, "1s"), (0, "1s"), (15 * 86_400, "1296000s"), (28 * 86_400, "1296000s"),
    ]) func theTTLIsTheRemainingOneCappedAtFifteenDays(ttl: Int, expected: String) throws {
        let body = try sent(HMSMessage(message(#"{"data":{"a":"b"}}"#, ttl: ttl), now: now))
        #expect(body["message"]?["android"]?["ttl"]?.stringValue == expected)
    }

    @Test(arguments: [
        (#""5""#, Int64?.some(5)), ("5", 5), (#""-1""#, -1), (#""100""#, 100), (#""101""#, nil), (#""-2""#, nil),
        (#""news""#, nil), (#""5.5""#, nil), ("5.5", nil),
    ]) func aCollapseKeyGoesOverOnlyAsAnIntegerFromMinusOneTo100(key: String, expected: Int64?) throws {
        let body = try sent(HMSMessage(message(#"{"android":{"collapse_key":\#(key)},"data":{"a":"b"}}"#), now: now))
        #expect(body["message"]?["android"]?["collapse_key"]?.int64Value == expected)
    }

    @Test func aTopicAndAConditionAreTargetsOfTheirOwn() throws {
        let rendered = HMSMessage(message(#"{"data":{"a":"b"}}"#, kind: .topic), now: now)
        let topic = try JSON.parse(rendered.body(.topic, target: "/topics/news"))
        #expect(topic["message"]?["topic"] == "news")
        #expect(topic["message"]?["token"] == nil)
        let condition = try JSON.parse(rendered.body(.condition, target: "'a' in topics"))
        #expect(condition["message"]?["condition"] == "'a' in topics")
    }

    @Test func dryRunIsValidateOnly() throws {
        let body = try sent(HMSMessage(message(#"{"data":{"a":"b"}}"#, dryRun: true), now: now))
        #expect(body["validate_only"] == true)
    }

    @Test func theSizeLimitCountsTheMessageWithoutItsTokens() throws {
        let small = HMSMessage(message(#"{"data":{"a":"b"}}"#), now: now)
        let body = small.body(tokens: Array(repeating: String(repeating: "t", count: 150), count: 1000))
        #expect(body.count > 100_000)
        #expect(!small.isTooBig)
        let members = try #require(try JSON.parse(body)["message"]?.objectValue?.filter { $0.key != "token" })
        #expect(small.messageBytes == JSON.object(members).serialized().utf8.count)
        let big = HMSMessage(message(#"{"data":{"a":"\#(String(repeating: "x", count: 4100))"}}"#), now: now)
        #expect(big.isTooBig)
    }
}
