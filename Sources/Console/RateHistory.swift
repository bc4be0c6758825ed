import Queue
import Support
import Synchronization

/// What became delivered, dead or dropped in each minute of the last hour, per app: the overview's chart. It is
/// read from the delivery counters this process keeps (`herald_deliveries_total`), sampled every few seconds, not
/// from the database, where an hour at FCM's full rate is tens of millions of index entries to count. So it covers
/// this process since it started (on a PostgreSQL queue shared by several instances, this instance's sends).
public final class RateHistory: Sendable {
    public static let minutes = 60

    private struct State {
        /// The counters' values at the last sample, per app.
        var last: [String: FinishedCounts] = [:]
        /// Minute (Unix ms / 60,000) → what finished in it, per app; only the last hour is kept.
        var minutes: [String: [Int64: FinishedCounts]] = [:]
    }

    private let state = Mutex(State())
    /// When this process began counting: minutes before it are unknown, not zero.
    public let since: Int64

    public init(since: Int64) {
        self.since = since
    }

    /// Adds what the counters grew by since the last sample to the minute of `now`.
    public func record(_ totals: [String: FinishedCounts], now: Int64) {
        let minute = now / 60_000
        state.withLock { state in
            for (app, total) in totals {
                let last = state.last[app] ?? FinishedCounts()
                var bucket = state.minutes[app]?[minute] ?? FinishedCounts()
                bucket.delivered += max(0, total.delivered - last.delivered)
                bucket.dead += max(0, total.dead - last.dead)
                bucket.dropped += max(0, total.dropped - last.dropped)
                state.minutes[app, default: [:]][minute] = bucket
                state.last[app] = total
                state.minutes[app] = state.minutes[app]?.filter { $0.key > minute - Int64(Self.minutes) }
            }
        }
    }

    /// Samples `herald_deliveries_total` of `metrics`.
    public func record(_ metrics: Metrics, now: Int64) {
        record(Self.totals(metrics), now: now)
    }

    /// The last hour of `app`, a minute each, oldest first; the last entry is the minute of `now`, still going.
    public func lastHour(_ app: String, now: Int64) -> [FinishedCounts] {
        let minute = now / 60_000
        let counts = state.withLock { $0.minutes[app] ?? [:] }
        return (0..<Int64(Self.minutes)).map { counts[minute - Int64(Self.minutes) + 1 + $0] ?? FinishedCounts() }
    }

    /// What finished in the last whole minute before the one of `now`.
    public func lastCompleteMinute(_ app: String, now: Int64) -> FinishedCounts {
        let minute = now / 60_000 - 1
        return state.withLock { $0.minutes[app]?[minute] } ?? FinishedCounts()
    }

    /// The counters' totals per app: the outcomes that finish a delivery.
    static func totals(_ metrics: Metrics) -> [String: FinishedCounts] {
        var totals: [String: FinishedCounts] = [:]
        for (labels, value) in metrics.values("herald_deliveries_total") {
            guard let app = labels["app"] else { continue }
            let count = Int(value)
            switch labels["outcome"] {
            case "delivered": totals[app, default: FinishedCounts()].delivered += count
            case "dead": totals[app, default: FinishedCounts()].dead += count
            case "dropped": totals[app, default: FinishedCounts()].dropped += count
            default: continue
            }
        }
        return totals
    }
}
