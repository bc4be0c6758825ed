import CCurl
import CCurlFixes
import Glibc
import Synchronization

/// A request handed to a pool's loop thread (libcurl's or the HTTP/2 client's), with what to call when it ends.
struct PoolSubmission: Sendable {
    var request: OutboundRequest
    var completion: @Sendable (TransportResult, Double) -> Void
    var submittedAt: Double
}

/// Where a pool is in its life, as the submitting threads see it.
enum PoolPhase: Sendable {
    case running
    /// `shutdown` was called: nothing new is accepted, in-flight requests may finish until `deadline`
    /// (monotonic seconds).
    case draining(deadline: Double)
    /// The loop has ended and freed what it owned; nothing may touch it any more.
    case stopped
}

/// What the submitting threads and the loop thread share: the mailbox, the in-flight count and the loop's
/// wake-up (an eventfd). Everything else belongs to the loop thread alone.
final class PoolCore: Sendable {
    typealias Submission = PoolSubmission
    typealias Phase = PoolPhase

    struct Mailbox: Sendable {
        var phase = Phase.running
        var submissions: [Submission] = []
    }

    /// The multi handle's pointer; only the loop thread uses it.
    struct MultiHandle: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
    }

    /// Open connections (sockets), kept by curl's open and close socket callbacks on the loop thread and read
    /// from any thread. Freed with the core, after the loop has closed every connection.
    struct Counter: @unchecked Sendable {
        let pointer: UnsafeMutablePointer<Int>
    }

    let name: String
    let maxConnectionsPerHost: Int
    let multi: MultiHandle
    let connectionCounter: Counter
    let caFile: String?
    /// An eventfd in the loop's epoll set: a submitter makes it readable to wake the loop. Open as long as the
    /// core lives, so a late wake-up never touches a closed or reused descriptor.
    let wakeup: Int32
    let mailbox = Mutex(Mailbox())
    let inFlight = Atomic<Int>(0)
    /// The loop thread's `pthread_self()`, 0 until it runs. A submission made there (from a completion) needs
    /// no wake-up: the loop looks at the mailbox before it polls again.
    let loopThread = Atomic<UInt>(0)

    init(name: String, maxConnectionsPerHost: Int, caFile: String?) {
        guard let pointer = curl_multi_init() else { fatalError("curl_multi_init failed (out of memory)") }
        self.name = name
        self.maxConnectionsPerHost = maxConnectionsPerHost
        self.caFile = caFile
        multi = MultiHandle(pointer: pointer)
        wakeup = herald_wakeup_create()
        precondition(wakeup >= 0, "eventfd failed: \(errno)")
        let counter = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        counter.initialize(to: 0)
        connectionCounter = Counter(pointer: counter)
        // One request per connection (HTTP/1.1): requests beyond the limit wait inside curl for a connection to
        // come free, rather than each opening one of its own.
        _ = herald_curl_multi_setopt_long(pointer, CURLMOPT_MAX_HOST_CONNECTIONS, maxConnectionsPerHost)
        // Room for every connection to the FCM host plus as many to a second host (the OAuth token endpoint)
        // before the cache starts closing idle connections that are about to be reused.
        _ = herald_curl_multi_setopt_long(pointer, CURLMOPT_MAXCONNECTS, 2 * maxConnectionsPerHost)
    }

    deinit {
        connectionCounter.pointer.deallocate()
        close(wakeup)
    }

    /// Connections open (or opening) right now.
    var connections: Int {
        herald_load_counter(connectionCounter.pointer)
    }

    /// Queues `submission` unless the pool is shutting down. The first submission into an empty mailbox wakes
    /// the loop; later ones find it already woken and not yet drained.
    func post(_ submission: Submission) -> Bool {
        let onLoopThread = loopThread.load(ordering: .relaxed) == UInt(pthread_self())
        return mailbox.withLock { mailbox in
            guard case .running = mailbox.phase else { return false }
            mailbox.submissions.append(submission)
            inFlight.add(1, ordering: .relaxed)
            if mailbox.submissions.count == 1 && !onLoopThread { herald_wakeup_signal(wakeup) }
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
            herald_wakeup_signal(wakeup)
            return true
        }
    }
}
