import CCurlFixes
import Glibc
import Synchronization

/// What the submitting threads, the resolver and the loop thread share: the mailbox, the counts and the loop's
/// wake-up (an eventfd). Everything else belongs to the loop thread alone.
final class HTTP2PoolCore: Sendable {
    typealias Submission = PoolSubmission
    typealias Phase = PoolPhase

    /// A host name looked up for a connection that is opening: its addresses, or why there are none.
    struct Resolution: Sendable {
        var connection: Int
        var addresses: Result<[SocketAddress], ResolveError>
    }

    struct ResolveError: Error, Sendable {
        var reason: String
    }

    struct Mailbox: Sendable {
        var phase = Phase.running
        var submissions: [Submission] = []
        var resolutions: [Resolution] = []
    }

    let name: String
    let maxConnectionsPerHost: Int
    let http1Connections: Int
    let caFile: String?
    let liveness: HTTP2Liveness
    let statistics = HTTP2Counters()
    /// An eventfd in the loop's epoll set; open as long as the core lives, so a late wake-up never touches a closed
    /// or reused descriptor.
    let wakeup: Int32
    let mailbox = Mutex(Mailbox())
    let inFlight = Atomic<Int>(0)
    /// HTTP/2 sockets open (connecting included); kept by the loop thread.
    let openConnections = Atomic<Int>(0)
    /// The HTTP/1.1 pool for requests this client does not carry, made by the loop thread on first use.
    let fallback = Mutex<HTTPClientPool?>(nil)
    /// The loop thread's `pthread_self()`, 0 until it runs: a submission made there (from a completion) needs no
    /// wake-up, as the loop looks at the mailbox before it waits again.
    let loopThread = Atomic<UInt>(0)

    init(name: String, maxConnectionsPerHost: Int, http1Connections: Int, caFile: String?, liveness: HTTP2Liveness) {
        self.name = name
        self.liveness = liveness
        self.maxConnectionsPerHost = maxConnectionsPerHost
        self.http1Connections = http1Connections
        self.caFile = caFile
        wakeup = herald_wakeup_create()
        precondition(wakeup >= 0, "eventfd failed: \(errno)")
    }

    deinit {
        close(wakeup)
    }

    /// Queues `submission` unless the pool is shutting down.
    func post(_ submission: Submission) -> Bool {
        let onLoopThread = loopThread.load(ordering: .relaxed) == UInt(pthread_self())
        return mailbox.withLock { mailbox in
            guard case .running = mailbox.phase else { return false }
            mailbox.submissions.append(submission)
            inFlight.add(1, ordering: .relaxed)
            if mailbox.submissions.count == 1 && mailbox.resolutions.isEmpty && !onLoopThread {
                herald_wakeup_signal(wakeup)
            }
            return true
        }
    }

    /// Queues `submissions` together unless the pool is shutting down; wakes the loop once, after the lock is let
    /// go (a loop woken while the poster still held it would only wait for it).
    func post(_ submissions: [Submission]) -> Bool {
        guard !submissions.isEmpty else { return true }
        let onLoopThread = loopThread.load(ordering: .relaxed) == UInt(pthread_self())
        let (posted, wake) = mailbox.withLock { mailbox -> (Bool, Bool) in
            guard case .running = mailbox.phase else { return (false, false) }
            let wasEmpty = mailbox.submissions.isEmpty && mailbox.resolutions.isEmpty
            mailbox.submissions += submissions
            inFlight.add(submissions.count, ordering: .relaxed)
            return (true, wasEmpty && !onLoopThread)
        }
        if wake { herald_wakeup_signal(wakeup) }
        return posted
    }

    func post(_ resolution: Resolution) {
        mailbox.withLock { mailbox in
            mailbox.resolutions.append(resolution)
            herald_wakeup_signal(wakeup)
        }
    }

    var hasMail: Bool {
        mailbox.withLock { !$0.submissions.isEmpty || !$0.resolutions.isEmpty }
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
