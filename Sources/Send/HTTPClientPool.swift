import CCurl
import Support
import Synchronization

/// HTTP requests to FCM over one libcurl multi handle, driven by a thread of the pool's own.
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
/// Connections are kept alive and reused: HTTP/1.1 keep-alive, and HTTP/2 (offered over TLS) with many
/// requests multiplexed on one connection. At most `maxConnectionsPerHost` connections go to one host;
/// requests beyond what they can carry wait inside curl, and their wait counts against their timeout.
///
/// Related libcurl documentation: [libcurl-multi](https://curl.se/libcurl/c/libcurl-multi.html).
public final class HTTPClientPool: Sendable {
    private let core: PoolCore
    /// Taken by the first `shutdown`, which joins it.
    private let thread: Mutex<PosixThread?>

    public init(maxConnectionsPerHost: Int = 64, name: String = "sender") {
        precondition(maxConnectionsPerHost >= 1, "maxConnectionsPerHost must be at least 1")
        Curl.initializeOnce()
        let core = PoolCore(name: name, maxConnectionsPerHost: maxConnectionsPerHost)
        self.core = core
        thread = Mutex(PosixThread(name: "herald-\(name)") { TransferLoop(core: core).run() })
    }

    deinit {
        shutdown(gracePeriod: 0)
    }

    /// Queues a request; `completion` runs once on the pool's thread with the result and the seconds from
    /// this call to the result (queueing included). It must not block: the pool's one thread runs every
    /// transfer.
    ///
    /// After `shutdown` has begun, `completion` runs at once, on the calling thread, with
    /// `.failure(reason: "cancelled")`.
    public func submit(_ request: OutboundRequest, completion: @escaping @Sendable (TransportResult, Double) -> Void) {
        let now = Clock.monotonicSeconds()
        let submission = PoolCore.Submission(request: request, completion: completion, submittedAt: now)
        if !core.post(submission) {
            completion(.failure(reason: "cancelled"), 0)
        }
    }

    /// Requests submitted whose completion has not started yet.
    public var inFlight: Int {
        core.inFlight.load(ordering: .relaxed)
    }

    /// Waits up to `gracePeriod` seconds for in-flight requests, then cancels the rest (their completion gets
    /// `.failure("cancelled")`), and stops the thread. New submissions fail from the moment it is called.
    ///
    /// Blocks until the thread has ended, except when called from a completion (on the pool's own thread),
    /// where it only starts the shutdown. A second call returns at once.
    public func shutdown(gracePeriod: Double) {
        _ = core.beginDraining(gracePeriod: gracePeriod, now: Clock.monotonicSeconds())
        guard let thread = thread.withLock({ $0.take() }) else { return }
        if thread.isCurrent {
            thread.detach()
        } else {
            thread.join()
        }
    }
}
