import CCurl
import Glibc
import Synchronization

/// What the submitting threads and the loop thread share: the mailbox, the in-flight count and the multi
/// handle's wake-up. Everything else belongs to the loop thread alone.
final class PoolCore: Sendable {
    struct Submission: Sendable {
        var request: OutboundRequest
        var completion: @Sendable (TransportResult, Double) -> Void
        var submittedAt: Double
    }

    enum Phase: Sendable {
        case running
        /// `shutdown` was called: nothing new is accepted, in-flight requests may finish until `deadline`
        /// (monotonic seconds).
        case draining(deadline: Double)
        /// The loop has ended and freed the multi handle; nothing may touch it any more.
        case stopped
    }

    struct Mailbox: Sendable {
        var phase = Phase.running
        var submissions: [Submission] = []
    }

    /// The multi handle's pointer, shared only for `curl_multi_wakeup`, which libcurl allows from any thread.
    struct MultiHandle: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
    }

    let name: String
    let maxConnectionsPerHost: Int
    let multi: MultiHandle
    let mailbox = Mutex(Mailbox())
    let inFlight = Atomic<Int>(0)
    /// The loop thread's `pthread_self()`, 0 until it runs. A submission made there (from a completion) needs
    /// no wake-up: the loop looks at the mailbox before it polls again.
    let loopThread = Atomic<UInt>(0)

    init(name: String, maxConnectionsPerHost: Int) {
        guard let pointer = curl_multi_init() else { fatalError("curl_multi_init failed (out of memory)") }
        self.name = name
        self.maxConnectionsPerHost = maxConnectionsPerHost
        multi = MultiHandle(pointer: pointer)
        // Room for every connection to the FCM host plus as many to a second host (the OAuth token endpoint)
        // before the cache starts closing idle connections that are about to be reused.
        _ = herald_curl_multi_setopt_long(pointer, CURLMOPT_MAX_HOST_CONNECTIONS, maxConnectionsPerHost)
        _ = herald_curl_multi_setopt_long(pointer, CURLMOPT_MAXCONNECTS, 2 * maxConnectionsPerHost)
        _ = herald_curl_multi_setopt_long(pointer, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
    }

    /// Queues `submission` unless the pool is shutting down. The first submission into an empty mailbox wakes
    /// the loop; later ones find it already woken and not yet drained. The wake-up happens under the lock,
    /// so it can never race the loop freeing the multi handle after `.stopped`.
    func post(_ submission: Submission) -> Bool {
        let onLoopThread = loopThread.load(ordering: .relaxed) == UInt(pthread_self())
        return mailbox.withLock { mailbox in
            guard case .running = mailbox.phase else { return false }
            mailbox.submissions.append(submission)
            inFlight.add(1, ordering: .relaxed)
            if mailbox.submissions.count == 1 && !onLoopThread { curl_multi_wakeup(multi.pointer) }
            return true
        }
    }

    /// Whether submissions wait in the mailbox; the loop asks before it sleeps.
    var hasSubmissions: Bool {
        mailbox.withLock { !$0.submissions.isEmpty }
    }

    /// Moves to `.draining` (once) and wakes the loop so it notices. Returns whether this call did it.
    func beginDraining(gracePeriod: Double, now: Double) -> Bool {
        mailbox.withLock { mailbox in
            guard case .running = mailbox.phase else { return false }
            mailbox.phase = .draining(deadline: now + max(0, gracePeriod))
            curl_multi_wakeup(multi.pointer)
            return true
        }
    }
}
