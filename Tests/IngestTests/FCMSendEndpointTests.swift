import Foundation
import HTTP
import Queue
import Storage
import Support
import Testing

@testable import Ingest
import TestSupport

/// `POST /fcm/send` through `IngestAPI` on a real database: what is answered is what was committed.
@Suite struct FCMSendEndpointTests {
    private let directory = TemporaryDirectory(prefix: "herald-fcmsend")
    private let writer: DatabaseWriter
    private let readers: DatabaseReaders

    init() throws {
        writer = try DatabaseWriter(path: directory.path("herald.db"))
        readers = try DatabaseReaders(path: directory.path("herald.db"))
    }

    private func api(
        token: String? = nil, metrics: Metrics = .herald(), committed: @escaping @Sendable () -> Void = {}
    ) -> IngestAPI {
        IngestAPI(writer: writer, readers: readers, apiToken: token, metrics: metrics, committed: committed)
    }

    private func send(
        _ api: IngestAPI, _ body: String, contentType: String? = "application/json", headers: [(String, String)] = [],
        method: String = "POST"
    ) -> (status: Int, body: String, headers: [(name: String, value: String)]) {
        var all = headers.map { (name: $0.0.lowercased(), value: $0.1) }
        if let contentType { all.append(("content-type", contentType)) }
        let responder = WaitingResponder()
        api.handle(HTTPRequest(method: method, target: "/fcm/send", headers: all, body: Array(body.utf8)),
                   responder: responder)
        let response = responder.wait()
        return (response.status, String(decoding: response.body, as: UTF8.self), response.headers)
    }

    private func count(_ table: String) throws -> Int {
        try writer.write { try $0.connection.queryOne("SELECT count(*) FROM \(table)") { $0.int(0) } ?? -1 }
    }

    private func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    // MARK: - Stored, then answered

    @Test func aMulticastIsCommittedAndTheAnswerNamesItsRows() throws {
        let woken = Counter()
        let reply = send(api(committed: { woken.increment() }),
                         #"{"registration_ids":["4","8","","4"],"data":{"score":"4x8"}}"#)
        #expect(reply.status == 200)
        let answer = try json(reply.body)
        let rowID = try #require(answer["multicast_id"] as? Int)
        let id = try #require(try writer.write {
            try $0.connection.queryOne("SELECT id FROM messages WHERE rowid = ?", [.integer(Int64(rowID))]) {
                $0.string(0)
            }
        })
        #expect(answer["success"] as? Int == 3)
        #expect(answer["failure"] as? Int == 1)
        #expect(answer["results"] as? [[String: String]] == [
            ["message_id": "\(id):0"], ["message_id": "\(id):1"], ["error": "InvalidRegistration"],
            ["message_id": "\(id):0"],
        ])
        let record = try #require(try readers.read { try $0.message(id: id) })
        #expect(record.deliveries.map(\.token) == ["4", "8"])
        #expect(record.deliveries.allSatisfy { $0.state == .queued })
        #expect(record.payload == #"{"data":{"score":"4x8"}}"#)
        #expect(woken.count == 1)
    }

    @Test func aTopicAnswersTheMessagesRowID() throws {
        let reply = send(api(), #"{"to":"/topics/news","data":{"a":"1"}}"#)
        let rowID = try #require(try json(reply.body)["message_id"] as? Int)
        let kind = try writer.write {
            try $0.connection.queryOne(
                "SELECT target_kind FROM messages WHERE rowid = ?", [.integer(Int64(rowID))]) { $0.string(0) }
        }
        #expect(kind == "topic")
    }

    @Test func plainTextIsStoredAndAnsweredWithItsID() throws {
        let reply = send(api(), "registration_id=42&data.score=4x8&time_to_live=108", contentType: nil)
        #expect(reply.status == 200)
        #expect(reply.body.hasPrefix("id="))
        let id = String(reply.body.dropFirst(3).dropLast(2))
        #expect(reply.body.hasSuffix(":0"))
        let record = try #require(try readers.read { try $0.message(id: id) })
        #expect(record.deliveries.map(\.token) == ["42"])
        #expect(record.ttlSeconds == 108)
    }

    @Test func theAppComesFromXHeraldApp() throws {
        _ = send(api(), #"{"to":"a"}"#, headers: [("X-Herald-App", "second")])
        let app = try writer.write { try $0.connection.queryOne("SELECT app FROM messages") { $0.string(0) } }
        #expect(app == "second")
    }

    @Test func eachStoredMessageIsCountedAsIngested() {
        let metrics = Metrics.herald()
        let api = api(metrics: metrics)
        _ = send(api, #"{"registration_ids":["a","b"]}"#, headers: [("X-Herald-App", "second")])
        _ = send(api, "registration_id=c", contentType: nil, headers: [("X-Herald-App", "second")])
        _ = send(api, #"{"to":"a","data":{"from":"x"}}"#, headers: [("X-Herald-App", "second")])
        #expect(metrics.render().contains(#"herald_ingested_messages_total{app="second"} 2"#))
    }

    // MARK: - Nothing stored

    @Test(arguments: [
        (#"{"to":"a","data":{"from":"x"}}"#, 200), (#"{"registration_ids":["",""]}"#, 200), (#"{}"#, 200),
        (#"{"to":"a","time_to_live":"1"}"#, 400), ("{", 400), (#"{"to":"a","app":"x"}"#, 400),
    ] as [(String, Int)])
    func aRefusedMessageStoresNothing(body: String, status: Int) throws {
        let woken = Counter()
        #expect(send(api(committed: { woken.increment() }), body).status == status)
        #expect(try count("messages") == 0)
        #expect(try count("deliveries") == 0)
        #expect(woken.count == 0)
    }

    @Test func aStorageFailureIsA503WithRetryAfter() throws {
        let api = api()
        writer.close()
        let reply = send(api, #"{"to":"a"}"#)
        #expect(reply.status == 503)
        #expect(reply.headers.contains { $0.name == "Retry-After" })
    }

    // MARK: - Authorization and method

    @Test func withAnAPITokenTheFCMKeyMustBeIt() throws {
        let api = api(token: "s3cret-token")
        let wrong = send(api, #"{"to":"a"}"#, headers: [("Authorization", "key=guessed-key")])
        #expect(wrong.status == 401)
        #expect(!wrong.body.contains("guessed-key"))
        #expect(send(api, #"{"to":"a"}"#).status == 401)
        #expect(send(api, #"{"to":"a"}"#, headers: [("Authorization", "key=s3cret-token-and-more")]).status == 401)
        #expect(try count("messages") == 0)
        #expect(send(api, #"{"to":"a"}"#, headers: [("Authorization", "key=s3cret-token")]).status == 200)
        #expect(send(api, #"{"to":"a"}"#, headers: [("Authorization", "Bearer s3cret-token")]).status == 200)
        #expect(try count("messages") == 2)
    }

    @Test func keyIsOnlyForFCMsEndpoint() {
        let responder = WaitingResponder()
        api(token: "s3cret-token").handle(
            HTTPRequest(method: "GET", target: "/v1/tokens/x", headers: [("authorization", "key=s3cret-token")]),
            responder: responder)
        #expect(responder.wait().status == 401)
    }

    @Test func withoutAnAPITokenAnyServerKeyIsAccepted() {
        #expect(send(api(), #"{"to":"a"}"#, headers: [("Authorization", "key=AIzaSyZ-1u")]).status == 200)
    }

    @Test func onlyPOST() {
        let reply = send(api(), "", contentType: nil, method: "GET")
        #expect(reply.status == 405)
        #expect(reply.headers.contains { $0.name == "Allow" && $0.value == "POST" })
    }
}
