/// One request stream of an `HTTP2ServerSession`, from its HEADERS to its close: what the session's callbacks
/// recorded of the request, and the response body nghttp2 reads out of it in DATA frames.
final class HTTP2ServerStream {
    /// Where the stream is, for its deadline (`HTTP2ServerSession.tick`), as `HTTP1OverTLS` has them for a request.
    enum Stage {
        /// Its HEADERS began and have not ended: `headerTimeout`.
        case head
        /// Its headers are in and its body has not ended: `bodyTimeout` (from the end of the headers, as over
        /// HTTP/1.1).
        case body
        /// The handler has the request: no deadline, as over HTTP/1.1.
        case handling
        /// An answer is submitted and not all sent: `idleTimeout` while the client's flow-control windows hold it
        /// back.
        case responding
    }

    let id: Int32
    private(set) var stage = Stage.head
    /// Monotonic seconds since which the stage has waited (for `responding`: the last progress).
    var since: Double
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

    init(id: Int32, now: Double) {
        self.id = id
        since = now
    }

    func enter(_ stage: Stage, now: Double) {
        self.stage = stage
        since = now
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
