/// One request stream of an `HTTP2ServerSession`, from its HEADERS to its close: what the session's callbacks
/// recorded of the request, and the response body nghttp2 reads out of it in DATA frames.
final class HTTP2ServerStream {
    let id: Int32
    var method = ""
    var path = ""
    var authority: String?
    var scheme: String?
    var headers: [(name: String, value: String)] = []
    /// Of the header list, counted as SETTINGS_MAX_HEADER_LIST_SIZE counts it (name, value and 32 per field).
    var headerBytes = 0
    var body: [UInt8] = []
    /// The handler's body limit for this path, from the end of the headers on.
    var bodyLimit = Int.max
    /// Bytes of the server's body budget this stream holds (until it goes to the handler with its request).
    var reservedBodyBytes = 0
    /// The answer the server gives itself instead of the handler's (431, 413, 503, or `HTTPHandler.admit`'s); what
    /// more of the body comes is dropped.
    var refusal: HTTPResponse?
    /// In the session's list of streams to act on: complete, or refused.
    var queued = false
    /// Handed to the handler, or answered by the server.
    var answered = false
    var isHead: Bool { method == "HEAD" }

    var responseBody: [UInt8] = []
    var responseOffset = 0

    init(id: Int32) {
        self.id = id
    }

    /// The request as the handler sees it: `host` from `:authority` when the client sent no `host` field (HTTP/2
    /// clients seldom do), so a handler reads the same headers over both protocols.
    var request: HTTPRequest {
        var fields = headers
        if let authority, !fields.contains(where: { $0.name == "host" }) { fields.append(("host", authority)) }
        return HTTPRequest(
            method: method, target: path, headers: fields, body: body, version: .http2,
            scheme: scheme == "http" ? .http : .https)
    }
}
