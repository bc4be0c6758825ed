import HTTP

/// Who may knock at all (SPEC §20), decided on a request's head before any route or token looks at it. `serve`
/// puts it in front of every route (ingest, tokens, subscriptions, `/fcm/send`, `messages:send`, the console and
/// its API); what it refuses changes nothing.
///
/// - **No other web page can use Herald.** A request that may change something (every method but GET and HEAD)
///   is refused `403 CrossOrigin` when it comes from a browser on another site: `Sec-Fetch-Site` other than
///   `same-origin`, or an `Origin` that is not this server's own (the scheme, host and port of its `Host`; `https`
///   too for a plain-HTTP request, which is what a TLS proxy in front of Herald forwards). Browsers send one or
///   both with every such request, a form's or a `text/plain` fetch's included; backends and scripts send neither.
/// - **A rebound name reaches nothing.** Without an API token (`loopbackOnly`: the listener is loopback only),
///   the `Host` must be a loopback name or address — `localhost`, `127.x.y.z`, `[::1]`, with or without a port —
///   else `421 MisdirectedRequest`, so a page whose name was DNS-rebound to 127.0.0.1 cannot read or change
///   anything. A request over a Unix socket, or without `Host` (which no browser sends), passes.
///
/// A backend's request costs one pass over its header names.
public struct FrontDoor: HTTPHandler {
    private let inner: any HTTPHandler
    private let loopbackOnly: Bool

    public init(_ inner: any HTTPHandler, loopbackOnly: Bool) {
        self.inner = inner
        self.loopbackOnly = loopbackOnly
    }

    public func admit(_ head: HTTPRequest) -> HTTPResponse? {
        refusal(head) ?? inner.admit(head)
    }

    public func bodyLimit(method: String, path: String) -> Int {
        inner.bodyLimit(method: method, path: path)
    }

    public func handle(_ request: HTTPRequest, responder: any HTTPResponder) {
        // The server has asked `admit` already; this covers a request handed here any other way.
        if let refusal = refusal(request) { return responder.respond(refusal) }
        inner.handle(request, responder: responder)
    }

    /// Nil when `request` may go on to its route.
    func refusal(_ request: HTTPRequest) -> HTTPResponse? {
        let changes = request.method != "GET" && request.method != "HEAD"
        guard changes || loopbackOnly else { return nil }
        var host: String?
        var origin: String?
        var site: String?
        for header in request.headers {
            switch header.name {
            case "host": host = host ?? header.value
            case "origin": origin = origin ?? header.value
            case "sec-fetch-site": site = site ?? header.value
            default: break
            }
        }
        if loopbackOnly, request.peer != .unix, let host, !Self.isLoopback(host: host) {
            return Self.misdirected
        }
        guard changes else { return nil }
        if let site, site != "same-origin" { return Self.crossSite }
        if let origin, !Self.isOwn(origin: origin, host: host, scheme: request.scheme) { return Self.foreignOrigin }
        return nil
    }

    // MARK: - Rules

    /// `localhost`, `127.x.y.z` or `[::1]`, each with or without `:port`, as browsers write them. Read byte by byte:
    /// without a token every request asks this.
    static func isLoopback(host: String) -> Bool {
        var name = host.utf8[...]
        if let colon = name.lastIndex(of: UInt8(ascii: ":")), name.last != UInt8(ascii: "]") {
            let port = name[name.index(after: colon)...]
            guard (1...5).contains(port.count), port.allSatisfy(isDigit) else { return false }
            name = name[..<colon]
        }
        return name.elementsEqual("[::1]".utf8) || isLocalhost(name) || isIPv4Loopback(name)
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// `localhost` in any case.
    private static func isLocalhost(_ name: Substring.UTF8View) -> Bool {
        name.count == 9 && zip(name, "localhost".utf8).allSatisfy { $0 | 0x20 == $1 }
    }

    /// Four decimal numbers up to 255, the first 127.
    private static func isIPv4Loopback(_ name: Substring.UTF8View) -> Bool {
        guard name.starts(with: "127.".utf8) else { return false }
        var (parts, digits, value) = (0, 0, 0)
        for byte in name {
            if isDigit(byte) {
                (digits, value) = (digits + 1, value * 10 + Int(byte - UInt8(ascii: "0")))
                guard digits <= 3, value <= 255 else { return false }
            } else if byte == UInt8(ascii: "."), digits > 0 {
                (parts, digits, value) = (parts + 1, 0, 0)
            } else {
                return false
            }
        }
        return parts == 3 && digits > 0
    }

    /// Whether `origin` is this server's own: `http://` or `https://` (only `https://` over TLS) followed by the
    /// request's `Host`, a scheme's default port written or not.
    static func isOwn(origin: String, host: String?, scheme: HTTPRequest.Scheme) -> Bool {
        guard let host else { return false }
        let schemes = scheme == .https ? [("https://", ":443")] : [("http://", ":80"), ("https://", ":443")]
        for (prefix, defaultPort) in schemes where origin.lowercased().hasPrefix(prefix) {
            func authority(_ text: Substring) -> Substring {
                text.hasSuffix(defaultPort) ? text.dropLast(defaultPort.count) : text
            }
            return authority(origin.lowercased().dropFirst(prefix.count)) == authority(host.lowercased()[...])
        }
        return false
    }

    // MARK: - Answers

    static let misdirected = refusal(APIError(
        status: 421, code: "MisdirectedRequest",
        message: "this herald has no API token, so it answers only requests addressed to localhost, 127.0.0.1 or "
            + "[::1]; give serve --api-token to reach it by another name"))

    static let crossSite = refusal(APIError(
        status: 403, code: "CrossOrigin", message: "refused: the request came from another site"))

    static let foreignOrigin = refusal(APIError(
        status: 403, code: "CrossOrigin", message: "refused: the request's Origin is not this server"))

    private static func refusal(_ failure: APIError) -> HTTPResponse {
        .json(failure.status, failure.jsonBody, headers: [("Cache-Control", "no-store")])
    }
}
