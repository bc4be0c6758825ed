import HTTP
import Ingest
import Support

/// Who may use the console and its API (SPEC §18), decided from a request's head alone, before its body is read.
/// With an API token, a request needs `Authorization: Bearer <api token>` (everything), `Bearer <read-only token>`
/// (GET only), or the `herald_console` cookie of a login; without one (loopback only) it needs nothing. Wrong
/// tokens, in a header or at the login, count against the client's address (`GuessThrottle`). Requests from other
/// sites never get here: `FrontDoor` refuses them first. A per-tenant API token (SPEC §22) opens nothing here: it gets
/// `403`, not counted as a wrong token.
///
/// A refused request changes nothing: the refusal is the answer, and the handler never runs.
public struct ConsoleAccess: Sendable {
    public static let cookieName = "herald_console"

    private let apiToken: [UInt8]?
    private let readOnlyToken: [UInt8]?
    private let tenants: APITokens
    public let sessions: ConsoleSessions
    private let guesses: GuessThrottle

    /// - Parameters:
    ///   - apiToken: serve's `--api-token`; nil lets every caller in as admin (serve refuses that off loopback).
    ///   - readOnlyToken: `--console-read-only-token`: looks, never acts. Needs `apiToken`.
    ///   - guesses: who presented wrong tokens lately; shared with ingest's bearer tokens.
    ///   - tenants: the per-tenant API tokens, refused here with 403.
    public init(
        apiToken: String?, readOnlyToken: String?, sessions: ConsoleSessions = ConsoleSessions(),
        guesses: GuessThrottle = GuessThrottle(), tenants: APITokens = APITokens()
    ) {
        self.apiToken = apiToken.map { Array($0.utf8) }
        self.readOnlyToken = apiToken == nil ? nil : readOnlyToken.map { Array($0.utf8) }
        self.sessions = sessions
        self.guesses = guesses
        self.tenants = tenants
    }

    /// Whether the console needs a login at all.
    public var needsLogin: Bool { apiToken != nil }

    /// The role a token presented by `peer` gives. Both comparisons always run, in constant time, so the time taken
    /// tells nothing about which token was nearly right; a wrong one counts against `peer`.
    public func check(token presented: String, from peer: PeerAddress?) -> GuessThrottle.Verdict<ConsoleRole> {
        guard let apiToken else { return .passed(.admin) }
        return guesses.check(peer, "console token") {
            let bytes = Array(presented.utf8)
            let isAdmin = constantTimeEquals(bytes, apiToken)
            let isReadOnly = readOnlyToken.map { constantTimeEquals(bytes, $0) } ?? false
            return isAdmin ? .admin : isReadOnly ? .readOnly : nil
        }
    }

    /// What `request` authenticates as: its bearer token when it has an `Authorization` header (a wrong one is not
    /// rescued by a cookie), else its session cookie.
    public func check(_ request: HTTPRequest, now: Int64) -> GuessThrottle.Verdict<ConsoleRole> {
        guard apiToken != nil else { return .passed(.admin) }
        if let header = request.header("authorization") {
            guard header.hasPrefix("Bearer ") else { return .refused }
            return check(token: String(header.dropFirst("Bearer ".count)), from: request.peer)
        }
        return Self.sessionID(in: request).flatMap { sessions.role(of: $0, now: now) }.map { .passed($0) } ?? .refused
    }

    /// The role `request` authenticates as; nil when it does not.
    public func role(of request: HTTPRequest, now: Int64) -> ConsoleRole? {
        guard case .passed(let role) = check(request, now: now) else { return nil }
        return role
    }

    /// Nil when `request` may go on to the admin API, else why not: 401 without a good token or login, 429 for an
    /// address that guessed too often, 403 for a change asked with the read-only token.
    public func refusal(_ request: HTTPRequest, now: Int64) -> HTTPResponse? {
        if apiToken != nil, let header = request.header("authorization"), header.hasPrefix("Bearer "),
           tenants.grant(for: Array(header.utf8.dropFirst("Bearer ".utf8.count))) != nil
        {
            return AdminAPI.error(.forbidden("the console and /v1/admin need the admin token, not a per-tenant one"))
        }
        switch check(request, now: now) {
        case .refused:
            return AdminAPI.error(.unauthorized("log in, or send Authorization: Bearer TOKEN"))
        case .throttled(let seconds):
            var answer = AdminAPI.error(.tooManyWrongTokens(retryAfterSeconds: seconds))
            answer.headers.append(("Retry-After", String(seconds)))
            return answer
        case .passed(.readOnly) where request.method != "GET" && request.method != "HEAD":
            return AdminAPI.error(
                APIError(status: 403, code: "ReadOnly", message: "the read-only token can look but not act"))
        case .passed:
            return nil
        }
    }

    /// The value of the `herald_console` cookie, if the request has one.
    public static func sessionID(in request: HTTPRequest) -> String? {
        for header in request.headers where header.name == "cookie" {
            for pair in header.value.split(separator: ";") {
                let trimmed = pair.drop(while: { $0 == " " })
                if trimmed.hasPrefix(cookieName + "=") { return String(trimmed.dropFirst(cookieName.count + 1)) }
            }
        }
        return nil
    }
}
