import Support

/// A request the server answers itself, without the handler: the status, the stable `code` a client sees
/// in `{"error":{"code","message"}}`, and a message for humans. The connection closes after it.
struct HTTPRequestError: Error, Equatable, Sendable {
    let status: Int
    let code: String
    let message: String

    static func badRequest(_ message: String) -> HTTPRequestError {
        HTTPRequestError(status: 400, code: "BadRequest", message: message)
    }

    static let headTooLarge = HTTPRequestError(
        status: 431, code: "RequestHeaderFieldsTooLarge", message: "the request head is too large")

    static func bodyTooLarge(limit: Int) -> HTTPRequestError {
        HTTPRequestError(
            status: 413, code: "PayloadTooLarge", message: "the request body is larger than \(limit) bytes")
    }

    static let lengthRequired = HTTPRequestError(
        status: 411, code: "LengthRequired",
        message: "Transfer-Encoding is not supported; send the body with Content-Length")

    static let versionNotSupported = HTTPRequestError(
        status: 505, code: "HTTPVersionNotSupported", message: "only HTTP/1.0 and HTTP/1.1 are supported")

    static let headTimeout = HTTPRequestError(
        status: 408, code: "RequestTimeout", message: "the request head did not arrive in time")

    static let bodyTimeout = HTTPRequestError(
        status: 408, code: "RequestTimeout", message: "the request body did not arrive in time")

    static let tooManyConnections = HTTPRequestError(
        status: 503, code: "Unavailable", message: "too many open connections; retry later")

    /// The bodies being read and handled across all connections already hold the server's body budget.
    /// Nothing of the request was read, so the client may simply send it again.
    static let bodyBudgetExhausted = HTTPRequestError(
        status: 503, code: "Unavailable", message: "the server is holding too many request bodies; retry later")

    static let unanswered = HTTPRequestError(
        status: 500, code: "InternalError", message: "the request was dropped without an answer")

    /// The JSON error response; a 503 carries `Retry-After` as every Herald 503 does.
    var response: HTTPResponse {
        var body = "{\"error\":{\"code\":"
        appendJSONString(code, to: &body)
        body += ",\"message\":"
        appendJSONString(message, to: &body)
        body += "}}"
        return .json(status, body, headers: status == 503 ? [("Retry-After", "1")] : [])
    }
}
