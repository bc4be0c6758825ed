import HTTP
import Queue
import Support
import Testing

@testable import Ingest

/// `send_at` (SPEC §23) in every ingest dialect: RFC 3339 or Unix milliseconds, a past one kept (it means now), more
/// than 30 days ahead refused naming the field, in the dialect's own error shape.
@Suite struct SendAtTests {
    /// 2023-11-14T22:13:20Z.
    let now: Int64 = 1_700_000_000_000
    let day: Int64 = 86_400_000

    private func read(_ value: JSON) -> Int64? { try? SendAt.read(value, now: now) }

    // MARK: - The value

    @Test(arguments: [
        ("2023-11-14T22:13:20Z", Int64(1_700_000_000_000)),
        ("2023-11-14t22:13:20z", 1_700_000_000_000),
        ("2023-11-14 22:13:20Z", 1_700_000_000_000),
        ("2023-11-14T22:13:20.5Z", 1_700_000_000_500),
        ("2023-11-14T22:13:20.123456789Z", 1_700_000_000_123),
        ("2023-11-15T00:13:20+02:00", 1_700_000_000_000),
        ("2023-11-14T16:43:20-05:30", 1_700_000_000_000),
        ("2023-11-14T22:13:20.250+00:00", 1_700_000_000_250),
        ("2020-02-29T00:00:00Z", 1_582_934_400_000),
        ("1700000000000", 1_700_000_000_000),
    ])
    func rfc3339AndUnixMillisecondsNameTheSameInstants(text: String, millis: Int64) {
        #expect(read(.string(text)) == millis)
    }

    @Test func aJSONIntegerIsUnixMilliseconds() {
        #expect(read(.int(now + day)) == now + day)
    }

    @Test func aPastTimeIsKeptAsItIs() {
        #expect(read(.string("2020-01-01T00:00:00Z")) == 1_577_836_800_000)
        #expect(read(.int(now - 1)) == now - 1)
    }

    @Test func thirtyDaysAheadIsTheLimit() {
        #expect(read(.int(now + 30 * day)) == now + 30 * day)
        #expect(read(.int(now + 30 * day + 1000)) == nil)
        #expect(read(.string("2023-12-14T22:13:21Z")) == nil, "30 days and 1 s")
    }

    @Test(arguments: [
        JSON.bool(true), .null, .object([]), .array([.int(1_700_000_000_000)]), .number("1.7e12"),
        .number("1700000000000.5"), .int(-1), .int(1_700_000_000), .string(""), .string("tomorrow"),
        .string("2023-11-14"), .string("2023-11-14T22:13:20"), .string("2023-11-14T22:13Z"),
        .string("2023-02-29T00:00:00Z"), .string("2023-13-01T00:00:00Z"), .string("2023-11-14T24:00:00Z"),
        .string("2023-11-14T22:13:20.Z"), .string("2023-11-14T22:13:20+0200"), .string("2023-11-14T22:13:20Z "),
        .string("99999999999999999999"),
    ])
    func otherTypesAndFormsAreRefused(value: JSON) {
        #expect(read(value) == nil, "\(value.serialized())")
    }

    // MARK: - Herald's own bodies

    @Test func aLegacyMessageTakesItBesideItsFieldsAndLeavesItOutOfThePayload() throws {
        let body = #"{"to":"t","data":{"a":"1"},"send_at":"2023-11-15T22:13:20Z"}"#
        let message = try MessageValidator.validate(body: Array(body.utf8), now: now).get()
        #expect(message.sendAt == now + day)
        #expect(message.payload == ["data": ["a": "1"]])
        #expect(message.stored(idempotencyKey: nil).sendAt == now + day)
    }

    @Test(arguments: [#""2023-12-15T22:13:20Z""#, "true", #""soon""#])
    func aLegacyMessageRefusesABadOneNamingTheField(value: String) {
        let body = #"{"to":"t","send_at":\#(value)}"#
        guard case .failure(let error) = MessageValidator.validate(body: Array(body.utf8), now: now) else {
            Issue.record("accepted send_at \(value)")
            return
        }
        #expect(error.status == 400)
        #expect(error.code == "InvalidParameters")
        #expect(error.message.hasPrefix("send_at "))
    }

    @Test func aBatchRefusesTheItemOnly() throws {
        let body = #"{"messages":[{"to":"a","send_at":\#(now + 31 * day)},{"to":"b","send_at":\#(now + day)}]}"#
        let items = try MessageValidator.validateBatch(body: Array(body.utf8), now: now).get()
        #expect(errorCode(items[0]) == "InvalidParameters")
        #expect(try items[1].get().sendAt == now + day)
    }

    @Test func aV1BodyTakesItBesideMessageOnBothEndpoints() throws {
        let text = #"{"message":{"token":"t"},"send_at":"2023-11-15T22:13:20Z"}"#
        let object = try JSON.parse(Array(text.utf8))
        for herald in [true, false] {
            let message = try V1MessageValidator.validate(object: object, heraldFields: herald, now: now).get()
            #expect(message.sendAt == now + day)
            #expect(message.payload == .object([]))
        }
        let camel = try JSON.parse(Array(#"{"message":{"token":"t"},"sendAt":\#(now + day)}"#.utf8))
        #expect(try V1MessageValidator.validate(object: camel, heraldFields: false, now: now).get().sendAt == now + day)
    }

    @Test func aV1BodyRefusesABadOneInV1sWords() throws {
        let object = try JSON.parse(Array(#"{"message":{"token":"t"},"send_at":\#(now + 31 * day)}"#.utf8))
        for herald in [true, false] {
            guard case .failure(let error) = V1MessageValidator.validate(
                object: object, heraldFields: herald, now: now)
            else {
                Issue.record("accepted 31 days ahead")
                continue
            }
            #expect(error.code == "InvalidArgument")
            #expect(error.message.hasPrefix("Invalid value at 'send_at': "))
        }
    }

    @Test func anAbsoluteAPNsExpirationCountsFromSendAt() throws {
        let expiration = (now + day) / 1000 + 600
        let text = #"{"message":{"token":"t","apns":{"headers":{"apns-expiration":"\#(expiration)"}}},"#
            + #""send_at":\#(now + day)}"#
        let message = try V1MessageValidator.validate(
            object: try JSON.parse(Array(text.utf8)), heraldFields: false, now: now
        ).get()
        #expect(message.ttlSeconds == 600)
    }

    // MARK: - /fcm/send

    @Test func fcmSendTakesItAsAnExtraKeyInJSONAndAsAFormField() throws {
        let at = Clock.nowMillis() + day
        let json = try FCMSendRequest.read(
            contentType: "application/json", body: Array(#"{"to":"t","send_at":\#(at)}"#.utf8), app: nil
        ).get()
        #expect(json.message?.sendAt == at)
        #expect(json.message?.payload == .object([]))
        let form = try FCMSendRequest.read(
            contentType: nil, body: Array("registration_id=t&send_at=\(at)".utf8), app: nil
        ).get()
        #expect(form.message?.sendAt == at)
    }

    @Test(arguments: [true, false])
    func fcmSendRefusesABadOneAsAn400(json: Bool) {
        let at = Clock.nowMillis() + 31 * day
        let result = json
            ? FCMSendRequest.read(
                contentType: "application/json", body: Array(#"{"to":"t","send_at":\#(at)}"#.utf8), app: nil)
            : FCMSendRequest.read(contentType: nil, body: Array("registration_id=t&send_at=\(at)".utf8), app: nil)
        guard case .failure(let error) = result else {
            Issue.record("accepted 31 days ahead")
            return
        }
        #expect(error.status == 400)
        #expect(FCMSendEndpoint.refused(error).body.starts(with: Array("InvalidParameters: send_at ".utf8)))
    }

    @Test func fcmSendRefusesAWrongJSONType() {
        let result = FCMSendRequest.read(
            contentType: "application/json", body: Array(#"{"to":"t","send_at":true}"#.utf8), app: nil)
        guard case .failure(let error) = result else {
            Issue.record("accepted send_at true")
            return
        }
        #expect(error.message.contains("send_at"))
    }
}
