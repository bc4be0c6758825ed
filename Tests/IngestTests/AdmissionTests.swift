import Foundation
import HTTP
import Queue
import Storage
import Testing
import TestSupport

@testable import Ingest

/// `IngestAPI.admit`: the API token is checked from a request's head alone, and the refusal has the shape the
/// route's clients read.
@Suite struct AdmissionTests {
    private let directory = TemporaryDirectory(prefix: "herald-admit")
    private let writer: DatabaseWriter
    private let readers: DatabaseReaders

    init() throws {
        writer = try DatabaseWriter(path: directory.path("herald.db"))
        readers = try DatabaseReaders(path: directory.path("herald.db"))
    }

    private func api(token: String?) -> IngestAPI {
        IngestAPI(writer: writer, readers: readers, apiToken: token)
    }

    private func head(_ method: String, _ target: String, authorization: String? = nil) -> HTTPRequest {
        HTTPRequest(
            method: method, target: target,
            headers: [("host", "h"), ("content-length", "16000000")]
                + (authorization.map { [("authorization", $0)] } ?? []))
    }

    private func errorCode(_ response: HTTPResponse?) -> String? {
        guard let body = response?.body,
              let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
        else { return nil }
        return (object["error"] as? [String: Any])?["code"] as? String
    }

    @Test(arguments: [
        ("POST", "/v1/messages/batch"), ("POST", "/v1/messages"), ("GET", "/v1/messages/x"),
        ("PUT", "/v1/tokens/t"), ("GET", "/metrics"), ("GET", "/nowhere"), ("POST", "/healthz"),
    ])
    func withoutTheTokenHeraldRoutesGetHeralds401(method: String, target: String) {
        let api = api(token: "s3cret")
        for authorization in [nil, "Bearer wrong", "key=s3cret", "s3cret"] {
            let refusal = api.admit(head(method, target, authorization: authorization))
            let challenge = refusal?.headers.first { $0.name == "WWW-Authenticate" }?.value
            let body = String(decoding: refusal?.body ?? [], as: UTF8.self)
            #expect(refusal?.status == 401)
            #expect(errorCode(refusal) == "Unauthorized")
            #expect(challenge == "Bearer")
            #expect(!body.contains("s3cret"))
        }
        #expect(api.admit(head(method, target, authorization: "Bearer s3cret")) == nil)
    }

    @Test func fcmSendTakesKeyOrBearerAndRefusesInFCMsShape() {
        let api = api(token: "s3cret")
        let refusal = api.admit(head("POST", "/fcm/send", authorization: "key=wrong"))
        let contentType = refusal?.headers.first { $0.name == "Content-Type" }?.value ?? ""
        let body = String(decoding: refusal?.body ?? [], as: UTF8.self)
        #expect(refusal?.status == 401)
        #expect(contentType.hasPrefix("text/plain"))
        #expect(!body.contains("wrong"))
        #expect(api.admit(head("POST", "/fcm/send", authorization: "key=s3cret")) == nil)
        #expect(api.admit(head("POST", "/fcm/send", authorization: "Bearer s3cret")) == nil)
    }

    @Test func healthChecksNeedNoToken() {
        let api = api(token: "s3cret")
        #expect(api.admit(head("GET", "/healthz")) == nil)
        #expect(api.admit(head("GET", "/readyz")) == nil)
    }

    @Test func withoutAConfiguredTokenEverythingIsAdmitted() {
        #expect(api(token: nil).admit(head("POST", "/v1/messages/batch")) == nil)
    }

    @Test func bodyLimitFollowsTheDecodedRoute() {
        let api = api(token: nil)
        #expect(api.bodyLimit(method: "POST", path: "/v1/messages/batch") == IngestAPI.batchBodyLimit)
        #expect(api.bodyLimit(method: "POST", path: "/v1/messages/%62atch") == IngestAPI.batchBodyLimit)
        #expect(api.bodyLimit(method: "POST", path: "/v1/messages%2Fbatch") == IngestAPI.bodyLimit)
        #expect(api.bodyLimit(method: "POST", path: "/v1/messages") == IngestAPI.bodyLimit)
    }

    @Test func theServersDefaultBodyBudgetHoldsTheLargestBody() {
        // A body larger than the budget could never be admitted: every try would be a 503.
        let configuration = HTTPServerConfiguration(address: .tcp(host: "127.0.0.1", port: 0))
        #expect(configuration.maxBodyBytesInFlight >= IngestAPI.batchBodyLimit)
    }
}
