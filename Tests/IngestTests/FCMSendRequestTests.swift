import Foundation
import HTTP
import Support
import Testing

@testable import Ingest
import Queue
@testable import Storage

/// `POST /fcm/send` read and answered without a database: which failures are FCM's HTTP 400 and which are results.
@Suite struct FCMSendRequestTests {
    private func readJSON(_ text: String, app: String? = nil) -> Result<FCMSendRequest, APIError> {
        FCMSendRequest.read(contentType: "application/json", body: Array(text.utf8), app: app)
    }

    private func readForm(
        _ text: String, contentType: String? = "application/x-www-form-urlencoded"
    ) -> Result<FCMSendRequest, APIError> {
        FCMSendRequest.read(contentType: contentType, body: Array(text.utf8), app: nil)
    }

    private func refusal(_ result: Result<FCMSendRequest, APIError>) -> APIError? {
        if case .failure(let error) = result { error } else { nil }
    }

    private let accepted = AcceptedMessage(id: "01JD3M2X0Q8W5N3H7K2C4V6B9R", rowID: 216, deliveries: 2, isRepeat: false)

    private func body(_ response: HTTPResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    // MARK: - Content type

    @Test(arguments: [
        ("application/json", FCMSendRequest.Format.json), ("Application/JSON; charset=UTF-8", .json),
        (" application/json ;charset=utf-8", .json),
        ("application/x-www-form-urlencoded;charset=UTF-8", .plainText), ("text/plain", .plainText),
        ("application/jsonx", .plainText), ("", .plainText),
    ] as [(String, FCMSendRequest.Format)])
    func onlyAJSONContentTypeMeansJSON(contentType: String, format: FCMSendRequest.Format) {
        #expect(FCMSendRequest.format(of: contentType) == format)
    }

    @Test func aMissingContentTypeMeansPlainText() {
        #expect(FCMSendRequest.format(of: nil) == .plainText)
        let send = try? readForm("registration_id=42&data.a=1", contentType: nil).get()
        #expect(send?.format == .plainText)
        #expect(send?.message?.target == .tokens(["42"]))
    }

    // MARK: - JSON: request errors are HTTP 400

    @Test(arguments: ["", "not json", #"{"to":"a","#, "[1]", #""text""#, "null"])
    func aBodyThatIsNotAJSONObjectIsInvalidJson(text: String) {
        let error = refusal(readJSON(text))
        #expect(error?.code == "InvalidJson")
        #expect(error?.status == 400)
    }

    @Test(arguments: [
        #"{"to":5}"#, #"{"to":["a"]}"#, #"{"registration_ids":"a"}"#, #"{"registration_ids":["a",5]}"#,
        #"{"condition":true}"#, #"{"to":"a","time_to_live":"60"}"#, #"{"to":"a","time_to_live":true}"#,
        #"{"to":"a","collapse_key":1}"#, #"{"to":"a","priority":10}"#, #"{"to":"a","dry_run":"true"}"#,
        #"{"to":"a","delay_while_idle":1}"#, #"{"to":"a","content_available":"1"}"#,
        #"{"to":"a","mutable_content":0}"#, #"{"to":"a","restricted_package_name":[]}"#,
        #"{"to":"a","data":"x"}"#, #"{"to":"a","data":["x"]}"#, #"{"to":"a","notification":"hi"}"#,
        #"{"to":"a","fcm_options":1}"#,
        // Wrong types win over a missing target, as they do at FCM.
        #"{"data":5}"#,
    ])
    func aFieldOfTheWrongJSONTypeIsA400(text: String) {
        let error = refusal(readJSON(text))
        #expect(error?.code == "InvalidParameters")
        #expect(error?.status == 400)
        #expect(error?.message.hasPrefix("Field \"") == true)
    }

    @Test(arguments: [
        #"{"to":"a","app":"default"}"#, #"{"users":["u1"]}"#, #"{"to":"a","time_to_liv":60}"#,
        #"{"to":"a","notification_key":"k"}"#, #"{"To":"a"}"#,
    ])
    func aFieldFCMDoesNotKnowIsA400EvenHeraldsOwn(text: String) {
        let error = refusal(readJSON(text))
        #expect(error?.code == "InvalidParameters")
        #expect(error?.message.hasPrefix("unknown field") == true)
    }

    @Test func theAppFieldPointsToTheHeader() {
        #expect(refusal(readJSON(#"{"to":"a","app":"x"}"#))?.message.contains("X-Herald-App") == true)
    }

    @Test func moreThanOneThousandRegistrationIDsIsFCMsBulkError() {
        let thousand = JSON.object([("registration_ids", .array((0..<1000).map { .string("t\($0)") }))])
        let tooMany = JSON.object([("registration_ids", .array((0...1000).map { .string("t\($0)") }))])
        #expect((try? readJSON(thousand.serialized()).get())?.recipients.count == 1000)
        let error = refusal(readJSON(tooMany.serialized()))
        #expect(error?.status == 400)
        #expect(error?.message == "Number of messages on bulk (1001) exceeds maximum allowed (1000)")
    }

    @Test(arguments: [
        #"{"to":"a","registration_ids":["b"]}"#, #"{"to":"a","condition":"'x' in topics"}"#,
        #"{"to":"a","priority":"urgent"}"#, #"{"condition":"'a' in topics && 'b' in topics && 'c' in topics "#
            + #"&& 'd' in topics"}"#, #"{"to":"/topics/"}"#,
    ])
    func whatTheValidatorCallsInvalidParametersIsA400(text: String) {
        let error = refusal(readJSON(text))
        #expect(error?.code == "InvalidParameters")
        #expect(error?.status == 400)
    }

    @Test(arguments: ["", "a b", String(repeating: "a", count: 101), "é"])
    func anInvalidAppHeaderIsA400(app: String) {
        let error = refusal(readJSON(#"{"to":"a"}"#, app: app))
        #expect(error?.code == "InvalidParameters")
        #expect(error?.message.contains("X-Herald-App") == true)
    }

    // MARK: - JSON: recipient errors are results of an HTTP 200, and nothing is stored

    @Test(arguments: [#"{}"#, #"{"data":{"a":"1"}}"#, #"{"to":""}"#, #"{"registration_ids":[]}"#, #"{"to":null}"#])
    func noTargetIsOneMissingRegistrationResult(text: String) throws {
        let send = try readJSON(text).get()
        #expect(send.recipients == [.error("MissingRegistration")])
        #expect(send.message == nil)
        #expect(body(send.answer(nil))
            == #"{"multicast_id":0,"success":0,"failure":1,"canonical_ids":0,"#
            + #""results":[{"error":"MissingRegistration"}]}"#)
    }

    @Test(arguments: [
        (#"{"registration_ids":["a","b"],"time_to_live":-1}"#, "InvalidTtl"),
        (#"{"registration_ids":["a","b"],"time_to_live":2419201}"#, "InvalidTtl"),
        (#"{"registration_ids":["a","b"],"time_to_live":60.5}"#, "InvalidTtl"),
        (#"{"registration_ids":["a","b"],"data":{"from":"x"}}"#, "InvalidDataKey"),
        (#"{"registration_ids":["a","b"],"data":{"gcm.notification":"x"}}"#, "InvalidDataKey"),
        (#"{"registration_ids":["a",""],"data":{"google.c":"x"}}"#, "InvalidDataKey"),
    ] as [(String, String)])
    func aMessageEveryRecipientRefusesIsAnErrorPerRecipient(text: String, code: String) throws {
        let send = try readJSON(text).get()
        #expect(send.recipients == [.error(code), .error(code)])
        #expect(send.message == nil)
        let answer = send.answer(nil)
        #expect(answer.status == 200)
        #expect(body(answer) == #"{"multicast_id":0,"success":0,"failure":2,"canonical_ids":0,"results":"#
            + #"[{"error":"\#(code)"},{"error":"\#(code)"}]}"#)
    }

    @Test func tooBigIsMessageTooBigWithTheTopicLimitForTopics() throws {
        let value = String(repeating: "x", count: 3000)
        let device = try readJSON(#"{"to":"a","data":{"k":"\#(value)"}}"#).get()
        #expect(device.recipients == [.delivery(0)])
        let topic = try readJSON(#"{"to":"/topics/news","data":{"k":"\#(value)"}}"#).get()
        #expect(topic.recipients == [.error("MessageTooBig")])
        #expect(body(topic.answer(nil)) == #"{"error":"MessageTooBig"}"#)
    }

    @Test func anEmptyTokenIsInvalidRegistrationForItsPositionOnly() throws {
        let send = try readJSON(#"{"registration_ids":["a","","b"]}"#).get()
        #expect(send.recipients == [.delivery(0), .error("InvalidRegistration"), .delivery(1)])
        #expect(send.message?.target == .tokens(["a", "b"]))
        #expect(body(send.answer(accepted)) == #"{"multicast_id":216,"success":2,"failure":1,"canonical_ids":0,"#
            + #""results":[{"message_id":"01JD3M2X0Q8W5N3H7K2C4V6B9R:0"},{"error":"InvalidRegistration"},"#
            + #"{"message_id":"01JD3M2X0Q8W5N3H7K2C4V6B9R:1"}]}"#)
    }

    @Test func onlyEmptyTokensStoreNothing() throws {
        let send = try readJSON(#"{"registration_ids":["",""],"data":{"a":"1"}}"#).get()
        #expect(send.recipients == [.error("InvalidRegistration"), .error("InvalidRegistration")])
        #expect(send.message == nil)
    }

    @Test func onlyEmptyTokensStillGetTheMessagesOwnErrors() throws {
        #expect(refusal(readJSON(#"{"registration_ids":[""],"priority":"urgent"}"#))?.status == 400)
        let send = try readJSON(#"{"registration_ids":[""],"time_to_live":-5}"#).get()
        #expect(send.recipients == [.error("InvalidTtl")])
    }

    // MARK: - JSON: accepted

    @Test func aRepeatedTokenIsQueuedOnceAndEachPositionNamesThatDelivery() throws {
        let send = try readJSON(#"{"registration_ids":["4","8","4"]}"#).get()
        #expect(send.message?.target == .tokens(["4", "8"]))
        #expect(send.recipients == [.delivery(0), .delivery(1), .delivery(0)])
    }

    @Test func tokensAreComparedByBytes() throws {
        // "é" precomposed and decomposed are equal Strings in Swift but different tokens.
        let send = try readJSON(#"{"registration_ids":["\u00e9","e\u0301"]}"#).get()
        #expect(send.recipients == [.delivery(0), .delivery(1)])
    }

    @Test func theMessageKeepsEveryOptionAndTheAppComesFromTheHeader() throws {
        let text = #"{"registration_ids":["a"],"collapse_key":"score","priority":"high","content_available":true,"#
            + #""mutable_content":false,"delay_while_idle":true,"time_to_live":60,"restricted_package_name":"com.x","#
            + #""dry_run":true,"data":{"score":"4x8"},"notification":{"title":"t"},"#
            + #""fcm_options":{"analytics_label":"l"}}"#
        let message = try #require(try readJSON(text, app: "second").get().message)
        #expect(message.app == "second")
        #expect(message.collapseKey == "score")
        #expect(message.priority == .high)
        #expect(message.ttlSeconds == 60)
        #expect(message.dryRun)
        #expect(message.payload == JSON.object([
            ("collapse_key", "score"), ("priority", "high"), ("content_available", true), ("mutable_content", false),
            ("delay_while_idle", true), ("time_to_live", 60), ("restricted_package_name", "com.x"), ("dry_run", true),
            ("data", ["score": "4x8"]), ("notification", ["title": "t"]), ("fcm_options", ["analytics_label": "l"]),
        ]))
    }

    @Test func nullOptionsAreAbsent() throws {
        let message = try #require(try readJSON(#"{"to":"a","collapse_key":null,"time_to_live":null}"#).get().message)
        #expect(message.collapseKey == nil)
        #expect(message.ttlSeconds == MessageValidator.maximumTTL)
        #expect(message.payload == JSON.object([]))
    }

    @Test func aMulticastAnswerNamesTheMessageAndEachDelivery() throws {
        let send = try readJSON(#"{"registration_ids":["4","8"],"data":{"a":"1"}}"#).get()
        let answer = send.answer(accepted)
        #expect(answer.status == 200)
        #expect(answer.headers.contains { $0.name == "Content-Type" && $0.value == "application/json" })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any])
        #expect(object["multicast_id"] as? Int == 216)
        #expect(object["success"] as? Int == 2)
        #expect(object["failure"] as? Int == 0)
        #expect(object["canonical_ids"] as? Int == 0)
        let results = try #require(object["results"] as? [[String: String]])
        #expect(results == [
            ["message_id": "01JD3M2X0Q8W5N3H7K2C4V6B9R:0"], ["message_id": "01JD3M2X0Q8W5N3H7K2C4V6B9R:1"],
        ])
    }

    @Test func aSingleToIsAMulticastOfOne() throws {
        let send = try readJSON(#"{"to":"tok"}"#).get()
        #expect(send.isTopic == false)
        #expect(body(send.answer(accepted)) == #"{"multicast_id":216,"success":1,"failure":0,"canonical_ids":0,"#
            + #""results":[{"message_id":"01JD3M2X0Q8W5N3H7K2C4V6B9R:0"}]}"#)
    }

    @Test(arguments: [#"{"to":"/topics/news"}"#, #"{"condition":"'a' in topics && 'b' in topics"}"#])
    func topicsAndConditionsAnswerAnIntegerMessageID(text: String) throws {
        let send = try readJSON(text).get()
        #expect(send.isTopic)
        #expect(body(send.answer(accepted)) == #"{"message_id":216}"#)
    }

    @Test func aConditionWithoutTopicsIsATopicShapedError() throws {
        let send = try readJSON(#"{"condition":"","data":{"a":"1"}}"#).get()
        #expect(body(send.answer(nil)) == #"{"error":"MissingRegistration"}"#)
    }

    // MARK: - Plain text

    @Test func fcmsPlainTextExampleIsQueued() throws {
        let send = try readForm("collapse_key=score_update&time_to_live=108&delay_while_idle=1&data.score=4x8"
            + "&data.time=15:16.2342&registration_id=42").get()
        let message = try #require(send.message)
        #expect(message.target == .tokens(["42"]))
        #expect(message.collapseKey == "score_update")
        #expect(message.ttlSeconds == 108)
        #expect(message.payload == JSON.object([
            ("collapse_key", "score_update"), ("time_to_live", 108), ("delay_while_idle", true),
            ("data", ["score": "4x8", "time": "15:16.2342"]),
        ]))
        let answer = send.answer(accepted)
        #expect(answer.status == 200)
        #expect(body(answer) == "id=01JD3M2X0Q8W5N3H7K2C4V6B9R:0")
        #expect(answer.headers.contains { $0.name == "Content-Type" && $0.value.hasPrefix("text/plain") })
    }

    @Test func formValuesAreDecodedAndARepeatedKeyKeepsItsLastValue() throws {
        let message = try #require(try readForm(
            "registration_id=a%2Bb&data.note=hello+world%21&data.n=1&data.n=2&collapse_key=x&collapse_key=y"
                + "&dry_run=True"
        ).get().message)
        #expect(message.target == .tokens(["a+b"]))
        #expect(message.collapseKey == "y")
        #expect(message.dryRun)
        #expect(message.payload["data"] == ["note": "hello world!", "n": "2"])
    }

    @Test(arguments: [("1", true), ("true", true), ("TRUE", true), ("True", true), ("0", false), ("false", false)])
    func plainTextBooleansAreWhatClientLibrariesWrite(value: String, expected: Bool) throws {
        let message = try #require(try readForm("registration_id=a&dry_run=\(value)").get().message)
        #expect(message.dryRun == expected)
    }

    @Test(arguments: [
        ("data.a=1", "MissingRegistration"), ("registration_id=&data.a=1", "MissingRegistration"),
        ("registration_id=a&data.from=x", "InvalidDataKey"), ("registration_id=a&data.gcm.x=y", "InvalidDataKey"),
        ("registration_id=a&time_to_live=abc", "InvalidTtl"), ("registration_id=a&time_to_live=-1", "InvalidTtl"),
        ("registration_id=a&time_to_live=1.5", "InvalidTtl"),
    ] as [(String, String)])
    func plainTextRecipientErrorsAreAnErrorLine(text: String, code: String) throws {
        let send = try readForm(text).get()
        #expect(send.message == nil)
        let answer = send.answer(nil)
        #expect(answer.status == 200)
        #expect(body(answer) == "Error=\(code)")
    }

    @Test(arguments: [
        "registration_id=a&registration_id=b", "registration_id=a&priority=urgent", "registration_id=a&dry_run=yes",
        "registration_id=a&notification.title=x", "registration_id=a&color=red", "registration_id=a&data.x=%ZZ",
        #"{"to":"a"}"#,
    ])
    func plainTextRequestErrorsAreA400(text: String) {
        let error = refusal(readForm(text))
        #expect(error?.code == "InvalidParameters")
        #expect(error?.status == 400)
    }

    @Test func aJSONBodyWithoutItsContentTypeIsToldWhy() {
        #expect(refusal(readForm(#"{"to":"a"}"#, contentType: nil))?.message.contains("application/json") == true)
    }

    @Test func theSameRegistrationIDTwiceIsOneRecipient() throws {
        #expect(try readForm("registration_id=a&registration_id=a").get().message?.target == .tokens(["a"]))
    }

    @Test func aDataKeyKeepsItsBytesAfterThePrefix() throws {
        // "data." then a combining accent: Character-wise dropping would eat the accent with the dot.
        let message = try #require(try readForm("registration_id=a&data.%CC%81x=1").get().message)
        #expect(message.payload["data"] == JSON.object([("\u{0301}x", "1")]))
    }
}
