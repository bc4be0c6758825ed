import Queue

/// When the outcomes the apps decide are written, as a state machine in `AppScheduler`'s manner: the engine feeds
/// it events (outcomes gathered, a write finished or failed, a timer) and carries out the actions it returns. No
/// I/O, no clock (`now` is monotonic nanoseconds, given), no lock.
///
/// The rules: every app's outcomes gathered since the last write go in one writer job; at most one such job is
/// with the writer at a time (the answers arriving meanwhile share the next one, and one statement per kind), and
/// they start at least `spacingNanos` apart. A commit rewrites every page it touches and syncs the WAL whatever it
/// carries, so at FCM's rate fewer, fuller commits cost less per send; an answer waits at most that much longer
/// before it is stored (its row stays leased and renewed meanwhile). A write that fails for a transient reason (the
/// database away, the disk full) is written again `retryPauseNanos` later, in front of what gathered meanwhile: its
/// answers are still true and its rows still leased here, and letting the rescuer send them again would send twice.
///
/// ```swift
/// var outbox = Outbox()
/// for action in outbox.gathered(updates, plan: plan, app: "default") { perform(action) }  // .wake(at:)
/// for action in outbox.timerFired(now: DispatchTime.now().uptimeNanoseconds) { perform(action) }  // .write(…)
/// ```
struct Outbox {
    enum Action {
        /// Hand these outcomes, per app, to the writer in one job; answer with `written` or `writeFailed`.
        case write([String: AppOutcomes])
        /// Call `timerFired` at this monotonic time (now or earlier: on the next turn, after this one's answers).
        case wake(at: UInt64)
    }

    /// Outcome writes start at least this far apart.
    static let spacingNanos: UInt64 = 20_000_000
    /// How long after a transient failure its outcomes are written again.
    static let retryPauseNanos: UInt64 = 1_000_000_000

    /// Outcomes waiting for the next write, per app.
    private var waiting: [String: AppOutcomes] = [:]
    /// Writes handed to the writer and not yet answered; a write that failed counts until it is written again.
    private(set) var writing = 0
    /// A write is due at the timer asked for.
    private var writeDue = false
    /// When the last write started.
    private var lastWriteAt: UInt64 = 0
    /// Writes that failed for a transient reason, and when each is written again.
    private var failed: [(outcomes: [String: AppOutcomes], retryAt: UInt64)] = []

    var isEmpty: Bool { waiting.isEmpty }

    // MARK: - Events

    /// An app decided outcomes (and perhaps a pause or a gate): they wait for the next write.
    mutating func gathered(_ updates: [DeliveryUpdate], plan: OutcomePlan?, app: String) -> [Action] {
        // In place: a copy of the app's box taken out and put back would copy its growing list of updates for
        // every answer of the turn.
        waiting[app, default: AppOutcomes()].add(updates, plan: plan)
        return scheduleWrite()
    }

    /// The timer asked for by `.wake` is due: failed writes whose pause is over go back in front, and what waits
    /// is written unless a write is still with the writer (its answer writes again).
    mutating func timerFired(now: UInt64) -> [Action] {
        while let index = failed.firstIndex(where: { $0.retryAt <= now }) {
            let retry = failed.remove(at: index)
            writing -= 1
            for (app, outcomes) in retry.outcomes { waiting[app, default: AppOutcomes()].prepend(outcomes) }
        }
        return write(force: false, now: now)
    }

    /// Writes what waits now, even beside a write still with the writer: for a read or a shutdown that must come
    /// after every outcome decided so far.
    mutating func flush(now: UInt64) -> [Action] {
        write(force: true, now: now)
    }

    /// The write is over: committed, or failed for good (its leases, no longer renewed, expire and the rescuer
    /// hands the rows out again). What gathered meanwhile goes next.
    mutating func written() -> [Action] {
        writing -= 1
        return scheduleWrite()
    }

    /// The write of `outcomes` failed for a transient reason: it is written again after a pause.
    mutating func writeFailed(_ outcomes: [String: AppOutcomes], now: UInt64) -> [Action] {
        let retryAt = now + Self.retryPauseNanos
        failed.append((outcomes, retryAt))
        return [.wake(at: retryAt)]
    }

    // MARK: - Rules

    /// A write once the previous one is answered and `spacingNanos` after it started.
    private mutating func scheduleWrite() -> [Action] {
        guard !writeDue, writing == 0, !waiting.isEmpty else { return [] }
        writeDue = true
        return [.wake(at: lastWriteAt + Self.spacingNanos)]
    }

    private mutating func write(force: Bool, now: UInt64) -> [Action] {
        writeDue = false
        guard !waiting.isEmpty, force || writing == 0 else { return [] }
        let outcomes = waiting
        waiting = [:]
        writing += 1
        lastWriteAt = now
        return [.write(outcomes)]
    }
}
