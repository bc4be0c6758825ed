import Queue
import Support
import Testing

@testable import Ingest

/// SPEC §19, what a message may set: `apns.headers` Apple's `apns-*` request headers only, `webpush.headers` `TTL`,
/// `Urgency` and `Topic` only, and no CR, LF or NUL in any value that goes out as a header — refused at ingest, the
/// refusal naming the header.
@Suite struct MessageHeadersTests {
    func refusal(_ text: String) -> APIError? {
        guard let object = try? JSON.parse(Array(text.utf8)) else { return .invalidJSON("test input") }
        if case .failure(let error) = V1MessageValidator.validate(object: object, heraldFields: true) { return error }
        return nil
    }

    @Test func apnsAndWebPushHeadersOnTheirListsAreTaken() throws {
        let apns = #""apns-id":"123e4567-e89b-12d3-a456-426614174000","apns-push-type":"alert","apns-expiration":"0","#
            + #""apns-priority":"5","apns-topic":"com.example.app","apns-collapse-id":"c1""#
        #expect(refusal(#"{"message":{"token":"t","apns":{"headers":{\#(apns)}}}}"#) == nil)
        for urgency in ["very-low", "low", "normal", "high"] {
            let webpush = #""TTL":"60","Urgency":"\#(urgency)","Topic":"order-42_ABCDEFGHIJKLMNOPQRSTUVW""#
            #expect(refusal(#"{"message":{"token":"t","webpush":{"headers":{\#(webpush)}}}}"#) == nil)
        }
        let lowercase = #"{"message":{"token":"t","webpush":{"headers":{"ttl":"60","urgency":"high"}}}}"#
        let message = try #require(try? V1MessageValidator.validate(
            object: JSON.parse(Array(lowercase.utf8)), heraldFields: true).get())
        #expect(message.ttlSeconds == 60 && message.priority == .high, "header names in any case")
    }

    static let refusals: [(input: String, named: String)] = [
        (#"{"message":{"token":"t","apns":{"headers":{"authorization":"bearer x"}}}}"#, #""authorization""#),
        (#"{"message":{"token":"t","apns":{"headers":{"x-forwarded-for":"1.2.3.4"}}}}"#, #""x-forwarded-for""#),
        (#"{"message":{"token":"t","apns":{"headers":{"apns-priority":"10","APNS-PRIORITY":"5"}}}}"#, "given twice"),
        (#"{"message":{"token":"t","apns":{"headers":{"apns-collapse-id":"a\r\nx-evil: 1"}}}}"#,
         "message.apns.headers.apns-collapse-id"),
        (#"{"message":{"token":"t","apns":{"headers":{"apns-id":"a\u0000b"}}}}"#, "message.apns.headers.apns-id"),
        (#"{"message":{"token":"t","webpush":{"headers":{"Authorization":"vapid x"}}}}"#, #""Authorization""#),
        (#"{"message":{"token":"t","webpush":{"headers":{"Content-Encoding":"aesgcm"}}}}"#, #""Content-Encoding""#),
        (#"{"message":{"token":"t","webpush":{"headers":{"Urgency":"urgent"}}}}"#, "message.webpush.headers.Urgency"),
        (#"{"message":{"token":"t","webpush":{"headers":{"Topic":"has space"}}}}"#, "message.webpush.headers.Topic"),
        (#"{"message":{"token":"t","webpush":{"headers":{"Topic":"\#(String(repeating: "a", count: 33))"}}}}"#,
         "message.webpush.headers.Topic"),
        (#"{"message":{"token":"t","webpush":{"headers":{"Topic":"a\nb"}}}}"#, "message.webpush.headers.Topic"),
        (#"{"message":{"token":"t","webpush":{"headers":{"TTL":"60\r"}}}}"#, "message.webpush.headers.TTL"),
        (#"{"message":{"token":"t","android":{"collapse_key":"a\rb"}}}"#, "message.android.collapse_key"),
    ]

    @Test(arguments: refusals) func anythingElseIsRefusedNamingTheHeader(input: String, named: String) throws {
        let error = try #require(refusal(input), "accepted: \(input)")
        #expect(error.status == 400)
        #expect(error.message.contains(named), "\(error.message)")
    }

    @Test func aLegacyCollapseKeyThatWouldBreakAHeaderIsRefused() {
        for key in ["a\\r\\nb", "a\\u0000b", "a\\nb"] {
            let result = MessageValidator.validate(body: Array(#"{"to":"t","collapse_key":"\#(key)"}"#.utf8))
            guard case .failure(let error) = result else {
                Issue.record("accepted \(key)")
                continue
            }
            #expect(error.status == 400 && error.message.contains("collapse_key"), "\(error.message)")
        }
        #expect((try? MessageValidator.validate(body: Array(#"{"to":"t","collapse_key":"ok"}"#.utf8)).get()) != nil)
    }
}
