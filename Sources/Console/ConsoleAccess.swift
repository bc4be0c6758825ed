import HTTP
import Ingest
import Support

/// Who may use the console and its API (SPEC §18), decided from a request's head alone, before its body is read:
///
/// - with an API token, a request needs `Authorization: Bearer <api token>` (everything), `Bearer <read-only
///   token>` (GET only), or the `herald_console` cookie of a login; without one (loopback only) it needs nothing;
/// - a request that changes state is refused when it comes from another site: `Sec-Fetch-Site` other than
///   `same-origin`, or an `Origin` that is not the request's own (its `Host`). Browsers send one or both on every
///   such request; scripts (curl) send neither and are judged by their token alone.
///
/// A refused request changes nothing: the refusal is the answer, and the handler never runs.
public struct ConsoleAccess: Sendable {
    public static let cookieName = "herald_console"

    private let apiToken: [UInt8]?
    private let readOnlyToken: [UInt8]?
    public let sessions: ConsoleSessions

    /// - Parameters:
    ///   - apiToken: serve's `--api-token`; nil lets every caller in as admin (serve refuses that off loopback).
    ///   - readOnlyToken: `--console-read-only-token`: looks, never acts. Needs `apiToken`.
    public init(apiToken: String?, readOnlyToken: String?, sessions: ConsoleSessions = ConsoleSessions()) {
        self.apiToken = apiToken.map { Array($0.utf8) }
        self.readOnlyToken = apiToken == nil ? nil : readOnlyToken.map { Array($0.utf8) }
        self.sessions = sessions
    }

    /// Whether the console needs a login at all.
    public var needsLogin: Bool { apiToken != nil }

    /// The role a presented token gives; nil for neither token. Both comparisons always run, in constant time, so
    /// the time taken tells nothing about which token was nearly right.
    public func role(forToken presented: String) -> ConsoleRole? {
        guard let apiToken else { return .admin }
        let bytes = Array(presented.utf8)
        let isAdmin = constantTimeEquals(bytes, apiToken)
        let isReadOnly = readOnlyToken.map { constantTimeEquals(bytes, $0) } ?? false
        return isAdmin ? .admin : isReadOnly ? .readOnly : nil
    }

    /// The role `request` authenticates as: its bearer token when it has an `Authorization` header (a wrong one is
    /// not rescued by a cookie), else its session cookie; nil when neither is good.
    public func role(of request: HTTPRequest, now: Int64) -> ConsoleRole? {
        guard apiToken != nil else { return .admin }
        if let header = request.header("authorization") {
            guard header.hasPrefix("Bearer ") else { return nil }
            return role(forToken: String(header.dropFirst("Bearer ".count)))
        }
        return Self.sessionID(in: request).flatMap { sessions.role(of: $0, now: now) }
    }

    /// Nil when `request` may go on to the admin API, else why not: 401 without a good token or login, 403 for a
    /// change asked with the read-only token or from another site.
    public func refusal(_ request: HTTPRequest, now: Int64) -> APIError? {
        guard let role = role(of: request, now: now) else {
            return APIError(status: 401, code: "Unauthorized", message: "log in, or send Authorization: Bearer TOKEN")
        }
        guard Self.changesState(request) else { return nil }
        if let crossSite = Self.crossSiteRefusal(request) { return crossSite }
        if role == .readOnly {
            return APIError(status: 403, code: "ReadOnly", message: "the read-only token can look but not act")
        }
        return nil
    }

    /// Anything but GET and HEAD may change something.
    public static func changesState(_ request: HTTPRequest) -> Bool {
        request.method != "GET" && request.method != "HEAD"
    }

    /// Nil when a state-changing request comes from the console's own origin (or from a script that names none).
    public static func crossSiteRefusal(_ request: HTTPRequest) -> APIError? {
        if let site = request.header("sec-fetch-site"), site != "same-origin" {
            return APIError(status: 403, code: "CrossOrigin", message: "refused: the request came from another site")
        }
        if let origin = request.header("origin") {
            let authority: Substring? = origin.hasPrefix("http://") ? origin.dropFirst(7)
                : origin.hasPrefix("https://") ? origin.dropFirst(8) : nil
            guard let authority, let host = request.header("host"), authority.lowercased() == host.lowercased() else {
                return APIError(
                    status: 403, code: "CrossOrigin", message: "refused: the request's Origin is not this server")
            }
        }
        return nil
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
