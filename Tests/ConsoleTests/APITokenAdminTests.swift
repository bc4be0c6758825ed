import Console
import Foundation
import HTTP
import TestSupport
import Ingest
import Queue
import Storage
import Support
import Testing

/// `/v1/admin/api-tokens` (SPEC §22) behind the console's access, with ingest beside it as `serve` has them: a token
/// made here works from the next request and its secret is shown once, a revoked one fails from the next request,
/// and a per-tenant token opens nothing under `/v1/admin`.
@Suite struct APITokenAdminTests {
    private let served: ServedConsole
    private let router: FrontDoor
    private static let host = ("host", "127.0.0.1:8600")
    private static let admin = ("authorization", "Bearer secret")

    init() throws {
        served = try ServedConsole(prefix: "herald-api-tokens")
        try served.writer.write { try $0.ensureApp("shop") }
        router = served.frontDoor(token: "secret", readOnlyToken: "look", providers: ["shop": "fcm-v1"])
    }

    private func send(_ method: String, _ path: String, _ headers: [(String, String)], body: String = "")
        -> HTTPResponse
    {
        exchange(HTTPRequest(method: method, target: path, headers: [Self.host] + headers, body: Array(body.utf8)),
                 with: router)
    }

    private func create(_ body: String) throws -> (id: String, secret: String) {
        let made = send("POST", "/v1/admin/api-tokens", [Self.admin], body: body)
        #expect(made.status == 201)
        let json = try JSON.parse(made.body)
        return (try #require(json["id"]?.stringValue), try #require(json["secret"]?.stringValue))
    }

    @Test func aTokenMadeHereWorksAtOnceAndIsListedWithoutItsSecret() throws {
        let (id, secret) = try create(#"{"apps": ["shop"], "name": "shop backend"}"#)
        let posted = send("POST", "/v1/messages", [("authorization", "Bearer " + secret)], body: #"{"to": "a"}"#)
        #expect(posted.status == 202)
        let list = send("GET", "/v1/admin/api-tokens", [("authorization", "Bearer look")])
        #expect(list.status == 200)
        let text = String(decoding: list.body, as: UTF8.self)
        #expect(!text.contains(secret) && !text.contains("sha256"))
        let token = try #require(try JSON.parse(list.body)["api_tokens"]?.arrayValue?.first)
        #expect(token["id"]?.stringValue == id && token["role"] == "send" && token["name"] == "shop backend")
        #expect(token["apps"] == .array(["shop"]))
    }

    @Test func aRevocationHereHoldsFromTheNextRequest() throws {
        let (id, secret) = try create(#"{"apps": ["shop"], "role": "read"}"#)
        #expect(send("GET", "/v1/token-events", [("authorization", "Bearer " + secret)]).status == 200)
        #expect(send("DELETE", "/v1/admin/api-tokens/\(id)", [Self.admin]).status == 200)
        #expect(send("GET", "/v1/token-events", [("authorization", "Bearer " + secret)]).status == 401)
        #expect(send("DELETE", "/v1/admin/api-tokens/\(id)", [Self.admin]).status == 404)
        let listed = try JSON.parse(send("GET", "/v1/admin/api-tokens", [Self.admin]).body)
        #expect(listed["api_tokens"]?.arrayValue?.first?["revoked_at"]?.int64Value != nil)
    }

    @Test func badRequestsAreRefusedAndStoreNothing() throws {
        for body in [
            #"{"apps": []}"#, #"{"apps": ["nope"]}"#, #"{"apps": ["shop"], "role": "admin"}"#, #"{"apps": "shop"}"#,
            #"{"apps": ["shop"], "extra": 1}"#, "not json",
        ] {
            #expect(send("POST", "/v1/admin/api-tokens", [Self.admin], body: body).status == 400, "\(body)")
        }
        #expect(send("POST", "/v1/admin/api-tokens", [("authorization", "Bearer look")], body: #"{"apps": ["shop"]}"#)
            .status == 403)
        #expect(try served.writer.write { try $0.apiTokens(activeOnly: false) }.isEmpty)
    }

    @Test func aTenantTokenOpensNothingUnderAdminAndIsNotCountedAsAGuess() throws {
        let (_, secret) = try create(#"{"apps": ["shop"]}"#)
        for _ in 0..<(GuessThrottle.allowedFailures + 1) {
            let refused = send("GET", "/v1/admin/overview", [("authorization", "Bearer " + secret)])
            #expect(refused.status == 403)
        }
        #expect(send("POST", "/v1/admin/api-tokens", [("authorization", "Bearer " + secret)], body: "{}").status
            == 403)
    }
}
