import Queue
import Support

extension SQLiteQueueStore {
    // MARK: - Status

    public func appSwitches() throws -> [AppStatus] {
        try connection.query(StatusSQL.apps) {
            AppStatus(
                name: $0.string(0), paused: $0.int(1) != 0, pauseReason: $0.optionalString(2),
                pausedAt: $0.optionalInt64(3), gateUntil: $0.int64(4),
                gateReason: $0.optionalString(5).map(GateReason.init(stored:)), gatedAt: $0.optionalInt64(6))
        }
    }

    public func backlog(app: String, now: Int64) throws -> (queued: Int, ready: Int) {
        try connection.queryOne(StatusSQL.queued, [.integer(now), .text(app)]) { ($0.int(0), $0.int(1)) } ?? (0, 0)
    }

    public func inflightCounts() throws -> [String: Int] { try countsByApp(StatusSQL.inflight, []) }

    public func deadCounts(since: Int64?) throws -> [String: Int] {
        try since.map { try countsByApp(StatusSQL.deadSince, [.integer($0)]) } ?? countsByApp(StatusSQL.dead, [])
    }

    public func finishedCounts(since: Int64) throws -> [(app: String, state: DeliveryState, count: Int)] {
        try connection.query(StatusSQL.finishedSince, [.integer(since)]) {
            (app: $0.string(0), state: DeliveryState(stored: $0.string(1)), count: $0.int(2))
        }
    }

    /// The `queue_depth` view: every app and state with its count. It reads every delivery, so it takes seconds
    /// on a table of millions; `appStatuses` is the quick answer.
    public func queueDepth() throws -> [QueueDepthRow] {
        try connection.query("SELECT app, state, count, oldest FROM queue_depth ORDER BY app, state") {
            QueueDepthRow(
                app: $0.string(0), state: DeliveryState(stored: $0.string(1)), count: $0.int(2),
                oldest: $0.int64(3))
        }
    }

    private func countsByApp(_ sql: String, _ arguments: [SQLValue]) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for (app, count) in try connection.query(sql, arguments, row: { ($0.string(0), $0.int(1)) }) {
            counts[app] = count
        }
        return counts
    }
}

/// The status queries, each written so SQLite can answer it from one of the partial indexes (see the tests that
/// check their query plans).
enum StatusSQL {
    static let apps = """
        SELECT name, paused, pause_reason, paused_at, gate_until, gate_reason, gated_at FROM apps ORDER BY name
        """

    /// `deliveries_ready`: the app's queued rows, in one range.
    static let queued = """
        SELECT count(*), coalesce(sum(next_attempt_at <= ?), 0) FROM deliveries WHERE app = ? AND state = 'queued'
        """

    /// Without the hint the planner may prefer walking a full index (every row) for the GROUP BY.
    static let inflight = """
        SELECT app, count(*) FROM deliveries INDEXED BY deliveries_inflight WHERE state = 'inflight' GROUP BY app
        """

    /// `deliveries_dead_by_app`.
    static let dead = "SELECT app, count(*) FROM deliveries WHERE state = 'dead' GROUP BY app"

    /// `deliveries_dead` from the given time on.
    static let deadSince = """
        SELECT app, count(*) FROM deliveries INDEXED BY deliveries_dead WHERE state = 'dead' AND updated_at >= ?
        GROUP BY app
        """

    /// `deliveries_finished`, which covers the query.
    static let finishedSince = """
        SELECT app, state, count(*) FROM deliveries
        WHERE state IN ('delivered', 'dropped') AND updated_at >= ? GROUP BY app, state
        """
}
