import Foundation
import Testing
import TestSupport

/// The real `herald serve` at the edges of HTTP: what it decides from a request head alone, how it reads
/// an encoded `/`, and the `Host` rule.
@Suite struct HTTPEdgesIntegrationTests {
    private static let token = "edge-SECRET-token"

    @Test func unauthenticatedBatchIsRefused401FromItsHeadWithoutContinue() async throws {
        let herald = try HeraldProcess(arguments: ["--sandbox", "--api-token", Self.token], paused: true)
        defer { herald.stop() }
        let client = try RawHTTPClient(herald.baseURL)
        try client.send("POST /v1/messages/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + "Expect: 100-continue\r\nContent-Length: 16000000\r\n\r\n")
        let refused = try client.readResponse()
        #expect(refused.status == 401, "got \(refused.status) before any body was sent")
        #expect((refused.json["error"] as? [String: Any])?["code"] as? String == "Unauthorized")
        #expect(refused.headers["connection"] == "close")
        #expect(try client.readsEndOfStream())
    }

    @Test func wrongKeyOnFCMSendGetsFCMsOwn401FromItsHead() async throws {
        let herald = try HeraldProcess(arguments: ["--sandbox", "--api-token", Self.token], paused: true)
        defer { herald.stop() }
        let client = try RawHTTPClient(herald.baseURL)
        try client.send("POST /fcm/send HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: key=guessed\r\n"
            + "Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 900000\r\n\r\n")
        let refused = try client.readResponse()
        #expect(refused.status == 401)
        #expect(refused.headers["content-type"]?.hasPrefix("text/plain") == true)
        #expect(!refused.body.contains("guessed"))
        #expect(try client.readsEndOfStream())

        // With the token, the same head is let in and its body read.
        let allowed = try RawHTTPClient(herald.baseURL)
        let body = #"{"to":"tok-1"}"#
        try allowed.send("POST /fcm/send HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: key=\(Self.token)\r\n"
            + "Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: \(body.utf8.count)\r\n\r\n")
        #expect(try allowed.readResponse().status == 100)
        try allowed.send(body)
        #expect(try allowed.readResponse().status == 200)
        #expect(!herald.log.contains(Self.token))
    }

    @Test func healthChecksStayOpenWithAToken() async throws {
        let herald = try HeraldProcess(arguments: ["--sandbox", "--api-token", Self.token], paused: true)
        defer { herald.stop() }
        for path in ["/healthz", "/readyz"] {
            let client = try RawHTTPClient(herald.baseURL)
            try client.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        }
    }

    @Test func percentEncodedSlashAddressesOneSegmentAndNeverAnotherRoute() async throws {
        let herald = try HeraldProcess(paused: true)
        defer { herald.stop() }
        func exchange(_ method: String, _ target: String, body: String = "") throws -> RawHTTPClient.Response {
            let client = try RawHTTPClient(herald.baseURL)
            try client.send("\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.utf8.count)\r\n"
                + "Connection: close\r\n\r\n\(body)")
            return try client.readResponse()
        }
        let created = try exchange("PUT", "/v1/tokens/abc%2Fdef", body: #"{"user":"u1"}"#)
        #expect(created.status == 201)
        #expect(created.json["token"] as? String == "abc/def")
        let shown = try exchange("GET", "/v1/tokens/abc%2Fdef")
        #expect(shown.status == 200)
        #expect(shown.json["token"] as? String == "abc/def")

        let cancelled = try exchange("DELETE", "/v1/messages/a%2Fb")
        #expect(cancelled.status == 404)
        #expect((cancelled.json["error"] as? [String: Any])?["message"] as? String == "no message a/b")

        // `messages%2Fbatch` is one segment, not the batch route.
        let batch = try exchange("POST", "/v1/messages%2Fbatch", body: #"{"messages":[{"to":"x"}]}"#)
        #expect(batch.status == 404)
        #expect(try exchange("POST", "/v1/tokens/%zz").status == 400)
    }

    @Test func http11RequestWithoutHostIs400() async throws {
        let herald = try HeraldProcess(paused: true)
        defer { herald.stop() }
        let client = try RawHTTPClient(herald.baseURL)
        try client.send("GET /healthz HTTP/1.1\r\n\r\n")
        let refused = try client.readResponse()
        #expect(refused.status == 400)
        #expect((refused.json["error"] as? [String: Any])?["code"] as? String == "BadRequest")
        #expect(try client.readsEndOfStream())

        // HTTP/1.0 has no Host requirement (load balancers' health checks often send none).
        let old = try RawHTTPClient(herald.baseURL)
        try old.send("GET /healthz HTTP/1.0\r\n\r\n")
        #expect(try old.readResponse().status == 200)
    }
}
