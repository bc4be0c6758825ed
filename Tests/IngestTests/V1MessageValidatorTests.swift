import Queue
import Storage
import Support
import Testing

@testable import Ingest

/// FCM HTTP v1 messages at ingest (SPEC §13): what is kept, what is derived, and what is refused with which field.
@Suite struct V1MessageValidatorTests {
    let now: Int64 = 1_700_000_000_000

    func v1(_ text: String, herald: Bool = true) -> Result<IncomingMessage, APIError> {
        guard let object = try? JSON.parse(Array(text.utf8)) else { return .failure(.invalidJSON("test input")) }
        return V1MessageValidator.validate(object: object, heraldFields: herald, now: now)
    }

    func refusal(_ text: String, herald: Bool = true) -> APIError? {
        if case .failure(let error) = v1(text, herald: herald) { error } else { nil }
    }

    // MARK: - Accepted

    @Test func aFullMessageIsKeptAsSentWithoutItsTarget() throws {
        let message = try v1("""
            {"validate_only":true,"message":{"token":"tok-1","data":{"b":"2","a":"1"},\
            "notification":{"title":"t","body":"b"},\
            "android":{"ttl":"600s","priority":"high","collapse_key":"score","notification":{"channel_id":"c"}},\
            "apns":{"headers":{"apns-priority":"10"},"payload":{"aps":{"badge":3}}},\
            "webpush":{"headers":{"TTL":"300"},"data":{"w":"1"}},"fcm_options":{"analytics_label":"l"}}}
            """).get()
        #expect(message.format == .v1)
        #expect(message.target == .tokens(["tok-1"]))
        #expect(message.tokenField == .token)
        #expect(message.app == "default")
        #expect(message.payload.serialized() == """
            {"data":{"b":"2","a":"1"},"notification":{"title":"t","body":"b"},\
            "android":{"ttl":"600s","priority":"high","collapse_key":"score","notification":{"channel_id":"c"}},\
            "apns":{"headers":{"apns-priority":"10"},"payload":{"aps":{"badge":3}}},\
            "webpush":{"headers":{"TTL":"300"},"data":{"w":"1"}},"fcm_options":{"analytics_label":"l"}}
            """, "key order and every platform block as received")
        #expect(message.ttlSeconds == 600, "android.ttl comes first")
        #expect(message.priority == .high)
        #expect(message.collapseKey == "score")
        #expect(message.dryRun)
    }

    @Test func theTTLComesFromAndroidThenAPNsThenWebpushThenFourWeeks() throws {
        let apns = #""apns":{"headers":{"apns-expiration":"\#(now / 1000 + 900)"}}"#
        #expect(try v1(#"{"message":{"token":"t","android":{"ttl":"3.5s"},\#(apns)}}"#).get().ttlSeconds == 3)
        #expect(try v1(#"{"message":{"token":"t",\#(apns),"webpush":{"headers":{"TTL":"60"}}}}"#).get().ttlSeconds
            == 900)
        #expect(try v1(#"{"message":{"token":"t","apns":{"headers":{"apns-expiration":"0"}}}}"#).get().ttlSeconds == 0,
                "APNs' 0 is now or never, as Herald's TTL 0")
        #expect(try v1(#"{"message":{"token":"t","webpush":{"headers":{"TTL":"60"}}}}"#).get().ttlSeconds == 60)
        #expect(try v1(#"{"message":{"token":"t"}}"#).get().ttlSeconds == 2_419_200)
    }

    @Test func priorityAndCollapseKeyFallBackToAPNsHeaders() throws {
        let message = try v1(
            #"{"message":{"token":"t","apns":{"headers":{"apns-priority":"10","apns-collapse-id":"c"}}}}"#).get()
        #expect(message.priority == .high)
        #expect(message.collapseKey == "c")
        #expect(try v1(#"{"message":{"token":"t","android":{"priority":"NORMAL"}}}"#).get().priority == .normal)
        #expect(try v1(#"{"message":{"token":"t","webpush":{"headers":{"Urgency":"high"}}}}"#).get().priority == .high)
        let both = #"{"message":{"token":"t","android":{"priority":"normal"},"#
            + #""webpush":{"headers":{"Urgency":"high"}}}}"#
        #expect(try v1(both).get().priority == .normal, "android's priority comes first")
    }

    @Test func everyTargetKind() throws {
        #expect(try v1(#"{"message":{"fid":"f-1"}}"#).get().tokenField == .fid)
        #expect(try v1(#"{"message":{"fid":"f-1"}}"#).get().target == .tokens(["f-1"]))
        #expect(try v1(#"{"message":{"topic":"news"}}"#).get().target == .topic("/topics/news"))
        #expect(try v1(#"{"message":{"topic":"/topics/news"}}"#).get().target == .topic("/topics/news"))
        #expect(try v1(#"{"message":{"condition":"'a' in topics"}}"#).get().target == .condition("'a' in topics"))
        let five = "'a' in topics && 'b' in topics && 'c' in topics && 'd' in topics && 'e' in topics"
        #expect(try v1(#"{"message":{"condition":"\#(five)"}}"#).get().target == .condition(five),
                "v1 takes five topics where legacy took three")
        #expect(refusal(#"{"message":{"condition":"\#(five) && 'f' in topics"}}"#) != nil)
        #expect(try v1(#"{"tokens":["a","b","a"],"message":{"data":{"x":"y"}}}"#).get().target == .tokens(["a", "b"]))
        #expect(try v1(#"{"users":["u1"],"app":"other","message":{}}"#).get().target == .users(["u1"]))
        #expect(try v1(#"{"users":["u1"],"app":"other","message":{}}"#).get().app == "other")
    }

    @Test func postMessagesTakesTheV1ShapeBesideTheLegacyOne() throws {
        #expect(try validate(#"{"message":{"token":"t"}}"#).get().format == .v1)
        #expect(try validate(#"{"to":"t"}"#).get().format == .legacy)
        let batch = try MessageValidator.validateBatch(body: Array(
            #"{"messages":[{"to":"t"},{"message":{"fid":"f"}},{"message":{"token":1}}]}"#.utf8)).get()
        #expect(try batch[1].get().tokenField == .fid)
        #expect(errorCode(batch[2]) == "InvalidArgument")
    }

    @Test func lowerCamelCaseFieldNamesAreReadAndStoredAsTheAPIWritesThem() throws {
        let message = try v1("""
            {"validateOnly":true,"message":{"token":"t","fcmOptions":{"analyticsLabel":"l"},\
            "android":{"collapseKey":"ck","restrictedPackageName":"p","data":{"camelKey":"v"}},\
            "webpush":{"notification":{"requireInteraction":true},"fcmOptions":{"link":"https://x"}}}}
            """).get()
        #expect(message.dryRun)
        #expect(message.collapseKey == "ck")
        #expect(message.payload.serialized() == """
            {"fcm_options":{"analytics_label":"l"},\
            "android":{"collapse_key":"ck","restricted_package_name":"p","data":{"camelKey":"v"}},\
            "webpush":{"notification":{"requireInteraction":true},"fcm_options":{"link":"https://x"}}}
            """, "open maps (data, webpush.notification) keep the sender's keys")
    }

    // MARK: - Refused

    /// Each input, and a piece of text its error must contain (the field it names).
    static let refusals: [(String, String)] = [
        (#"{"message":{}}"#, "Recipient of the message is not set"),
        (#"{"message":{"token":"a","topic":"b"}}"#, "message.token and message.topic"),
        (#"{"tokens":["a"],"message":{"token":"b"}}"#, "message.token and tokens"),
        (#"{"message":{"token":""}}"#, "message.token"),
        (#"{"message":{"fid":7}}"#, "message.fid"),
        (#"{"message":{"topic":"bad topic"}}"#, "message.topic"),
        (#"{"message":{"condition":"'a' in topics &&"}}"#, "message.condition"),
        (#"{"message":"x"}"#, "'message'"),
        (#"{"message":{"token":"t","colour":"red"}}"#, #"Unknown name "colour" at 'message'"#),
        (#"{"message":{"token":"t"},"extra":1}"#, #"Unknown name "extra""#),
        (#"{"message":{"token":"t","data":{"n":1}}}"#, "message.data[0].value"),
        (#"{"message":{"token":"t","data":{"from":"x"}}}"#, #""from""#),
        (#"{"message":{"token":"t","data":{"google.x":"x"}}}"#, #""google.x""#),
        (#"{"message":{"token":"t","android":{"data":{"gcm.x":"x"}}}}"#, "message.android.data"),
        (#"{"message":{"token":"t","android":{"ttl":"60"}}}"#, "message.android.ttl"),
        (#"{"message":{"token":"t","android":{"ttl":"2419201s"}}}"#, "message.android.ttl"),
        (#"{"message":{"token":"t","android":{"ttl":3600}}}"#, "message.android.ttl"),
        (#"{"message":{"token":"t","android":{"priority":"urgent"}}}"#, "message.android.priority"),
        (#"{"message":{"token":"t","android":{"colour":"red"}}}"#, "at 'message.android'"),
        (#"{"message":{"token":"t","android":{"notification":{"colour":"red"}}}}"#, "message.android.notification"),
        (#"{"message":{"token":"t","apns":{"headers":{"apns-priority":10}}}}"#, "message.apns.headers"),
        (#"{"message":{"token":"t","apns":{"headers":{"apns-expiration":"soon"}}}}"#, "apns-expiration"),
        (#"{"message":{"token":"t","apns":{"payload":[]}}}"#, "message.apns.payload"),
        (#"{"message":{"token":"t","webpush":{"headers":{"TTL":"4w"}}}}"#, "message.webpush.headers.TTL"),
        (#"{"message":{"token":"t","webpush":{"headers":{"TTL":"2419201"}}}}"#, "message.webpush.headers.TTL"),
        (#"{"message":{"token":"t","notification":{"title":1}}}"#, "message.notification.title"),
        (#"{"message":{"token":"t","fcm_options":{"label":"x"}}}"#, "message.fcm_options"),
        (#"{"message":{"token":"t"},"validate_only":"yes"}"#, "validate_only"),
        (#"{"message":{"token":"t"},"app":"no spaces"}"#, "'app'"),
        (#"{"tokens":[],"message":{}}"#, "tokens is empty"),
    ]

    @Test(arguments: refusals) func refusedWithInvalidArgumentNamingTheField(input: String, named: String) throws {
        let error = try #require(refusal(input), "accepted: \(input)")
        #expect(error.status == 400)
        #expect(error.code == "InvalidArgument")
        #expect(error.message.contains(named), "\(error.message)")
    }

    @Test func theDropInTakesOnlyFCMsFields() {
        #expect(refusal(#"{"message":{"token":"t"},"app":"default"}"#, herald: false)?.message
            .contains(#"Unknown name "app""#) == true)
        #expect(refusal(#"{"tokens":["a"],"message":{}}"#, herald: false) != nil)
    }

    @Test func aMessageTooBigForItsTargetIsRefused() {
        let big = String(repeating: "x", count: 2100)
        #expect(refusal(#"{"message":{"token":"t","data":{"a":"\#(big)"}}}"#) == nil, "2100 bytes fit a device")
        #expect(refusal(#"{"message":{"topic":"n","data":{"a":"\#(big)"}}}"#)?.message.contains("too big") == true)
        let huge = String(repeating: "x", count: 4000)
        #expect(refusal(#"{"message":{"token":"t","apns":{"payload":{"aps":{"alert":"\#(huge)"}},"headers":{}},"#
            + #""data":{"a":"\#(big)"}}}"#)?.message.contains("too big") == true, "the APNs payload counts too")
    }
}
