import Glibc
import Posix
import Synchronization

/// How tasks reach one loop thread (a `ServerLoop`): from other threads through a locked mailbox and the
/// loop's `WakeUp`, written once per burst of posts; from the loop's own thread (a handler answering inside
/// `handle`) through a local queue that needs neither, whose tasks wait until the event in hand is done, so a
/// connection never sees a response arrive in the middle of reading.
final class LoopInbox<Task: Sendable>: @unchecked Sendable {
    private struct Mailbox {
        var tasks: [Task] = []
        var closed = false
    }

    /// Watched by the loop's epoll set: readable when other threads posted.
    let wakeUp: WakeUp
    private let mailbox = Mutex(Mailbox())
    /// Set by the first `post` after the loop last drained its mailbox, so a burst of posts costs one write.
    private let wakePending = Atomic<Bool>(false)
    /// The loop's thread while it runs (`enter` to `leave`), else 0.
    private let thread = Atomic<UInt>(0)

    // Loop thread only.
    private var local: [Task] = []
    private var spare: [Task] = []

    init() throws(IOError) {
        wakeUp = try WakeUp()
    }

    /// The descriptor lives as long as anything can still `post` here, so a late wake-up never writes into a
    /// descriptor number that has been reused.
    deinit {
        wakeUp.close()
    }

    // MARK: - Any thread

    /// Queues `task` for the loop. Returns false once the inbox is closed.
    @discardableResult
    func post(_ task: Task) -> Bool {
        if pthread_self() == thread.load(ordering: .relaxed) {
            local.append(task)
            return true
        }
        let accepted = mailbox.withLock { mailbox in
            guard !mailbox.closed else { return false }
            mailbox.tasks.append(task)
            return true
        }
        if accepted && !wakePending.exchange(true, ordering: .acquiringAndReleasing) {
            wakeUp.signal()
        }
        return accepted
    }

    // MARK: - Loop thread only

    /// The calling thread is the loop's from now on (until `leave`): its posts go to the local queue.
    func enter() {
        thread.store(pthread_self(), ordering: .relaxed)
    }

    func leave() {
        thread.store(0, ordering: .relaxed)
    }

    /// Whether the loop's own thread posted tasks not yet performed.
    var hasLocal: Bool { !local.isEmpty }

    /// Performs what the loop's own thread posted, and what those tasks post in turn.
    func performLocal(_ perform: (Task) -> Void) {
        while !local.isEmpty {
            swap(&local, &spare)
            for task in spare { perform(task) }
            spare.removeAll(keepingCapacity: true)
        }
    }

    /// Performs what other threads posted (the wake-up was readable).
    func performMailbox(_ perform: (Task) -> Void) {
        wakeUp.drain()
        wakePending.store(false, ordering: .releasing)
        mailbox.withLock { swap(&$0.tasks, &spare) }
        for task in spare { perform(task) }
        spare.removeAll(keepingCapacity: true)
    }

    /// Refuses every later post and returns what was still waiting, from any thread.
    func close() -> [Task] {
        let leftover = mailbox.withLock { mailbox in
            mailbox.closed = true
            defer { mailbox.tasks = [] }
            return mailbox.tasks
        }
        defer { local = [] }
        return leftover + local
    }
}
