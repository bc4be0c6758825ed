import Foundation

/// A parsed HTTP/1.1 request with its whole body.
public struct HTTPRequest: Sendable {
    public var method: String
    /// The request-target as sent, e.g. `/v1/messages/01J?x=1`.
    public var target: String
    /// Header names lowercased, in arrival order.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(method: String, target: String, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
    }

    /// The first value of a header; `name` must be lowercase.
    public func header(_ name: String) -> String? {
        headers.first(where: { $0.name == name })?.value
    }

    /// The path part of the target, percent-decoded, without the query.
    public var path: String {
        let raw = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return raw.removingPercentEncoding ?? raw
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
    public static func json(_ status: Int, _ body: String, headers: [(name: String, value: String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: Array(body.utf8))
    }

    /// A plain-text body with `Content-Type: text/plain; charset=utf-8`.
    public static func text(_ status: Int, _ body: String, headers: [(name: String, value: String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")] + headers, body: Array(body.utf8))
    }

    /// The standard reason phrase for a status code.
    public static func reason(for status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
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

/// The application side of the server. `handle` is called on a server event-loop thread and must not block:
/// work that blocks (SQLite) goes to threads the application owns, which call `responder.respond` when done.
public protocol HTTPHandler: Sendable {
    /// The largest body accepted for a request to `path` (bytes); larger bodies get 413 before they are read.
    func bodyLimit(method: String, path: String) -> Int
    func handle(_ request: HTTPRequest, responder: any HTTPResponder)
}
