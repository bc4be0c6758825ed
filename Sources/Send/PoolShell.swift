import Glibc
import Posix
import Support
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

/// What the submitting threads and a pool's loop thread share, for both pools (`HTTPClientPool` on libcurl,
/// `HTTP2ClientPool` on nghttp2): the mailbox of submissions and of the transport's own `Note`s (the HTTP/2 pool's
/// DNS answers), the in-flight count, and the loop's wake-up. Everything else belongs to the loop thread alone.
final class PoolShell<Note: Sendable>: Sendable {
    struct Mailbox: Sendable {
        var phase = PoolPhase.running
        var submissions: [PoolSubmission] = []
        var notes: [Note] = []

        var isEmpty: Bool { submissions.isEmpty && notes.isEmpty }
    }

    let name: String
    let wakeUp: WakeUp
    let mailbox = Mutex(Mailbox())
    /// Requests submitted whose completion has not started yet.
    let inFlight = Atomic<Int>(0)
    /// The loop thread's `pthread_self()`, 0 until it runs. A submission made there (from a completion) needs
    /// no wake-up: the loop looks at the mailbox before it waits again.
    let loopThread = Atomic<UInt>(0)

    init(name: String) {
        self.name = name
        do {
            wakeUp = try WakeUp()
        } catch {
            fatalError("a sender pool needs an eventfd: \(error)")
        }
    }

    deinit {
        wakeUp.close()
    }

    private var onLoopThread: Bool { loopThread.load(ordering: .relaxed) == UInt(pthread_self()) }

    /// Queues a request; runs its completion at once with `cancelled` when the pool is shutting down. The first
    /// submission into an empty mailbox wakes the loop; later ones find it already woken and not yet drained.
    func submit(_ request: OutboundRequest, completion: @escaping @Sendable (TransportResult, Double) -> Void) {
        let submission = PoolSubmission(
            request: request, completion: completion, submittedAt: Clock.monotonicSeconds())
        let onLoopThread = onLoopThread
        let posted = mailbox.withLock { mailbox in
            guard case .running = mailbox.phase else { return false }
            let wasEmpty = mailbox.isEmpty
            mailbox.submissions.append(submission)
            inFlight.add(1, ordering: .relaxed)
            if wasEmpty && !onLoopThread { wakeUp.signal() }
            return true
        }
        if !posted { completion(.failure(.cancelled), 0) }
    }

    /// Queues requests together: one mailbox update, and one wake-up after the lock is let go (a loop woken while
    /// the poster still held it would only wait for it).
    func submit(_ requests: [RequestTransport.Submission]) {
        guard !requests.isEmpty else { return }
        let now = Clock.monotonicSeconds()
        let submissions = requests.map {
            PoolSubmission(request: $0.request, completion: $0.completion, submittedAt: now)
        }
        let onLoopThread = onLoopThread
        let (posted, wake) = mailbox.withLock { mailbox -> (Bool, Bool) in
            guard case .running = mailbox.phase else { return (false, false) }
            let wasEmpty = mailbox.isEmpty
            mailbox.submissions += submissions
            inFlight.add(submissions.count, ordering: .relaxed)
            return (true, wasEmpty && !onLoopThread)
        }
        if wake { wakeUp.signal() }
        if !posted {
            for submission in submissions { submission.completion(.failure(.cancelled), 0) }
        }
    }

    /// Hands the loop something of the transport's own from another thread, and wakes it.
    func post(_ note: Note) {
        mailbox.withLock { mailbox in
            mailbox.notes.append(note)
            wakeUp.signal()
        }
    }

    /// Whether submissions or notes wait; the loop asks before it sleeps.
    var hasMail: Bool {
        mailbox.withLock { !$0.isEmpty }
    }

    /// Moves to `.draining` (once) and wakes the loop so it notices. Returns whether this call did it.
    @discardableResult
    func beginDraining(gracePeriod: Double) -> Bool {
        let now = Clock.monotonicSeconds()
        return mailbox.withLock { mailbox in
            guard case .running = mailbox.phase else { return false }
            mailbox.phase = .draining(deadline: now + max(0, gracePeriod))
            wakeUp.signal()
            return true
        }
    }

    /// The loop's look at the mailbox: what waits is swapped into the loop's (empty) arrays, so neither side
    /// reallocates; returns the phase.
    func take(_ submissions: inout [PoolSubmission], _ notes: inout [Note]) -> PoolPhase {
        mailbox.withLock { mailbox in
            swap(&mailbox.submissions, &submissions)
            swap(&mailbox.notes, &notes)
            return mailbox.phase
        }
    }

    /// The loop ends: `.stopped` from now on. Submissions accepted before `.draining` but not yet taken cannot be
    /// left (the last turn took the mailbox after the phase changed); they are cancelled defensively rather than
    /// dropped.
    func stop() {
        let leftover = mailbox.withLock { mailbox in
            mailbox.phase = .stopped
            defer { mailbox.submissions.removeAll() }
            return mailbox.submissions
        }
        for submission in leftover {
            complete(submission.completion, .failure(.cancelled), since: submission.submittedAt)
        }
    }

    /// Runs a request's completion; by then it no longer counts in `inFlight`.
    func complete(
        _ completion: (@Sendable (TransportResult, Double) -> Void)?, _ result: TransportResult,
        since submittedAt: Double
    ) {
        inFlight.subtract(1, ordering: .relaxed)
        completion?(result, Clock.monotonicSeconds() - submittedAt)
    }
}

/// What the loop skeleton (`PoolLoop`) asks of a pool's transport, all on the loop thread.
protocol PoolTransport: AnyObject {
    associatedtype Note: Sendable
    var shell: PoolShell<Note> { get }
    var poller: Poller { get }
    /// Takes a new request.
    func start(_ submission: PoolSubmission)
    /// Takes a note posted from another thread.
    func receive(_ note: Note)
    /// Timers and queued work, before each wait; returns how long the loop may then wait (ms; ≤ 0: not at all).
    func turn(now: Double) -> Int32
    /// A watched socket is ready.
    func ready(_ event: Poller.Event)
    /// After the ready sockets of one wait were handled.
    func afterEvents(now: Double)
    /// Nothing is in flight: a draining pool may stop.
    var isIdle: Bool { get }
    /// Cancels what is left and frees what it owns.
    func stop()
}

/// The one loop of both pools: take the mailbox → the transport's turn (timers, dispatch, writes) → wait in epoll
/// until a socket is ready, a timer is due or a submitter signals → hand the ready sockets over → again; and,
/// once draining, stop when idle or at the grace period's end.
enum PoolLoop {
    static func run<Transport: PoolTransport>(_ transport: Transport) {
        let shell = transport.shell
        shell.loopThread.store(UInt(pthread_self()), ordering: .relaxed)
        precondition(transport.poller.watch(shell.wakeUp.fd, .read), "epoll_ctl failed: \(errno)")
        var submissions: [PoolSubmission] = []
        var notes: [Transport.Note] = []
        while true {
            let phase = shell.take(&submissions, &notes)
            for submission in submissions { transport.start(submission) }
            submissions.removeAll(keepingCapacity: true)
            for note in notes { transport.receive(note) }
            notes.removeAll(keepingCapacity: true)

            let now = Clock.monotonicSeconds()
            var waitMillis = transport.turn(now: now)
            if case .draining(let deadline) = phase {
                if transport.isIdle || deadline <= now { break }
                waitMillis = min(waitMillis, Int32(((deadline - now) * 1_000).rounded(.up)))
            }
            // Completions may have submitted more without signalling the wake-up (see `PoolShell.submit`).
            if waitMillis <= 0 || shell.hasMail { continue }
            for event in transport.poller.events(timeoutMillis: waitMillis) {
                if event.fd == shell.wakeUp.fd {
                    shell.wakeUp.drain()
                } else {
                    transport.ready(event)
                }
            }
            transport.afterEvents(now: Clock.monotonicSeconds())
        }
        transport.stop()
        shell.stop()
    }
}
