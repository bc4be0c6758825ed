import FCMSimulator
import Foundation
import HTTP
import Support
import Testing

/// What FCM rejects: the key (401), the request (400), and the whole message (one error for every recipient).
@Suite struct RequestValidationTests {
    @Test(arguments: [
        (nil as String?, nil as String?, 401),
        ("", nil, 401),
        ("key=", nil, 401),
        ("Bearer abc", nil, 401),
        ("key abc", nil, 401),
        ("key=anything", nil, 200),
        ("  key=anything ", nil, 200),
        ("key=wrong", "right", 401),
        ("key=righ", "right", 401),
        ("key=rightt", "right", 401),
        ("key=right", "right", 200),
    ])
    func authorizationKey(header: String?, serverKey: String?, status: Int) throws {
        let simulator = FCMSimulator.everySide(serverKey: serverKey)
        let response = try simulator.sendJSON(#"{"to":"a"}"#, authorization: header)
        #expect(response.status == status)
        if status == 401 {
            #expect(response.header("content-type")?.hasPrefix("text/plain") == true)
            #expect(!response.body.isEmpty)
        }
    }

    @Test func plainTextNeedsTheKeyToo() throws {
        let simulator = FCMSimulator.everySide()
        let response = try simulator.call("POST", "/fcm/send", body: "registration_id=a")
        #expect(response.status == 401)
    }

    @Test(arguments: [
        "",
        "{",
        "not json",
        "[]",
        #"{"to":"a"} x"#,
        "{}",
        #"{"data":{"a":"1"}}"#,
        #"{"to":5}"#,
        #"{"to":"a","registration_ids":["b"]}"#,
        #"{"to":"a","condition":"'x' in topics"}"#,
        #"{"registration_ids":[]}"#,
        #"{"registration_ids":"a"}"#,
        #"{"registration_ids":["a",1]}"#,
        #"{"condition":""}"#,
        #"{"to":"/topics/"}"#,
        #"{"to":"/topics/a b"}"#,
        #"{"to":"a","dry_run":"yes"}"#,
        #"{"to":"a","collapse_key":1}"#,
        #"{"to":"a","priority":10}"#,
        #"{"to":"a","data":"x"}"#,
        #"{"to":"a","notification":[]}"#,
    ])
    func badJSONRequestsGet400WithAPlainBody(body: String) throws {
        let simulator = FCMSimulator.everySide()
        let response = try simulator.sendJSON(body)
        #expect(response.status == 400)
        #expect(response.header("content-type")?.hasPrefix("text/plain") == true)
        #expect(!response.text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty)
    }

    @Test(arguments: [1, 1000, 1001])
    func registrationIDsTakeOneToAThousandTokens(count: Int) throws {
        let simulator = FCMSimulator.everySide()
        let tokens = (0..<count).map { JSON.string("t\($0)") }
        let response = try simulator.sendJSON(.object([("registration_ids", .array(tokens))]))
        #expect(response.status == (count <= 1000 ? 200 : 400))
        if count <= 1000 { #expect(try response.json()["results"]?.arrayValue?.count == count) }
    }

    static let largeData = String(repeating: "x", count: 4096 - #"{"k":""}"#.utf8.count)

    @Test(arguments: [
        (#""time_to_live":-1"#, Expected.error("InvalidTtl")),
        (#""time_to_live":2419201"#, .error("InvalidTtl")),
        (#""time_to_live":1.5"#, .error("InvalidTtl")),
        (#""time_to_live":"60""#, .error("InvalidTtl")),
        (#""time_to_live":0"#, .delivered),
        (#""time_to_live":2419200"#, .delivered),
        (#""data":{"from":"x"}"#, .error("InvalidDataKey")),
        (#""data":{"message_type":"x"}"#, .error("InvalidDataKey")),
        (#""data":{"google.sent_time":"x"}"#, .error("InvalidDataKey")),
        (#""data":{"gcm.n":"x"}"#, .error("InvalidDataKey")),
        (#""data":{"fromage":"x","googly":"y"}"#, .delivered),
        (#""data":{"k":"\#(largeData)"}"#, .delivered),
        (#""data":{"k":"\#(largeData)x"}"#, .error("MessageTooBig")),
        (#""data":{"k":"\#(largeData)"},"notification":{"title":"t"}"#, .error("MessageTooBig")),
        (#""data":{"from":"x"},"time_to_live":-1"#, .error("InvalidTtl")),
    ])
    func wholeMessageErrorsReachEveryToken(fields: String, expected: Expected) throws {
        let simulator = FCMSimulator.everySide()
        let reply = try simulator.sendJSON(#"{"registration_ids":["a","unavail-1-b"],\#(fields)}"#).json()
        let results = try #require(reply["results"]?.arrayValue)
        if expected == .delivered {
            #expect(results.map(meaning(of:)) == [.delivered, .error("Unavailable")])
        } else {
            #expect(results.map(meaning(of:)) == [expected, expected])
            // A rejected message is not a sighting: unavail-1-b still fails on its next send.
            #expect(meaning(of: try simulator.result(for: "unavail-1-b")) == .error("Unavailable"))
        }
    }

    @Test func topicPayloadLimitIs2048() throws {
        let simulator = FCMSimulator.everySide()
        let data = String(repeating: "x", count: 2048 - #"{"k":""}"#.utf8.count)
        let fits = try simulator.sendJSON(#"{"to":"/topics/t","data":{"k":"\#(data)"}}"#).json()
        let over = try simulator.sendJSON(#"{"to":"/topics/t","data":{"k":"\#(data)x"}}"#).json()
        #expect(fits.keys == ["message_id"])
        #expect(over["error"]?.stringValue == "MessageTooBig")
    }

    @Test(arguments: [
        ("registration_id=a&time_to_live=abc", "Error=InvalidTtl"),
        ("registration_id=a&time_to_live=2419201", "Error=InvalidTtl"),
        ("registration_id=a&data.from=x", "Error=InvalidDataKey"),
        ("registration_id=a&data.k=" + String(repeating: "x", count: 5000), "Error=MessageTooBig"),
        ("collapse_key=c&data.a=1", "Error=MissingRegistration"),
        ("", "Error=MissingRegistration"),
        ("registration_id=notreg-%41%2B+b", "Error=NotRegistered"),
    ])
    func plainTextWholeMessageErrors(body: String, reply: String) throws {
        let simulator = FCMSimulator.everySide()
        let response = try simulator.sendPlain(body)
        #expect(response.status == 200)
        #expect(response.text == reply)
    }

    @Test(arguments: [nil, "application/x-www-form-urlencoded", "text/plain"])
    func anythingButJSONIsReadAsPlainText(contentType: String?) throws {
        let simulator = FCMSimulator.everySide()
        let response = try simulator.sendPlain("registration_id=invalid-1", contentType: contentType)
        #expect(response.text == "Error=InvalidRegistration")
    }

    @Test func plainTextTakesOneRegistrationID() throws {
        let simulator = FCMSimulator.everySide()
        #expect(try simulator.sendPlain("registration_id=a&registration_id=b").status == 400)
        #expect(try simulator.sendPlain("registration_id=%ZZ").status == 400)
    }

    @Test(arguments: [
        ("GET", "/fcm/send", 405), ("PUT", "/control", 405), ("POST", "/stats", 405), ("GET", "/nowhere", 404),
    ])
    func otherRoutesAndMethods(method: String, path: String, status: Int) throws {
        let simulator = FCMSimulator.everySide()
        #expect(try simulator.call(method, path).status == status)
        #expect(simulator.stats().totalRequests == 0)
    }
}
