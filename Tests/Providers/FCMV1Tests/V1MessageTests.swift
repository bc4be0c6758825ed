import Classify
import Queue
import Support
import Testing

@testable import Delivery
@testable import FCMV1

/// The v1 body for every field SPEC §12 maps, checked byte for byte against golden JSON.
@Suite struct V1MessageTests {
    let now: Int64 = 1_700_000_000_000

    func message(_ payload: String, ttl: Int = 3600, expiresIn: Int64 = 3_600_000, dryRun: Bool = false,
                 kind: TargetKind = .tokens) -> ClaimedMessage {
        ClaimedMessage(id: "m1", app: "default", payload: payload, targetKind: kind, ttlSeconds: ttl, dryRun: dryRun,
                       expiresAt: now + expiresIn)
    }

    func body(_ message: ClaimedMessage, _ target: String = "tok-1", _ kind: TargetKind = .tokens) -> String {
        String(decoding: V1Message.body(for: message, target: target, kind: kind, now: now), as: UTF8.self)
    }

    /// Every legacy field with a v1 place, in one message: the golden body.
    @Test func everyMappedFieldLandsWhereSpecSays() throws {
        let legacy = """
            {"collapse_key":"score","priority":"high","content_available":true,"mutable_content":true,\
            "delay_while_idle":true,"time_to_live":3600,"restricted_package_name":"com.example.app","dry_run":true,\
            "data":{"score":"4x8","n":7,"ok":true,"nested":{"a":[1,"b"]},"nothing":null},\
            "notification":{"title":"Portugal vs. Denmark","body":"great match!","icon":"ic_ball","color":"#00ff00",\
            "sound":"whistle.caf","tag":"match-1","click_action":"OPEN_MATCH","android_channel_id":"scores",\
            "body_loc_key":"GOAL_BODY","body_loc_args":["Ronaldo",7],"title_loc_key":"GOAL_TITLE",\
            "title_loc_args":"[\\"POR\\",\\"DEN\\"]","badge":"3","subtitle":"Group F"}}
            """
        let golden = """
            {"validate_only":true,"message":{"token":"tok-1",\
            "data":{"score":"4x8","n":"7","ok":"true","nested":"{\\"a\\":[1,\\"b\\"]}","nothing":"null"},\
            "notification":{"title":"Portugal vs. Denmark","body":"great match!"},\
            "android":{"collapse_key":"score","priority":"HIGH","ttl":"3000s",\
            "restricted_package_name":"com.example.app",\
            "notification":{"icon":"ic_ball","color":"#00ff00","sound":"whistle.caf","tag":"match-1",\
            "click_action":"OPEN_MATCH","channel_id":"scores",\
            "body_loc_key":"GOAL_BODY","body_loc_args":["Ronaldo","7"],\
            "title_loc_key":"GOAL_TITLE","title_loc_args":["POR","DEN"]}},\
            "apns":{"headers":{"apns-priority":"10","apns-expiration":"1700003000","apns-collapse-id":"score"},\
            "payload":{"aps":{"badge":3,"sound":"whistle.caf","category":"OPEN_MATCH","content-available":1,\
            "mutable-content":1,"alert":{"title":"Portugal vs. Denmark","body":"great match!","subtitle":"Group F"}}}}}}
            """
        // 600 s of the TTL have passed: both platforms get what remains, never the original 3600.
        let stored = message(legacy, expiresIn: 3_000_000, dryRun: true)
        #expect(body(stored) == golden)
        #expect(try JSON.parse(Array(golden.utf8)).objectValue != nil, "the golden text is JSON")
    }

    @Test func aDataOnlyMessageCarriesOnlyTargetDataAndExpiry() {
        #expect(body(message(#"{"data":{"a":"b"}}"#)) == """
            {"validate_only":false,"message":{"token":"tok-1","data":{"a":"b"},"android":{"ttl":"3600s"},\
            "apns":{"headers":{"apns-expiration":"1700003600"}}}}
            """)
    }

    @Test func normalPriorityIsNormalAndFive() {
        #expect(body(message(#"{"priority":"normal"}"#)) == """
            {"validate_only":false,"message":{"token":"tok-1","android":{"priority":"NORMAL","ttl":"3600s"},\
            "apns":{"headers":{"apns-priority":"5","apns-expiration":"1700003600"}}}}
            """)
    }

    @Test func topicsLoseTheirPrefixAndConditionsStayAsWritten() {
        let stored = message(#"{"data":{"a":"b"}}"#, kind: .topic)
        #expect(body(stored, "/topics/news", .topic).hasPrefix(#"{"validate_only":false,"message":{"topic":"news","#))
        let condition = "'a' in topics && ('b' in topics || 'c' in topics)"
        #expect(body(stored, condition, .condition).hasPrefix(
            #"{"validate_only":false,"message":{"condition":"'a' in topics && ('b' in topics || 'c' in topics)","#))
    }

    @Test func aTTLOfZeroIsNowOrNeverOnBothPlatforms() {
        #expect(body(message(#"{"time_to_live":0}"#, ttl: 0, expiresIn: 0)) == """
            {"validate_only":false,"message":{"token":"tok-1","android":{"ttl":"0s"},\
            "apns":{"headers":{"apns-expiration":"0"}}}}
            """)
    }

    @Test func theTTLIsWhatRemainsInWholeSeconds() {
        #expect(body(message(#"{}"#, ttl: 60, expiresIn: 2_999)).contains(#""ttl":"2s""#))
        #expect(body(message(#"{}"#, ttl: 60, expiresIn: 2_999)).contains(#""apns-expiration":"1700000002""#))
    }

    @Test func aCollapseKeyTooLongForAPNsStillCollapsesOnAndroid() {
        let key = String(repeating: "k", count: 65)
        let text = body(message(#"{"collapse_key":"\#(key)"}"#))
        #expect(text.contains(#""collapse_key":"\#(key)""#))
        #expect(!text.contains("apns-collapse-id"))
    }

    @Test func aBadgeThatIsNoNumberIsLeftOut() {
        #expect(!body(message(#"{"notification":{"title":"t","badge":"many"}}"#)).contains("badge"))
        #expect(body(message(#"{"notification":{"title":"t","badge":5}}"#)).contains(#""aps":{"badge":5}"#))
    }

    @Test func locArgsInAnyLegacyShapeBecomeAListOfStrings() {
        #expect(body(message(#"{"notification":{"body_loc_args":"plain"}}"#)).contains(#""body_loc_args":["plain"]"#))
        #expect(body(message(#"{"notification":{"body_loc_args":5}}"#)).contains(#""body_loc_args":["5"]"#))
    }

    @Test func whatV1HasNoPlaceForIsLeftOut() {
        let text = body(message(#"{"delay_while_idle":true,"dry_run":false,"time_to_live":3600}"#))
        #expect(!text.contains("delay_while_idle"))
        #expect(!text.contains("dry_run"))
        #expect(!text.contains("time_to_live"))
    }
}
