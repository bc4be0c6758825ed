import HTTP

/// A handler made of closures, for a test server.
public struct TestHandler: HTTPHandler {
    /// The largest body it takes.
    public var limit: Int
    /// Answers a head from `admit`; nil admits.
    public var onHead: @Sendable (HTTPRequest) -> HTTPResponse?
    public let onRequest: @Sendable (HTTPRequest, any HTTPResponder) -> Void

    public init(
        limit: Int = 4 << 20, onHead: @escaping @Sendable (HTTPRequest) -> HTTPResponse? = { _ in nil },
        _ onRequest: @escaping @Sendable (HTTPRequest, any HTTPResponder) -> Void
    ) {
        self.limit = limit
        self.onHead = onHead
        self.onRequest = onRequest
    }

    public func admit(_ head: HTTPRequest) -> HTTPResponse? { onHead(head) }

    public func bodyLimit(method: String, path: String) -> Int { limit }

    public func handle(_ request: HTTPRequest, responder: any HTTPResponder) {
        onRequest(request, responder)
    }
}
