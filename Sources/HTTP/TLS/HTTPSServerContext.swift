import Synchronization

/// What every loop of one `HTTPSServer` shares: the HTTP server's context (handler, limits, connection count, body
/// budget), the TLS context, the HTTP/2 settings, and the counters `HTTPSServer.statistics` reads.
final class HTTPSServerContext: LoopContext {
    let server: ServerContext
    let tls: TLSServerContext
    let maxConcurrentStreams: Int

    let handshakeFailures = Atomic<Int>(0)
    let http2Connections = Atomic<Int>(0)
    let http1Connections = Atomic<Int>(0)
    let http2Requests = Atomic<Int>(0)
    let http1Requests = Atomic<Int>(0)

    init(configuration: HTTPSServerConfiguration, handler: any HTTPHandler) throws(HTTPServerError) {
        server = ServerContext(configuration: configuration.server, handler: handler)
        tls = try TLSServerContext(identity: configuration.identity)
        maxConcurrentStreams = configuration.maxConcurrentStreams
    }

    var statistics: HTTPSServer.Statistics {
        HTTPSServer.Statistics(
            accepted: server.accepted.load(ordering: .relaxed),
            handshakeFailures: handshakeFailures.load(ordering: .relaxed),
            http2Connections: http2Connections.load(ordering: .relaxed),
            http1Connections: http1Connections.load(ordering: .relaxed),
            http2Requests: http2Requests.load(ordering: .relaxed),
            http1Requests: http1Requests.load(ordering: .relaxed))
    }
}
