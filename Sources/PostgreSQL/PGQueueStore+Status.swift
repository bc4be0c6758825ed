import Queue
import Support

// `herald status`'s figures in PostgreSQL's SQL; the rule that joins them is Queue's (`Store+Status.swift`).
extension PGQueueStore {
    public func appSwitches() throws -> [AppStatus] {
        try connection.query(PGStatusSQL.apps) {
            AppStatus(
                name: $0.string(0), paused: $0.int(1) != 0, pauseReason: $0.optionalString(2),
                pausedAt: $0.optionalInt64(3), gateUntil: $0.int64(4),
                gateReason: $0.optionalString(5).map(GateReason.init(stored:)), gatedAt: $0.optionalInt64(6))
        }
    }

    public func backlog(app: String, now: Int64) throws -> (queued: Int, ready: Int) {
        try connection.queryOne(PGStatusSQL.queued, [.integer(now), .text(app)]) { ($0.int(0), $0.int(1)) } ?? (0, 0)
    }

    public func inflightCounts() throws -> [String: Int] { try countsByApp(PGStatusSQL.inflight, []) }

    public func deadCounts(since: Int64?) throws -> [String: Int] {
        try since.map { try countsByApp(PGStatusSQL.deadSince, [.integer($0)]) } ?? countsByApp(PGStatusSQL.dead, [])
    }

    public func finishedCounts(since: Int64) throws -> [(app: String, state: DeliveryState, count: Int)] {
        try connection.query(PGStatusSQL.finishedSince, [.integer(since)]) {
            (app: $0.string(0), state: DeliveryState(stored: $0.string(1)), count: $0.int(2))
        }
    }

    /// The `queue_depth` view: every app and state with its count. It reads every delivery, so it takes seconds
    /// on a table of millions; `appStatuses` is the quick answer.
    public func queueDepth() throws -> [QueueDepthRow] {
        try connection.query(
            #"SELECT app, state, count, oldest FROM queue_depth ORDER BY app COLLATE "C", state COLLATE "C""#
        ) {
            QueueDepthRow(
                app: $0.string(0), state: DeliveryState(stored: $0.string(1)), count: $0.int(2),
                oldest: $0.int64(3))
        }
    }

    private func countsByApp(_ sql: String, _ arguments: [PGValue]) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for (app, count) in try connection.query(sql, arguments, row: { ($0.string(0), $0.int(1)) }) {
            counts[app] = count
        }
        return counts
    }
}

/// The status queries, each answerable from one of the partial indexes (their state terms imply the index's
/// condition; the tests check the plans). A few rows come back, so where SQLite orders them, `COLLATE "C"` orders
/// them in bytes as SQLite does, whatever the database's locale.
enum PGStatusSQL {
    static let apps = #"""
        SELECT name, paused, pause_reason, paused_at, gate_until, gate_reason, gated_at FROM apps
        ORDER BY name COLLATE "C"
        """#

    /// `deliveries_ready`: the app's queued rows, in one range (an index-only scan: `next_attempt_at` is in it).
    /// PostgreSQL sums no booleans: `count(*) FILTER` where SQLite writes `sum(next_attempt_at <= ?)`.
    static let queued = """
        SELECT count(*), count(*) FILTER (WHERE next_attempt_at <= $1) FROM deliveries
        WHERE app = $2 AND state = 'queued'
        """

    /// `deliveries_inflight` (SQLite needs `INDEXED BY` for it; PostgreSQL's planner picks it from the statistics).
    static let inflight = "SELECT app, count(*) FROM deliveries WHERE state = 'inflight' GROUP BY app"

    /// `deliveries_dead_by_app`.
    static let dead = "SELECT app, count(*) FROM deliveries WHERE state = 'dead' GROUP BY app"

    /// `deliveries_dead` from the given time on.
    static let deadSince = """
        SELECT app, count(*) FROM deliveries WHERE state = 'dead' AND updated_at >= $1 GROUP BY app
        """

    /// `deliveries_finished`, which covers the query.
    static let finishedSince = """
        SELECT app, state, count(*) FROM deliveries
        WHERE state IN ('delivered', 'dropped') AND updated_at >= $1 GROUP BY app, state
        """
}
