import Support
import Synchronization

/// An HTTPS server for an `HTTPHandler`: TLS by OpenSSL, then HTTP/2 by libnghttp2 when the client's ALPN offers
/// `h2`, else HTTP/1.1 through the cleartext server's parser. Its own loop threads, each a `Poller` over
/// non-blocking sockets; nothing blocks a loop but the handler, which must not block either (see `HTTPHandler`).
///
/// ```swift
/// let identity = try TLSIdentity.selfSigned(names: ["127.0.0.1", "localhost"])
/// let server = HTTPSServer(
///     configuration: HTTPSServerConfiguration(address: .tcp(host: "127.0.0.1", port: 0), identity: identity),
///     handler: simulator)
/// let bound = try server.start()          // .tcp(host: "127.0.0.1", port: 41235)
/// ...
/// server.shutdown(gracePeriod: 2)         // blocks until every connection is closed
/// ```
///
/// The handler sees the same `HTTPRequest` over both protocols (`version` says which; an HTTP/2 request's
/// `:authority` is its `host` header), and answers through its responder from any thread. Every HTTP/2 connection
/// advertises `maxConcurrentStreams`. It exists for the simulator (Apple's APNs speaks only HTTP/2 over TLS), so it
/// keeps to what a test server needs: no client certificates, no server push, no TLS session resumption tuning.
public final class HTTPSServer: Sendable {
    /// What the server has seen since it started.
    public struct Statistics: Sendable, Equatable {
        /// TCP connections accepted.
        public var accepted: Int
        /// Connections closed because their TLS handshake failed or took too long.
        public var handshakeFailures: Int
        /// Connections on which ALPN chose `h2`.
        public var http2Connections: Int
        /// Connections that speak HTTP/1.1 (ALPN `http/1.1`, or none).
        public var http1Connections: Int
        /// Requests handed to the handler, by protocol (answers the server gave itself are not counted).
        public var http2Requests: Int
        public var http1Requests: Int
    }

    private let configuration: HTTPSServerConfiguration
    private let handler: any HTTPHandler
    private let shell = ServerShell<TLSConnection>()
    /// Kept after the shutdown, for `statistics`.
    private let started = Mutex<HTTPSServerContext?>(nil)

    public init(configuration: HTTPSServerConfiguration, handler: any HTTPHandler) {
        self.configuration = configuration
        self.handler = handler
    }

    public var statistics: Statistics {
        started.withLock { $0 }?.statistics
            ?? Statistics(accepted: 0, handshakeFailures: 0, http2Connections: 0, http1Connections: 0,
                          http2Requests: 0, http1Requests: 0)
    }

    /// Loads the identity (throwing OpenSSL's reason when the certificate or key is unusable or they do not belong
    /// together), binds, listens and starts the loops. Returns the bound address, with the kernel's port when port 0
    /// was asked for.
    public func start() throws -> ListenAddress {
        let configuration = configuration
        let handler = handler
        let running = try shell.start(configuration.server) { () throws(HTTPServerError) in
            guard (1...HTTPSServerConfiguration.streamLimit).contains(configuration.maxConcurrentStreams) else {
                throw HTTPServerError(
                    "maxConcurrentStreams must be from 1 to \(HTTPSServerConfiguration.streamLimit)")
            }
            guard case .tcp = configuration.server.address else { throw HTTPServerError("HTTPS listens on TCP only") }
            return try HTTPSServerContext(configuration: configuration, handler: handler)
        }
        started.withLock { $0 = running.context }
        Log.info("https listening", [
            "address": .string(running.address.description), "loops": .int(Int64(running.loops)),
            "max_concurrent_streams": .int(Int64(configuration.maxConcurrentStreams)),
        ])
        return running.address
    }

    /// Stops accepting, sends GOAWAY on HTTP/2 connections and closes idle HTTP/1.1 ones, lets requests in hand be
    /// answered, then closes everything when nothing is left or `gracePeriod` seconds have passed. Blocks until the
    /// loop threads have ended; never call it from inside `handle`.
    public func shutdown(gracePeriod: Double) {
        guard let abandoned = shell.shutdown(gracePeriod: gracePeriod) else { return }
        Log.info("https stopped", ["closed_unfinished": .int(Int64(abandoned))])
    }
}
