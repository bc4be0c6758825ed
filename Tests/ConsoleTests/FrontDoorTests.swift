import Console
import Foundation
import HTTP
import TestSupport
import Ingest
import Storage
import Support
import Synchronization
import Testing

/// Who may knock (SPEC §20), through `serve`'s whole handler — the front door before the console and ingest — on a
/// real SQLite file: other sites' changes refused on every route before any token is looked at, rebound names
/// refused without a token, wrong tokens slowing their address down.
@Suite struct FrontDoorTests {
    private final class TestClock: Sendable {
        let millis = Atomic<Int64>(1_700_000_000_000)
        func advance(_ by: Int64) { millis.add(by, ordering: .relaxed) }
    }

    private let served: ServedConsole
    private let clock = TestClock()
    /// `serve --api-token secret`, and `serve` without a token.
    private let guarded: FrontDoor
    private let open: FrontDoor

    private static let host = ("host", "127.0.0.1:8600")
    private static let guesser = PeerAddress.ipv4(0xC633_6407)
    private static let bystander = PeerAddress.ipv4(0xC633_6408)

    init() throws {
        served = try ServedConsole(prefix: "herald-front-door")
        let guesses = GuessThrottle(clock: { [clock] in clock.millis.load(ordering: .relaxed) })
        guarded = served.frontDoor(token: "secret", guesses: guesses)
        open = served.frontDoor(token: nil, guesses: guesses)
    }

    private func request(
        _ method: String, _ path: String, _ headers: [(String, String)], body: String = "",
        peer: PeerAddress? = Self.guesser
    ) -> HTTPRequest {
        HTTPRequest(method: method, target: path, headers: headers, body: Array(body.utf8), peer: peer)
    }

    private func code(_ response: HTTPResponse) -> String? {
        (try? JSON.parse(response.body))?["error"]?["code"]?.stringValue
    }

    /// Messages, registered tokens and paused apps in the database: what a refused request must leave at 0.
    private func changes() throws -> Int {
        let connection = try Storage.Connection(path: served.directory.path("herald.db"))
        return try connection.queryOne(
            "SELECT (SELECT count(*) FROM messages) + (SELECT count(*) FROM tokens)"
                + " + (SELECT count(*) FROM apps WHERE paused = 1)") { $0.int(0) } ?? -1
    }

    /// Every route family that changes something, with a body it would accept.
    private static let changingRoutes: [(method: String, path: String, body: String)] = [
        ("POST", "/v1/messages", #"{"to": "a", "data": {"k": "v"}}"#),
        ("POST", "/v1/messages/batch", #"{"messages": [{"to": "a"}]}"#),
        ("DELETE", "/v1/messages/01JD3M2X0Q8W5N3H7K2C4V6B9R", ""),
        ("PUT", "/v1/tokens/t1", #"{"app": "default", "user": "u1"}"#),
        ("DELETE", "/v1/tokens/t1", ""),
        ("PUT", "/v1/subscriptions", #"{"app": "default", "subscription": {}}"#),
        ("POST", "/fcm/send", #"{"to": "a"}"#),
        ("POST", "/v1/projects/p/messages:send", #"{"message": {"token": "a"}}"#),
        ("POST", "/v1/admin/dead/purge", #"{"filter": {}}"#),
        ("POST", "/v1/admin/apps/default/pause", #"{"reason": "x"}"#),
        ("POST", "/console/login", "token=secret"),
        ("POST", "/console/logout", ""),
        ("OPTIONS", "/v1/messages", ""),
    ]

    private static let otherSites: [[(String, String)]] = [
        [("origin", "http://evil.example")], [("origin", "null")], [("origin", "http://127.0.0.1:8601")],
        [("origin", "http://127.0.0.1.evil.example:8600")], [("origin", "ftp://127.0.0.1:8600")],
        [("origin", "https://evil.example"), ("sec-fetch-site", "same-origin")],
        [("sec-fetch-site", "cross-site")], [("sec-fetch-site", "same-site")], [("sec-fetch-site", "none")],
        [("sec-fetch-site", "cross-site"), ("origin", "http://127.0.0.1:8600")],
    ]

    private static let ownSite: [[(String, String)]] = [
        [], [("sec-fetch-site", "same-origin")], [("origin", "http://127.0.0.1:8600")],
        [("origin", "HTTP://127.0.0.1:8600"), ("sec-fetch-site", "same-origin")],
        // What a browser sends through a TLS proxy that passes the Host on.
        [("origin", "https://127.0.0.1:8600")],
    ]

    @Test func aChangeFromAnotherSiteIsRefusedOnEveryRouteBeforeItsTokenAndChangesNothing() throws {
        for (door, token) in [(guarded, "secret"), (open, nil)] {
            for route in Self.changingRoutes {
                for site in Self.otherSites {
                    // The right token, a wrong one, and none: the answer is the same, and no guess is counted.
                    for authorization in [token.map { "Bearer \($0)" }, "Bearer wrong", nil] {
                        let credentials = authorization.map { [("authorization", $0)] } ?? []
                        let answer = exchange(
                            request(route.method, route.path, [Self.host] + credentials + site, body: route.body),
                            with: door)
                        #expect(answer.status == 403 && code(answer) == "CrossOrigin",
                                "\(route.method) \(route.path) \(site) \(authorization ?? "no token")")
                        #expect(answer.header("Set-Cookie") == nil)
                    }
                }
            }
        }
        #expect(try changes() == 0, "a refused request changed something")
        let right = request("POST", "/v1/messages", [Self.host, ("authorization", "Bearer secret")])
        #expect(guarded.admit(right) == nil, "the wrong tokens refused at the door were not counted")
    }

    @Test func aChangeFromThisSiteOrFromABackendGoesThrough() throws {
        for (door, credentials) in [(guarded, [("authorization", "Bearer secret")]), (open, [])] {
            for route in Self.changingRoutes {
                for site in Self.ownSite {
                    let head = request(route.method, route.path, [Self.host] + credentials + site)
                    #expect(door.admit(head) == nil, "\(route.method) \(route.path) \(site)")
                }
            }
        }
        let posted = exchange(request(
            "POST", "/v1/messages", [Self.host, ("authorization", "Bearer secret")] + Self.ownSite[2],
            body: #"{"to": "a"}"#), with: guarded)
        #expect(posted.status == 202)
        // Reads change nothing: another site's GET is judged by its token alone (and cannot read the answer).
        let read = request(
            "GET", "/v1/admin/overview",
            [Self.host, ("authorization", "Bearer secret"), ("origin", "http://evil.example")])
        #expect(guarded.admit(read) == nil)
    }

    @Test(arguments: [
        "evil.example", "evil.example:8600", "127.0.0.1.evil.example", "localhost.evil.example",
        "localhost.evil.example:8600", "127.0.0.1:8600.evil.example", "[::1].evil.example", "0x7f.0.0.1",
        "2130706433", "127.0.0.1.", "localhost.", "127.0.0.256", "[::ffff:127.0.0.1]", "localhost:", "",
    ])
    func withoutATokenARequestForAnotherNameIsMisdirected(host: String) throws {
        for (method, path) in [
            ("GET", "/v1/admin/dead"), ("GET", "/v1/messages/x"), ("GET", "/v1/tokens/t"), ("GET", "/healthz"),
            ("GET", "/console"), ("POST", "/v1/messages"), ("POST", "/v1/admin/dead/purge"),
        ] {
            let answer = exchange(request(method, path, [("host", host)], body: #"{"to": "a"}"#), with: open)
            #expect(answer.status == 421 && code(answer) == "MisdirectedRequest", "\(method) \(path) Host: \(host)")
        }
        #expect(try changes() == 0)
        let viaUnixSocket = request("GET", "/v1/admin/overview", [("host", host)], peer: .unix)
        #expect(open.admit(viaUnixSocket) == nil, "a Unix socket's client is on this machine")
        let withToken = request("GET", "/v1/admin/overview", [("host", host), ("authorization", "Bearer secret")])
        #expect(guarded.admit(withToken) == nil, "with a token, any name may be used")
    }

    @Test(arguments: [
        "localhost", "localhost:8600", "LOCALHOST:8600", "127.0.0.1", "127.0.0.1:8600", "127.1.2.3:80", "[::1]",
        "[::1]:8600",
    ])
    func withoutATokenLoopbackNamesPass(host: String) {
        #expect(open.admit(request("GET", "/v1/admin/overview", [("host", host)])) == nil)
        #expect(open.admit(request("POST", "/v1/messages", [("host", host)])) == nil)
        #expect(open.admit(request("GET", "/healthz", [])) == nil, "no Host: not a browser")
    }

    @Test func wrongTokensAndLoginsSlowTheirAddressOnEveryRouteUntilTheRightOnePasses() throws {
        let right = [Self.host, ("authorization", "Bearer secret")]
        for index in 0..<GuessThrottle.allowedFailures {
            // Bearer tokens on ingest and on the console's API, and console logins, count together.
            let wrong: HTTPRequest = switch index % 3 {
            case 0: request("POST", "/v1/messages", [Self.host, ("authorization", "Bearer guess\(index)")])
            case 1: request("GET", "/v1/admin/overview", [Self.host, ("authorization", "Bearer guess\(index)")])
            default: request("POST", "/console/login", [Self.host], body: "token=guess\(index)")
            }
            let answer = exchange(wrong, with: guarded)
            #expect([401, 303].contains(answer.status), "\(wrong.target): \(answer.status)")
        }
        let throttled: [(HTTPRequest, String?)] = [
            (request("POST", "/v1/messages", right, body: #"{"to": "a"}"#), "TooManyRequests"),
            (request("GET", "/v1/admin/overview", right), "TooManyRequests"),
            (request("POST", "/fcm/send", [Self.host, ("authorization", "key=secret")], body: #"{"to": "a"}"#), nil),
            (request("POST", "/v1/projects/p/messages:send", right, body: #"{"message": {"token": "a"}}"#), nil),
            (request("POST", "/console/login", [Self.host], body: "token=secret"), nil),
        ]
        for (throttledRequest, expectedCode) in throttled {
            let answer = exchange(throttledRequest, with: guarded)
            #expect(answer.status == 429 && answer.header("Retry-After") == "1", "\(throttledRequest.target)")
            if let expectedCode { #expect(code(answer) == expectedCode) }
            #expect(answer.header("Set-Cookie") == nil)
        }
        let v1 = exchange(throttled[3].0, with: guarded)
        #expect((try? JSON.parse(v1.body))?["error"]?["status"] == "RESOURCE_EXHAUSTED", "v1's shape for its SDKs")
        #expect(try changes() == 0)

        // Another address is not affected; the guesser's right token passes once the block is over, and that ends it.
        let other = request("POST", "/v1/messages", right, body: #"{"to": "a"}"#, peer: Self.bystander)
        #expect(exchange(other, with: guarded).status == 202)
        clock.advance(1000)
        let login = request("POST", "/console/login", [Self.host], body: "token=secret")
        #expect(exchange(login, with: guarded).status == 303)
        #expect(exchange(request("GET", "/v1/admin/overview", [Self.host, ("authorization", "Bearer nope")]),
                     with: guarded).status == 401, "after a pass the count starts again")
        #expect(exchange(request("GET", "/v1/admin/overview", right), with: guarded).status == 200)
    }

    @Test func requestsWithoutATokenGuessNothing() {
        for _ in 0..<(2 * GuessThrottle.allowedFailures) {
            #expect(exchange(request("GET", "/v1/admin/overview", [Self.host]), with: guarded).status == 401)
            #expect(guarded.admit(request("POST", "/v1/messages", [Self.host, ("authorization", "Basic x")]))?
                .status == 401)
        }
        #expect(guarded.admit(request("POST", "/v1/messages", [Self.host, ("authorization", "Bearer secret")])) == nil)
    }
}
