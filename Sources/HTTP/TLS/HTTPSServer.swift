import Foundation
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
    private enum State {
        case idle
        case starting
        case running(loops: [TLSLoop], context: HTTPSServerContext)
        case shuttingDown
        case stopped
    }

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
    private let state = Mutex(State.idle)
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
        try state.withLock { state in
            guard case .idle = state else { throw HTTPServerError("the server has already been started") }
            state = .starting
        }
        do {
            let server = configuration.server
            guard server.eventLoops >= 1 else { throw HTTPServerError("eventLoops must be at least 1") }
            guard (1...HTTPSServerConfiguration.streamLimit).contains(configuration.maxConcurrentStreams) else {
                throw HTTPServerError(
                    "maxConcurrentStreams must be from 1 to \(HTTPSServerConfiguration.streamLimit)")
            }
            guard case .tcp = server.address else { throw HTTPServerError("HTTPS listens on TCP only") }
            let context = try HTTPSServerContext(configuration: configuration, handler: handler)
            let (listener, bound) = try Socket.listen(on: server.address, backlog: server.backlog)
            let loops: [TLSLoop]
            do {
                loops = try (0..<server.eventLoops).map { try TLSLoop(index: $0, context: context) }
                try loops[0].own(listener: listener, peers: loops)
            } catch {
                close(listener)
                throw error
            }
            for loop in loops {
                let thread = Thread {
                    Thread.current.name = "herald-https-\(loop.index)"
                    loop.run()
                }
                thread.start()
            }
            state.withLock { $0 = .running(loops: loops, context: context) }
            started.withLock { $0 = context }
            Log.info("https listening", [
                "address": .string(bound.description), "loops": .int(Int64(loops.count)),
                "max_concurrent_streams": .int(Int64(configuration.maxConcurrentStreams)),
            ])
            return bound
        } catch {
            state.withLock { $0 = .idle }
            throw error
        }
    }

    /// Stops accepting, sends GOAWAY on HTTP/2 connections and closes idle HTTP/1.1 ones, lets requests in hand be
    /// answered, then closes everything when nothing is left or `gracePeriod` seconds have passed. Blocks until the
    /// loop threads have ended; never call it from inside `handle`.
    public func shutdown(gracePeriod: Double) {
        let running: (loops: [TLSLoop], context: HTTPSServerContext)? = state.withLock { state in
            switch state {
            case .running(let loops, let context):
                state = .shuttingDown
                return (loops, context)
            case .idle:
                state = .stopped
                return nil
            case .starting, .shuttingDown, .stopped:
                return nil
            }
        }
        guard let running else { return }
        for loop in running.loops { loop.post(.drain) }
        let deadline = Clock.monotonicSeconds() + max(0, gracePeriod)
        let server = running.context.server
        while server.openConnections.load(ordering: .relaxed) > 0 && Clock.monotonicSeconds() < deadline {
            usleep(5_000)
        }
        let abandoned = server.openConnections.load(ordering: .relaxed)
        for loop in running.loops { loop.post(.stop) }
        for loop in running.loops { loop.waitUntilFinished() }
        state.withLock { $0 = .stopped }
        Log.info("https stopped", ["closed_unfinished": .int(Int64(abandoned))])
    }
}
