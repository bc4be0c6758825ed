import Queue
import Synchronization

/// The latest per-app figures of `herald status` that were read, when, and how long the read took: the gauges of
/// `/metrics` refresh it in the background, and so does every overview that reads them itself. Counting a backlog
/// reads an index entry per queued row (about 100 ms per million here), so with a big backlog the overview shows
/// these figures, a few seconds old, instead of making the operator wait for a count (`AdminAPI.overview`).
public final class StatusSnapshot: Sendable {
    public struct Reading: Sendable {
        public var statuses: [AppStatus]
        /// When it was read (Unix ms).
        public var at: Int64
        /// How long the read took, in milliseconds.
        public var tookMillis: Int64
    }

    private let latest = Mutex<Reading?>(nil)

    public init() {}

    public func record(_ statuses: [AppStatus], at: Int64, tookMillis: Int64) {
        latest.withLock { latest in
            // A slower read can finish after a newer one: keep the newest.
            if let current = latest, current.at > at { return }
            latest = Reading(statuses: statuses, at: at, tookMillis: tookMillis)
        }
    }

    public var reading: Reading? { latest.withLock { $0 } }
}
