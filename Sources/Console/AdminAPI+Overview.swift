import HTTP
import Queue
import Support

extension AdminAPI {
    /// A count of the backlog that took longer than this is not repeated for an overview: the figures of the
    /// latest background count are shown instead.
    static let freshCountLimitMillis: Int64 = 50

    /// `GET /v1/admin/overview`: per app (every app the database knows, whatever its provider) the figures of
    /// `herald status` (from index ranges only), its certificate (an APNs app with one: expiry and fingerprint), the
    /// last hour a minute at a time (`RateHistory`), the provider's answers by code since this process started, and
    /// the dead letters of the last hour by reason; the outcome webhooks (`OutcomeWebhookStatus`: lag, skipped, last
    /// error); and the secrets key's id.
    ///
    /// While counting the backlog is quick it is counted for each overview. When the latest count took longer than
    /// `freshCountLimitMillis` (a backlog of about half a million rows and more), the backlog figures are
    /// those of the latest count (`counts_at`, refreshed in the background every 10 s or more), the apps' switches
    /// are read fresh, and the last minute's finishes come from this process's counters; so the overview answers in
    /// milliseconds at any backlog.
    func overview(now: Int64, _ responder: any HTTPResponder) {
        history.record(metrics, now: now)
        let hourAgo = now - 3_600_000
        let earlier = snapshot.reading.flatMap { $0.tookMillis > Self.freshCountLimitMillis ? $0 : nil }
        readers.enqueue({ store in
            try store.snapshot {
                let reasons = try store.deadLetterGroups(DeadLetterFilter(diedSince: hourAgo))
                let webhooks = try store.outcomeWebhookStatuses()
                guard let earlier else {
                    let started = Clock.nowMillis()
                    let statuses = try store.appStatuses(now: now, lastMinute: true)
                    return (statuses, now, reasons, webhooks, Clock.nowMillis() - started)
                }
                let switches = try store.apps()
                let origins = Dictionary(grouping: try store.originSwitches(app: nil, now: now), by: \.app)
                return (Self.refreshed(earlier.statuses, switches: switches, origins: origins), earlier.at, reasons,
                        webhooks, Int64(-1))
            }
        }) { result in
            Self.answer(result, responder) { statuses, countedAt, reasons, webhooks, took in
                if took >= 0 { self.snapshot.record(statuses, at: countedAt, tookMillis: took) }
                let apps: [JSON] = statuses.map { status in
                    var status = status
                    if took < 0 { status.finishedLastMinute = self.history.lastCompleteMinute(status.name, now: now) }
                    return self.overviewJSON(status, reasons: reasons, now: now)
                }
                return Self.json(200, [
                    "at": .int(now),
                    "counts_at": .int(countedAt),
                    "history_since": .int(self.history.since),
                    "secrets_key_id": AdminJSON.optional(self.credentials.secretsKeyID),
                    "apps": .array(apps),
                    "outcome_webhooks": .array(webhooks.map { $0.json(now: now) }),
                ])
            }
        }
    }

    /// Earlier figures with the apps' switches and their origins' as they are now (a pause shows at once); an app new
    /// since then has no figures yet.
    private static func refreshed(
        _ statuses: [AppStatus], switches: [AppState], origins: [String: [OriginSwitch]]
    ) -> [AppStatus] {
        let earlier = Dictionary(statuses.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        return switches.map { app in
            var status = earlier[app.name] ?? AppStatus(name: app.name)
            if status.paused != app.paused || status.pauseReason != app.pauseReason { status.pausedAt = nil }
            status.paused = app.paused
            status.pauseReason = app.pauseReason
            status.gateUntil = app.gateUntil
            status.origins = origins[app.name] ?? []
            return status
        }
    }

    private func overviewJSON(_ status: AppStatus, reasons: [DeadLetterGroup], now: Int64) -> JSON {
        var members = AdminJSON.status(status, now: now).objectValue ?? []
        let state = status.paused ? "paused" : status.gateUntil > now ? "gated" : "sending"
        let answers = metrics.values("herald_fcm_requests_total").filter { $0.labels["app"] == status.name }
        members += [
            ("provider", AdminJSON.optional(providers[status.name] ?? apps?.providers[status.name])),
            ("source", providers[status.name] != nil ? "config" : apps?.providers[status.name] != nil ? "database"
                : .null),
            ("certificate", (credentials.certificates[status.name] ?? apps?.certificates[status.name])?.json ?? .null),
            ("state", .string(state)),
            ("last_hour", .array(history.lastHour(status.name, now: now).map(AdminJSON.finished))),
            ("answers", .array(answers.map {
                ["code": .string($0.labels["code"] ?? ""), "count": .int(Int64($0.value))]
            })),
            ("dead_last_hour", .array(reasons.filter { $0.app == status.name }.map {
                ["reason": AdminJSON.optional($0.reason?.rawValue), "count": .int($0.count)]
            })),
        ]
        return .object(members)
    }
}
