import HTTP
import Support
import TestSupport
import Testing

@testable import HMSSimulator

/// The simulator's HMS side answers as Huawei documents (docs/hms-protocol.md), by token prefix.
@Suite struct HMSSimulatorTests {
    let simulator = HMSSimulator(account: .init(appID: "10000001", clientSecret: "s3cret"))

    private func call(_ method: String, _ path: String, _ body: String, bearer: String? = nil) -> HTTPResponse? {
        let responder = WaitingResponder()
        let headers = bearer.map { [(name: "authorization", value: "Bearer " + $0)] } ?? []
        simulator.handle(
            HTTPRequest(method: method, target: path, headers: headers, body: Array(body.utf8)), responder: responder)
        return responder.answer()?.response
    }

    private func token() throws -> String {
        let reply = try #require(call("POST", HMSSimulator.tokenPath,
                                      "grant_type=client_credentials&client_id=10000001&client_secret=s3cret"))
        #expect(String(decoding: reply.body, as: UTF8.self).contains(#"\/"#), "Huawei escapes the token's slashes")
        return try #require(try JSON.parse(reply.body)["access_token"]?.stringValue)
    }

    private func send(_ tokens: [String], app: String = "10000001", bearer: String?) throws -> (Int, String?, String?) {
        let body = JSON.object([("message", .object([
            ("data", "{}"), ("token", .array(tokens.map(JSON.string))),
        ]))]).serialized()
        let reply = try #require(call("POST", "/v1/\(app)/messages:send", body, bearer: bearer))
        let json = try? JSON.parse(reply.body)
        return (reply.status, json?["code"]?.stringValue, json?["msg"]?.stringValue)
    }

    @Test func theTokenEndpointChecksTheClient() throws {
        _ = try token()
        let wrong = try #require(call("POST", HMSSimulator.tokenPath,
                                      "grant_type=client_credentials&client_id=10000001&client_secret=nope"))
        #expect(wrong.status == 400)
        #expect(try JSON.parse(wrong.body)["sub_error"]?.int64Value == 12304)
    }

    @Test func tokensAreAnsweredByPrefix() throws {
        let bearer = try token()
        #expect(try send(["a", "b"], bearer: bearer).1 == "80000000")
        let partial = try send(["a", "notreg-b"], bearer: bearer)
        #expect(partial.1 == "80100000")
        #expect(try JSON.parse(Array((partial.2 ?? "").utf8))["illegal_tokens"] == ["notreg-b"])
        #expect(try send(["illegal-a", "notreg-b"], bearer: bearer).1 == "80300007")
        #expect(try send(["unavail-1-a"], bearer: bearer).0 == 503)
        #expect(try send(["unavail-1-a"], bearer: bearer).1 == "80000000", "once, then delivered")
        #expect(try send(["internal-1-a"], bearer: bearer).1 == "81000001")
        let stats = simulator.stats()
        #expect(stats.tokens == 9 && stats.refused == 3)
    }

    @Test func theAccessTokenAndAppAreChecked() throws {
        #expect(try send(["a"], bearer: nil).1 == "80200001")
        #expect(try send(["a"], bearer: "made-up").1 == "80200001")
        let bearer = try token()
        #expect(try send(["a"], app: "20000002", bearer: bearer).1 == "80300002")
        simulator.expireTokens()
        #expect(try send(["a"], bearer: bearer).1 == "80200003")
    }

    @Test(arguments: [
        (#"{"message":{"token":[]}}"#, "80300010"),
        (#"{"message":{"token":["a"],"topic":"b"}}"#, "80100001"),
        (#"{"message":{"token":["a"],"data":{"a":"b"}}}"#, "80100003"),
        (#"{"message":{"token":["a"],"android":{"collapse_key":101}}}"#, "80100013"),
        (#"{"message":{"token":["a"],"android":{"ttl":"soon"}}}"#, "80100003"),
        (#"{"message":{"token":["a"],"android":{"notification":{"title":"t"}}}}"#, "80100003"),
        (#"{"message":{"token":["a"],"data":"\#(String(repeating: "x", count: 4100))"}}"#, "80300008"),
        (#"{"message":{"token":["a"],"android":{"ttl":"60s","urgency":"HIGH","collapse_key":-1,"#
            + #""notification":{"click_action":{"type":3}}}}}"#, "80000000"),
    ]) func bodiesAreCheckedAsHuaweiDoes(body: String, code: String) throws {
        let bearer = try token()
        let reply = try #require(call("POST", "/v1/10000001/messages:send", body, bearer: bearer))
        #expect(try JSON.parse(reply.body)["code"]?.stringValue == code)
    }

    @Test func aThousandTokensAtMost() throws {
        let bearer = try token()
        #expect(try send((0..<1000).map { "t\($0)" }, bearer: bearer).1 == "80000000")
        #expect(try send((0..<1001).map { "t\($0)" }, bearer: bearer).1 == "80300010")
    }
}
