import Foundation
import Posix
import Support
import Synchronization

/// HTTPS requests over HTTP/2, multiplexed up to 100 streams per connection: Herald's own client, libnghttp2's
/// protocol (framing, HPACK, flow control) over OpenSSL's TLS, driven by one thread of the pool's own. It exists for
/// FCM v1's request rate.
///
/// ```swift
/// let pool = HTTP2ClientPool(maxConnectionsPerHost: 11, http1Connections: 1000, name: "send-default")
/// pool.submit(request) { result, seconds in
///     // on the pool's thread: hand the result on, don't block
/// }
/// ...
/// pool.shutdown(gracePeriod: 10)
/// ```
///
/// Why not libcurl's HTTP/2, which also sits on nghttp2: libcurl 7.88's socket interface runs *every* transfer on a
/// connection whenever that connection's socket is readable, so with 100 streams per connection an answer cost tens
/// of transfer runs and `poll` calls, and each request paid a handle set-up, a URL parse and a `send` of its own.
/// Here an answer costs its frames, and everything a loop turn submits to a connection leaves in one TLS write.
///
/// Connections open only as the requests waiting for a stream need them (at most `maxConnectionsPerHost` to one
/// host, `maxConnections` in all, a few opening at once per host and more as they succeed: `ConnectionRamp`), are
/// kept alive, and stop taking new streams after a `GOAWAY`. A host left with no connection and nothing waiting is
/// forgotten. A response is read up to `maxResponseBytes` (its header fields up to 64 KiB): a longer one fails its
/// request as `responseTooLarge`, and the stream is reset while the connection carries on. A request the server refused unprocessed (a
/// stream above a `GOAWAY`'s last stream id, or reset with `REFUSED_STREAM`) is sent again at once, a few times at
/// most, without the caller seeing it: the server never acted on it. Any other request goes on the wire once; a
/// connection lost with requests on it (reset, or silent: see `HTTP2Liveness`) fails them as `reset`, for the
/// caller's retry policy to count, and counts them in `statistics.requestsLost`.
///
/// Not HTTPS: the request goes through an `HTTPClientPool` of `http1Connections` connections instead (HTTP/1.1, a
/// connection per request in flight). A server that does not choose `h2` in ALPN gets its requests over that pool
/// too, for a minute, after which h2 is offered again; requests on its other HTTP/2 connections are left alone.
public final class HTTP2ClientPool: RequestTransport {
    private let core: HTTP2PoolCore
    /// Taken by the first `shutdown`, which joins it.
    private let thread: Mutex<PosixThread?>

    /// - Parameters:
    ///   - maxConnectionsPerHost: HTTP/2 connections to one host at most; size it with
    ///     `HTTPClientPool.connectionsNeeded(inFlight:multiplexed: true)`.
    ///   - maxConnections: connections to all hosts together at most, HTTP/1.1 ones included (nil: no limit but
    ///     the one per host, for a pool that talks to one host). When they are all open, the one idle longest is
    ///     closed for a host that needs one; without an idle one, requests wait.
    ///   - maxResponseBytes: the largest response body read.
    ///   - http1Connections: the HTTP/1.1 pool's connections per host, for a server without HTTP/2.
    ///   - caFile: the CA certificates (PEM) servers are checked against instead of the system's; by default
    ///     `$SSL_CERT_FILE` when set.
    ///   - clientIdentity: the client certificate its connections present to servers that ask for one (mutual TLS).
    ///     HTTP/2 connections only: requests to a server that does not offer h2 go over libcurl without it, and a
    ///     server that requires one refuses them.
    ///   - liveness: when a quiet connection gets a PING, and how long its ACK may take.
    ///   - addressPolicy: for origins Herald does not choose (Web Push's, SPEC §19): only the addresses it permits
    ///     are connected to (none: the request fails `forbiddenAddress`), and a failed TLS handshake is told as
    ///     `tlsHandshakeFailed` alone. Nil: hosts the operator named.
    public init(
        maxConnectionsPerHost: Int, maxConnections: Int? = nil,
        maxResponseBytes: Int = HTTPClientPool.pushResponseBytes, http1Connections: Int, name: String = "sender",
        caFile: String? = ProcessInfo.processInfo.environment["SSL_CERT_FILE"].flatMap { $0.isEmpty ? nil : $0 },
        clientIdentity: TLSClientIdentity? = nil, liveness: HTTP2Liveness = .standard,
        addressPolicy: AddressPolicy? = nil
    ) {
        precondition(maxConnectionsPerHost >= 1, "maxConnectionsPerHost must be at least 1")
        precondition((maxConnections ?? 1) >= 1, "maxConnections must be at least 1")
        let core = HTTP2PoolCore(
            name: name, maxConnectionsPerHost: maxConnectionsPerHost, maxConnections: maxConnections,
            maxResponseBytes: maxResponseBytes, http1Connections: max(1, http1Connections), caFile: caFile,
            clientIdentity: clientIdentity, liveness: liveness, addressPolicy: addressPolicy)
        self.core = core
        thread = Mutex(PosixThread(name: "herald-\(name)") {
            do {
                try PoolLoop.run(HTTP2Loop(core: core))
            } catch {
                fatalError("a sender pool needs an epoll set: \(error)")
            }
        })
    }

    deinit {
        shutdown(gracePeriod: 0)
    }

    public func submit(_ request: OutboundRequest, completion: @escaping @Sendable (TransportResult, Double) -> Void) {
        core.shell.submit(request, completion: completion)
    }

    /// One mailbox update and at most one wake-up of the loop for all of them.
    public func submit(_ requests: [Submission]) {
        core.shell.submit(requests)
    }

    public var connections: Int {
        core.openConnections.load(ordering: .relaxed) + (core.fallback.withLock { $0 }?.connections ?? 0)
    }

    public var inFlight: Int {
        core.shell.inFlight.load(ordering: .relaxed)
    }

    public var statistics: TransportStatistics {
        core.statistics.snapshot
    }

    /// Waits up to `gracePeriod` seconds for in-flight requests, then cancels the rest (their completion gets
    /// `.failure(.cancelled)`), and stops the thread. New submissions fail from the moment it is called.
    ///
    /// Blocks until the thread has ended, except when called from a completion (on the pool's own thread), where
    /// it only starts the shutdown. A second call returns at once.
    public func shutdown(gracePeriod: Double) {
        core.shell.beginDraining(gracePeriod: gracePeriod)
        thread.withLock { $0.take() }?.end()
    }
}
