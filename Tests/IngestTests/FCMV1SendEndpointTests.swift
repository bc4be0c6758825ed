import Foundation
import HTTP
import Queue
import Storage
import Support
import Testing

@testable import Ingest
import TestSupport

/// `POST /v1/projects/{project}/messages:send` through `IngestAPI` on a real database: FCM v1's answers, in FCM v1's
/// shape, and only what was committed is answered 200.
@Suite struct FCMV1SendEndpointTests {
    private let directory = TemporaryDirectory(prefix: "herald-fcmv1")
    private let writer: DatabaseWriter
    private let readers: DatabaseReaders

    init() throws {
        writer = try DatabaseWriter(path: directory.path("herald.db"))
        readers = try DatabaseReaders(path: directory.path("herald.db"))
    }

    private func api(
        token: String? = nil, projects: [String: String] = ["proj-a": "default", "proj-b": "b"],
        providers: [String: ProviderKind] = [:]
    ) -> IngestAPI {
        IngestAPI(writer: writer, readers: readers, apiToken: token, knownApps: ["default", "b"], projects: projects,
                  providers: providers)
    }

    private func send(
        _ api: IngestAPI, _ body: String, project: String = "proj-a", headers: [(String, String)] = [],
        method: String = "POST"
    ) -> (status: Int, json: [String: Any], headers: [(name: String, value: String)]) {
        let responder = WaitingResponder()
        api.handle(HTTPRequest(method: method, target: "/v1/projects/\(project)/messages:send",
                               headers: headers.map { (name: $0.0.lowercased(), value: $0.1) }, body: Array(body.utf8)),
                   responder: responder)
        let response = responder.wait()
        let json = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
        return (response.status, json, response.headers)
    }

    private func messages() throws -> [(app: String, format: String, field: String, payload: String)] {
        try writer.write {
            try $0.connection.query("SELECT app, format, token_field, payload FROM messages ORDER BY rowid") {
                ($0.string(0), $0.string(1), $0.string(2), $0.string(3))
            }
        }
    }

    /// `{"error": {"code", "message", "status", "details"?}}` as the Admin SDKs read it.
    private func error(_ json: [String: Any]) -> (code: Int?, status: String?, message: String, errorCode: String?) {
        let error = json["error"] as? [String: Any] ?? [:]
        let detail = (error["details"] as? [[String: Any]])?.first
        #expect(detail == nil || detail?["@type"] as? String == "type.googleapis.com/google.firebase.fcm.v1.FcmError")
        return (error["code"] as? Int, error["status"] as? String, error["message"] as? String ?? "",
                detail?["errorCode"] as? String)
    }

    @Test func anAcceptedMessageIsCommittedAndNamedAsFCMNamesIt() throws {
        let reply = send(api(), #"{"message":{"fid":"f-1","android":{"ttl":"60s"},"webpush":{"data":{"a":"b"}}}}"#,
                         project: "proj-b")
        #expect(reply.status == 200)
        let name = try #require(reply.json["name"] as? String)
        #expect(name.hasPrefix("projects/proj-b/messages/"))
        let stored = try messages()
        #expect(stored.count == 1)
        #expect(stored.first?.app == "b", "the project picks the app")
        #expect(stored.first?.format == "v1")
        #expect(stored.first?.field == "fid")
        #expect(stored.first?.payload == #"{"android":{"ttl":"60s"},"webpush":{"data":{"a":"b"}}}"#)
        let id = String(name.dropFirst("projects/proj-b/messages/".count))
        #expect(try writer.write { try $0.message(id: id) }?.ttlSeconds == 60)
    }

    @Test func anInvalidMessageIsInvalidArgumentAndNothingIsStored() throws {
        let reply = send(api(), #"{"message":{"token":"t","data":{"n":1}}}"#)
        #expect(reply.status == 400)
        let refused = error(reply.json)
        #expect(refused.code == 400)
        #expect(refused.status == "INVALID_ARGUMENT")
        #expect(refused.errorCode == "INVALID_ARGUMENT")
        #expect(refused.message.contains("message.data[0].value"))
        #expect(send(api(), "not json").status == 400)
        #expect(send(api(), #"{"message":{"token":"t"},"app":"b"}"#).status == 400, "Herald's fields are not FCM's")
        #expect(try messages().isEmpty)
    }

    @Test func aWrongTokenIsUnauthenticatedInV1Shape() throws {
        let api = api(token: "secret-token")
        let reply = send(api, #"{"message":{"token":"t"}}"#, headers: [("Authorization", "Bearer wrong")])
        #expect(reply.status == 401)
        #expect(error(reply.json).status == "UNAUTHENTICATED")
        let legacyKey = send(api, #"{"message":{"token":"t"}}"#, headers: [("Authorization", "key=secret-token")])
        #expect(legacyKey.status == 401, "v1 takes a bearer token only")
        #expect(send(api, #"{"message":{"token":"t"}}"#, headers: [("Authorization", "Bearer secret-token")]).status
            == 200)
        #expect(try messages().count == 1)
    }

    @Test func anUnknownProjectIsNotFound() throws {
        let reply = send(api(), #"{"message":{"token":"t"}}"#, project: "elsewhere")
        #expect(reply.status == 404)
        #expect(error(reply.json).status == "NOT_FOUND")
        #expect(error(reply.json).errorCode == nil, "FCM has no error code for it: the SDKs go by status")
        #expect(try messages().isEmpty)
    }

    @Test func withoutProjectIDsEveryProjectIsAppDefault() throws {
        #expect(send(api(projects: [:]), #"{"message":{"token":"t"}}"#, project: "anything").status == 200)
        #expect(try messages().first?.app == "default")
    }

    @Test func aLegacyAppRefusesWhatLegacyCannotCarry() throws {
        let api = api(providers: ["default": .fcmLegacy])
        let fid = send(api, #"{"message":{"fid":"f"}}"#)
        #expect(fid.status == 400)
        #expect(error(fid.json).message.contains("message.fid"))
        let webpush = send(api, #"{"message":{"token":"t","webpush":{"data":{"a":"b"}}}}"#)
        #expect(webpush.status == 400)
        #expect(error(webpush.json).message.contains("message.webpush"))
        #expect(try messages().isEmpty)
        #expect(send(api, #"{"message":{"token":"t","android":{"priority":"high"}}}"#).status == 200,
                "what maps down is queued")
    }

    @Test func anIdempotencyKeyRepeatsTheFirstAnswer() throws {
        let api = api()
        let first = send(api, #"{"message":{"token":"t"}}"#, headers: [("Idempotency-Key", "k-1")])
        let again = send(api, #"{"message":{"token":"t"}}"#, headers: [("Idempotency-Key", "k-1")])
        #expect(first.status == 200 && again.status == 200)
        #expect(first.json["name"] as? String == again.json["name"] as? String)
        #expect(try messages().count == 1)

        let other = send(api, #"{"message":{"token":"t","data":{"x":"2"}}}"#, headers: [("Idempotency-Key", "k-1")])
        #expect(other.status == 409)
        #expect(error(other.json).status == "ABORTED")
        #expect(!error(other.json).message.contains(first.json["name"] as? String ?? "-"))
        #expect(try messages().count == 1)
    }

    @Test func aWriterThatIsBehindGetsUnavailableWithRetryAfterAndNothingIsStored() throws {
        let api = IngestAPI(writer: writer, readers: readers, apiToken: nil, maxWriterBacklog: 1)
        let release = DispatchSemaphore(value: 0)
        let holding = DispatchSemaphore(value: 0)
        writer.enqueue({ _ in holding.signal(); release.wait() }, completion: { _ in })
        holding.wait()
        writer.enqueue({ _ in }, completion: { _ in })
        let reply = send(api, #"{"message":{"token":"t"}}"#)
        release.signal()
        #expect(reply.status == 503)
        #expect(reply.headers.contains { $0.name == "Retry-After" })
        #expect(error(reply.json).status == "UNAVAILABLE")
        #expect(error(reply.json).errorCode == "UNAVAILABLE")
        #expect(try messages().isEmpty)
    }

    @Test func theUnauthorizedAnswerFollowsTheEndpointsShapeFromTheHeadAlone() {
        let api = IngestAPI(writer: writer, readers: readers, apiToken: "s3cret")
        let head = HTTPRequest(
            method: "POST", target: "/v1/projects/p/messages:send",
            headers: [("host", "h"), ("content-length", "16000000"), ("authorization", "Bearer wrong")])
        #expect(api.admit(head)?.body == FCMV1SendEndpoint.unauthorized.body)
        #expect(api.admit(head)?.status == 401)
    }

    @Test func onlyPostIsAllowed() {
        let reply = send(api(), "", method: "GET")
        #expect(reply.status == 405)
        #expect(reply.headers.contains { $0.name == "Allow" && $0.value == "POST" })
    }

    @Test func postMessagesAnswersV1ErrorsInHeraldsShape() throws {
        let responder = WaitingResponder()
        api().handle(HTTPRequest(method: "POST", target: "/v1/messages",
                                 body: Array(#"{"message":{"token":"t","android":{"ttl":"1h"}}}"#.utf8)),
                     responder: responder)
        let response = responder.wait()
        #expect(response.status == 400)
        let body = String(decoding: response.body, as: UTF8.self)
        #expect(body.contains(#""code":"InvalidArgument""#))
        #expect(body.contains("message.android.ttl"))
    }
}
