import Foundation

/// A parsed HTTP request (HTTP/1.x, or an HTTP/2 stream) with its whole body.
public struct HTTPRequest: Sendable {
    public var method: String
    /// The request-target as sent, e.g. `/v1/messages/01J?x=1`.
    public var target: String
    /// Header names lowercased, in arrival order.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The protocol it came in: HTTP/1.0 or 1.1 from `HTTPServer` (cleartext) and `HTTPSServer` (TLS without `h2`),
    /// HTTP/2 from `HTTPSServer` when ALPN chose `h2`.
    public var version: Version
    /// `https` when it came over TLS.
    public var scheme: Scheme
    /// The client's address, from its connection (`HTTPServer`); nil for a request that came any other way.
    public var peer: PeerAddress?

    public enum Version: String, Sendable, Equatable {
        case http1_0 = "HTTP/1.0"
        case http1_1 = "HTTP/1.1"
        case http2 = "HTTP/2"
    }

    public enum Scheme: String, Sendable, Equatable {
        case http
        case https
    }

    public init(
        method: String, target: String, headers: [(name: String, value: String)] = [], body: [UInt8] = [],
        version: Version = .http1_1, scheme: Scheme = .http, peer: PeerAddress? = nil
    ) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.version = version
        self.scheme = scheme
        self.peer = peer
    }

    /// The first value of a header; `name` must be lowercase.
    public func header(_ name: String) -> String? {
        headers.first(where: { $0.name == name })?.value
    }

    /// The path part of the target as sent, still percent-encoded, without the query: `/v1/tokens/a%2Fb`.
    /// Route on `pathSegments`, never on a decoded whole path, where an encoded `/` would split a segment.
    public var path: String {
        guard let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return target }
        return String(target[..<mark])
    }

    /// The path's segments after its leading `/`, each percent-decoded after the split, so `%2F` stays inside
    /// its segment: `/v1/tokens/a%2Fb` → `["v1", "tokens", "a/b"]`, `/` → `[""]`. The server refuses (400) a
    /// path whose encoding is malformed; for a request built otherwise such a segment is kept as sent.
    public var pathSegments: [String] {
        Self.pathSegments(of: path) ?? Self.rawSegments(of: path).map(String.init)
    }

    /// The decoded segments of a raw `path` as `pathSegments` gives them, or nil when a segment's
    /// percent-encoding is malformed or does not decode to UTF-8. For handlers that see only the path
    /// (`HTTPHandler.bodyLimit`).
    public static func pathSegments(of path: some StringProtocol) -> [String]? {
        var segments: [String] = []
        for raw in rawSegments(of: path) {
            // By byte: every request is routed through here, and `contains("%")` on a substring is Foundation's
            // locale-aware search.
            guard raw.utf8.contains(UInt8(ascii: "%")) else {
                segments.append(String(raw))
                continue
            }
            guard let decoded = raw.removingPercentEncoding else { return nil }
            segments.append(decoded)
        }
        return segments
    }

    /// The segments between `/`s, split by byte (a `/` is one byte in UTF-8, so every cut is a scalar boundary),
    /// without the empty one before a leading `/`.
    private static func rawSegments<Path: StringProtocol>(of path: Path) -> [Path.SubSequence] {
        let utf8 = path.utf8
        var segments: [Path.SubSequence] = []
        var start = utf8.first == UInt8(ascii: "/") ? utf8.index(after: utf8.startIndex) : utf8.startIndex
        var index = start
        while index != utf8.endIndex {
            if utf8[index] == UInt8(ascii: "/") {
                segments.append(path[start..<index])
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        segments.append(path[start..<index])
        return segments
    }

    /// Query parameters, percent-decoded (`+` is a space); the last value of a repeated name wins.
    public var query: [String: String] {
        guard let mark = target.firstIndex(of: "?") else { return [:] }
        var result: [String: String] = [:]
        for pair in target[target.index(after: mark)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ text: Substring) -> String {
                let spaced = text.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            result[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return result
    }
}

/// A response to write. `Content-Length`, `Date`-free framing and `Connection` are added by the server.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON body (already encoded) with `Content-Type: application/json`.
    public static func json(
        _ status: Int, _ body: String, headers: [(name: String, value: String)] = []
    ) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: Array(body.utf8))
    }

    /// A plain-text body with `Content-Type: text/plain; charset=utf-8`.
    public static func text(
        _ status: Int, _ body: String, headers: [(name: String, value: String)] = []
    ) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: [("Content-Type", "text/plain; charset=utf-8")] + headers, body: Array(body.utf8))
    }

    /// The standard reason phrase for a status code.
    public static func reason(for status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 303: "See Other"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 417: "Expectation Failed"
        case 421: "Misdirected Request"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: "Status \(status)"
        }
    }
}

/// Answers one request exactly once, from any thread.
public protocol HTTPResponder: Sendable {
    func respond(_ response: HTTPResponse)
}

/// The application side of the server. Its methods are called on a server event-loop thread and must not
/// block: work that blocks (SQLite) goes to threads the application owns, which call `responder.respond` when
/// done.
///
/// For each request the server asks, in order: `admit` (with the head alone), `bodyLimit` (413 when the
/// declared body is larger), then whether the server's body budget can hold the body (503 when it cannot);
/// only then is `100 Continue` sent and the body read, and the whole request goes to `handle`.
public protocol HTTPHandler: Sendable {
    /// Looks at a request's head before any of its body is read or `100 Continue` is sent; `head.body` is
    /// empty. A response answers the request at once: the server writes it with `Connection: close` and
    /// closes without reading the body (which leaves the connection unusable). Nil lets the request in.
    /// The default admits every request.
    func admit(_ head: HTTPRequest) -> HTTPResponse?
    /// The largest body accepted for a request to `path` (the raw path, as `HTTPRequest.path`), in bytes;
    /// larger bodies get 413 before they are read.
    func bodyLimit(method: String, path: String) -> Int
    func handle(_ request: HTTPRequest, responder: any HTTPResponder)
}

extension HTTPHandler {
    public func admit(_ head: HTTPRequest) -> HTTPResponse? { nil }
}
