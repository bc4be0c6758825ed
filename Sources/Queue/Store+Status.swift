/// How far back `herald status` counts what finished: the last minute.
public let statusWindowMillis: Int64 = 60_000

/// `herald status`'s rules, the same on every engine: which figures make an app's status and how they join.
extension Store {
    /// Every app's switches, backlog and what finished in the last minute. Each engine reads each figure from one of
    /// its partial indexes (no table scan), so it answers quickly at millions of rows. Call inside `snapshot` for
    /// figures that agree with each other. `lastMinute: false` leaves `finishedLastMinute` at zero: counting what
    /// finished in the last minute reads an index entry per send (~500,000 at FCM's full rate), more than the
    /// gauges' refresh should cost.
    public func appStatuses(now: Int64, lastMinute: Bool) throws -> [AppStatus] {
        let since = now - statusWindowMillis
        var finished: [String: FinishedCounts] = [:]
        if lastMinute {
            for row in try finishedCounts(since: since) {
                switch row.state {
                case .delivered: finished[row.app, default: FinishedCounts()].delivered = row.count
                case .dropped: finished[row.app, default: FinishedCounts()].dropped = row.count
                case .dead: finished[row.app, default: FinishedCounts()].dead = row.count
                case .queued, .inflight: continue
                }
            }
            for (app, count) in try deadCounts(since: since) {
                finished[app, default: FinishedCounts()].dead = count
            }
        }
        let origins = Dictionary(grouping: try originSwitches(app: nil, now: now), by: \.app)
        let inflight = try inflightCounts()
        let dead = try deadCounts(since: nil)
        let scheduled = try scheduledMessageCounts(now: now)
        var statuses = try appSwitches()
        for index in statuses.indices {
            let app = statuses[index].name
            let backlog = try self.backlog(app: app, now: now)
            statuses[index].queued = backlog.queued
            statuses[index].ready = backlog.ready
            statuses[index].scheduledMessages = (scheduled[app] ?? 0) + (scheduled[NewMessage.everyApp] ?? 0)
            if let due = try nextDue(app: app), due <= now { statuses[index].oldestReadySince = due }
            statuses[index].inflight = inflight[app] ?? 0
            statuses[index].dead = dead[app] ?? 0
            statuses[index].finishedLastMinute = finished[app] ?? FinishedCounts()
            statuses[index].origins = origins[app] ?? []
        }
        return statuses
    }
}
