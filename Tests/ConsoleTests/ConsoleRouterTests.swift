import Console
import Dispatch
import Foundation
import HTTP
import TestSupport
import Ingest
import Queue
import Storage
import Support
import Testing

/// `serve`'s handler with the console in front of ingest (behind the front door, as serve has it), on a real SQLite
/// file: which requests reach what, what the head alone refuses, what the login sets, and what every page answer
/// carries.
@Suite struct ConsoleRouterTests {
    private let served: ServedConsole
    private var writer: DatabaseWriter { served.writer }
    private var readers: DatabaseReaders { served.readers }
    private let router: FrontDoor
    private static let host = ("host", "127.0.0.1:8600")
    private static let sameOrigin = [host, ("origin", "http://127.0.0.1:8600"), ("sec-fetch-site", "same-origin")]

    init() throws {
        served = try ServedConsole(prefix: "herald-console")
        router = served.frontDoor(token: "secret", readOnlyToken: "look")
    }

    private func request(
        _ method: String, _ path: String, _ headers: [(String, String)] = [], body: String = ""
    ) -> HTTPRequest {
        HTTPRequest(method: method, target: path, headers: [Self.host] + headers, body: Array(body.utf8))
    }

    /// What serve does: the head first, then the whole request.
    private func send(_ request: HTTPRequest) -> HTTPResponse {
        exchange(request, with: router)
    }

    private func json(_ response: HTTPResponse) -> JSON? {
        try? JSON.parse(response.body)
    }

    private func logIn(_ token: String) -> String? {
        let response = send(request("POST", "/console/login", Self.sameOrigin, body: "token=\(token)"))
        guard response.status == 303, let cookie = response.header("Set-Cookie") else { return nil }
        return String(cookie.prefix(while: { $0 != ";" }))
    }

    @Test func aLoginCookieOpensTheConsoleButNeverIngest() throws {
        let cookie = try #require(logIn("secret"))
        #expect(cookie.hasPrefix("herald_console=") && !cookie.contains("secret"))
        let session = send(request("GET", "/v1/admin/session", [("cookie", cookie)]))
        #expect(session.status == 200 && json(session)?["role"] == "admin")
        let post = send(request(
            "POST", "/v1/messages", Self.sameOrigin + [("cookie", cookie)], body: #"{"to": "a"}"#))
        #expect(post.status == 401, "the console's cookie must not send pushes")
        #expect(send(request("GET", "/v1/tokens/a", [("cookie", cookie)])).status == 401)
    }

    @Test func theLoginSetsAnHttpOnlyStrictCookieOnlyForAGoodTokenFromThisSite() throws {
        let good = send(request("POST", "/console/login", Self.sameOrigin, body: "token=look"))
        let cookie = try #require(good.header("Set-Cookie"))
        #expect(good.status == 303 && good.header("Location") == "/console")
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Path=/"))
        let wrong = send(request("POST", "/console/login", Self.sameOrigin, body: "token=nope"))
        #expect(wrong.status == 303 && wrong.header("Location") == "/console?login=failed")
        #expect(wrong.header("Set-Cookie") == nil)
        let crossSite = send(request(
            "POST", "/console/login", [("origin", "http://evil.example")], body: "token=secret"))
        #expect(crossSite.status == 403 && crossSite.header("Set-Cookie") == nil)
    }

    @Test func logOutEndsTheSession() throws {
        let cookie = try #require(logIn("secret"))
        let out = send(request("POST", "/console/logout", Self.sameOrigin + [("cookie", cookie)]))
        #expect(out.status == 303 && out.header("Set-Cookie")?.contains("Max-Age=0") == true)
        #expect(send(request("GET", "/v1/admin/session", [("cookie", cookie)])).status == 401)
    }

    @Test func everyPageAnswerCarriesTheStrictPolicy() {
        for (path, type) in [
            ("/console", "text/html"), ("/console/", "text/html"), ("/console/console.js", "text/javascript"),
            ("/console/console.css", "text/css"), ("/console/nope.js", "text/plain"),
        ] {
            let response = send(request("GET", path))
            #expect(response.status == (path.hasSuffix("nope.js") ? 404 : 200), "\(path)")
            #expect(response.header("Content-Type")?.hasPrefix(type) == true, "\(path)")
            let policy = response.header("Content-Security-Policy") ?? ""
            #expect(policy.contains("script-src 'self'") && policy.contains("default-src 'none'")
                        && !policy.contains("unsafe"), "\(path)")
            #expect(response.header("X-Content-Type-Options") == "nosniff")
            #expect(response.header("X-Frame-Options") == "DENY")
        }
        let page = String(decoding: send(request("GET", "/console")).body, as: UTF8.self)
        #expect(page.contains(#"<script src="/console/console.js" defer></script>"#))
        #expect(!page.contains("<script>"), "no inline script")
    }

    @Test func refusalsComeFromTheHeadAlone() {
        let readOnly = [("authorization", "Bearer look")]
        #expect(router.admit(request("GET", "/v1/admin/overview"))?.status == 401)
        #expect(router.admit(request("POST", "/v1/admin/dead/purge", readOnly))?.status == 403)
        #expect(router.admit(request("POST", "/v1/admin/dead/purge", [("authorization", "Bearer secret"),
                                                                       ("sec-fetch-site", "cross-site")]))?.status
                == 403)
        #expect(router.admit(request("GET", "/v1/admin/overview", readOnly)) == nil)
        #expect(router.admit(request("GET", "/console")) == nil, "the page itself is no secret")
        #expect(router.bodyLimit(method: "POST", path: "/console/login") == 4096)
    }

    /// With a big backlog the overview shows the latest background count rather than counting again, but the
    /// apps' switches as they are now.
    @Test func aBigBacklogsOverviewShowsTheLatestCountAndTheSwitchesAsTheyAre() throws {
        let snapshot = StatusSnapshot()
        let admin = AdminAPI(
            writer: writer, readers: readers, access: ConsoleAccess(apiToken: nil, readOnlyToken: nil),
            providers: [:], metrics: .herald(), history: RateHistory(since: 0), snapshot: snapshot)
        let router = ConsoleRouter(api: IngestAPI(writer: writer, readers: readers, apiToken: nil), admin: admin)
        _ = try writer.write { try $0.ensureApp("default") }
        func overview() throws -> JSON {
            let responder = WaitingResponder()
            router.handle(request("GET", "/v1/admin/overview"), responder: responder)
            return try #require(json(responder.wait()))
        }
        #expect(try overview()["apps"]?.arrayValue?.first?["queued"] == 0, "a quick count is made each time")
        let countedAt = Clock.nowMillis() + 1  // newer than the quick count just made, which the snapshot kept
        snapshot.record([AppStatus(name: "default", queued: 4_000_000, ready: 3_000_000)], at: countedAt,
                        tookMillis: 900)
        _ = try writer.write { try $0.pauseApp("default", reason: "now", now: 2000) }
        let big = try overview()
        let app = try #require(big["apps"]?.arrayValue?.first)
        #expect(big["counts_at"] == .int(countedAt))
        #expect(app["queued"] == 4_000_000 && app["scheduled"] == 1_000_000)
        #expect(app["state"] == "paused" && app["pause_reason"] == "now")
    }

    @Test func badBodiesAndUnknownThingsAreRefusedAndChangeNothing() {
        let admin = [("authorization", "Bearer secret")]
        for body in [
            "", "[]", #"{"ids": []}"#, #"{"ids": [0]}"#, #"{"ids": ["1"]}"#, #"{"ids": [1], "filter": {}}"#,
            #"{"filter": {"after": "1.2"}}"#, #"{"filter": {"colour": "red"}}"#, #"{"filter": {"since": "soon"}}"#,
            #"{"filter": {}, "limit": 0}"#, #"{"filter": {}, "limit": 5001}"#, #"{"other": 1}"#,
        ] {
            let response = send(request("POST", "/v1/admin/dead/requeue", admin, body: body))
            #expect(response.status == 400, "\(body)")
            #expect(json(response)?["error"]?["code"] != nil, "\(body)")
        }
        #expect(send(request("POST", "/v1/admin/apps/nope/pause", admin, body: #"{"reason": "x"}"#)).status == 404)
        #expect(send(request("POST", "/v1/admin/apps/default/pause", admin, body: #"{"reason": 1}"#)).status == 400)
        #expect(send(request("GET", "/v1/admin/dead?limit=501", admin)).status == 400)
        #expect(send(request("GET", "/v1/admin/dead?after=x", admin)).status == 400)
        #expect(send(request("GET", "/v1/admin/dead/12345", admin)).status == 404)
        #expect(send(request("GET", "/v1/admin/messages/nope", admin)).status == 404)
        #expect(send(request("DELETE", "/v1/admin/overview", admin)).status == 405)
        #expect(send(request("GET", "/v1/admin/nothing", admin)).status == 404)
        let nothing = send(request("POST", "/v1/admin/dead/requeue", admin, body: #"{"filter": {}}"#))
        #expect(nothing.status == 200 && json(nothing)?["requeued"] == 0 && json(nothing)?["done"] == true)
    }
}
