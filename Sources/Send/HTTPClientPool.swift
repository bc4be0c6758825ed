import CCurl
import Foundation
import Posix
import Support
import Synchronization

/// HTTP/1.1 requests over one libcurl multi handle, driven by a thread of the pool's own: the OAuth token endpoint,
/// the legacy API and compatible gateways, and servers that do not offer HTTP/2 (`HTTP2ClientPool` falls back to it).
///
/// ```swift
/// let pool = HTTPClientPool(maxConnectionsPerHost: 64)
/// pool.submit(request) { result, seconds in
///     // on the pool's thread: hand the result on, don't block
/// }
/// ...
/// pool.shutdown(gracePeriod: 10)
/// ```
///
/// HTTP/1.1 only, over TLS too (ALPN offers `http/1.1` alone): HTTP/2 is `HTTP2ClientPool`'s. Connections are kept
/// alive and reused, one request on a connection at a time. At most `maxConnectionsPerHost` connections go to one
/// host (`maxConnections` to all), and they open gradually: a request goes to curl when a connection to its host is
/// idle, or when fewer are opening than the host has shown it takes (`ConnectionRamp`); the others wait, and their
/// wait counts against their timeout. Size it with `connectionsNeeded(inFlight:multiplexed: false)`: one connection
/// per request in flight. A response is read up to `maxResponseBytes` (header lines up to 64 KiB): a longer one fails
/// its request as `responseTooLarge`.
///
/// Every request goes on the wire at most once: libcurl's own re-sends (after a reused connection closes
/// before the answer) are refused and reported as `.failure(.reset)`, so the caller's retry policy, which
/// counts attempts, is the only one.
///
/// Related libcurl documentation: [libcurl-multi](https://curl.se/libcurl/c/libcurl-multi.html).
public final class HTTPClientPool: Sendable {
    private let core: PoolCore
    /// Taken by the first `shutdown`, which joins it.
    private let thread: Mutex<PosixThread?>

    /// Concurrent streams per HTTP/2 connection at most: what FCM allows. `HTTP2ClientPool`'s limit; kept here
    /// beside `connectionsNeeded`, which sizes both pools.
    public static let streamsPerConnection = 100

    /// The most a push answer is read up to, in both pools (SPEC §19): FCM v1's, APNs' and push services' answers
    /// are a few hundred bytes, an error with details a few KiB.
    public static let pushResponseBytes = 64 << 10

    /// The header fields of a response, at most, in both pools.
    static let maxResponseHeaderBytes = 64 << 10

    /// The connections `inFlight` concurrent requests need: ⌈inFlight ÷ 100⌉ + 1 over HTTP/2 (`HTTP2ClientPool`;
    /// the one spare lets a new connection open while the others are full), one per request over HTTP/1.1 (this
    /// pool).
    public static func connectionsNeeded(inFlight: Int, multiplexed: Bool) -> Int {
        guard multiplexed else { return max(1, inFlight) }
        return (max(1, inFlight) + streamsPerConnection - 1) / streamsPerConnection + 1
    }

    /// - Parameters:
    ///   - maxConnections: connections to all hosts together at most (nil: no limit but the one per host).
    ///   - maxResponseBytes: the largest response body read.
    ///   - caFile: the CA certificates (PEM) that HTTPS servers are checked against instead of the system's; by
    ///     default `$SSL_CERT_FILE` when set (OpenSSL's own convention), for a private FCM gateway or a stand-in.
    ///   - addressPolicy: as `HTTP2ClientPool`'s: for hosts Herald does not choose, the addresses a socket may
    ///     connect to; nil: hosts the operator named.
    public init(
        maxConnectionsPerHost: Int = 64, maxConnections: Int? = nil, maxResponseBytes: Int = pushResponseBytes,
        name: String = "sender",
        caFile: String? = ProcessInfo.processInfo.environment["SSL_CERT_FILE"].flatMap { $0.isEmpty ? nil : $0 },
        addressPolicy: AddressPolicy? = nil
    ) {
        precondition(maxConnectionsPerHost >= 1, "maxConnectionsPerHost must be at least 1")
        precondition((maxConnections ?? 1) >= 1, "maxConnections must be at least 1")
        Curl.initializeOnce()
        let core = PoolCore(
            name: name, maxConnectionsPerHost: maxConnectionsPerHost, maxConnections: maxConnections,
            maxResponseBytes: maxResponseBytes, caFile: caFile, addressPolicy: addressPolicy)
        self.core = core
        thread = Mutex(PosixThread(name: "herald-\(name)") {
            do {
                try TransferLoop(core: core).run()
            } catch {
                fatalError("a sender pool needs an epoll set: \(error)")
            }
        })
    }

    deinit {
        shutdown(gracePeriod: 0)
    }

    /// Queues a request; `completion` runs once on the pool's thread with the result and the seconds from
    /// this call to the result (queueing included). It must not block: the pool's one thread runs every
    /// transfer.
    ///
    /// After `shutdown` has begun, `completion` runs at once, on the calling thread, with
    /// `.failure(.cancelled)`.
    public func submit(_ request: OutboundRequest, completion: @escaping @Sendable (TransportResult, Double) -> Void) {
        core.shell.submit(request, completion: completion)
    }

    /// Connections open or opening right now, to every host the pool talks to.
    public var connections: Int {
        core.connections
    }

    /// Requests submitted whose completion has not started yet.
    public var inFlight: Int {
        core.shell.inFlight.load(ordering: .relaxed)
    }

    /// Waits up to `gracePeriod` seconds for in-flight requests, then cancels the rest (their completion gets
    /// `.failure(.cancelled)`), and stops the thread. New submissions fail from the moment it is called.
    ///
    /// Blocks until the thread has ended, except when called from a completion (on the pool's own thread),
    /// where it only starts the shutdown. A second call returns at once.
    public func shutdown(gracePeriod: Double) {
        core.shell.beginDraining(gracePeriod: gracePeriod)
        thread.withLock { $0.take() }?.end()
    }
}
