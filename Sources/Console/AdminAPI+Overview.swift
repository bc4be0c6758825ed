import HTTP
import Queue
import Support

extension AdminAPI {
    /// `GET /v1/admin/overview`: per app (every app the database knows, whatever its provider) the figures of
    /// `herald status` (from index ranges only), the last hour a minute at a time (`RateHistory`), the provider's
    /// answers by code since this process started, and the dead letters of the last hour by reason.
    func overview(now: Int64, _ responder: any HTTPResponder) {
        history.record(metrics, now: now)
        let hourAgo = now - 3_600_000
        readers.enqueue({ store in
            try store.snapshot {
                (try store.appStatuses(now: now, lastMinute: true),
                 try store.deadLetterGroups(DeadLetterFilter(diedSince: hourAgo)))
            }
        }) { result in
            Self.answer(result, responder) { statuses, reasons in
                let answers = self.metrics.values("herald_fcm_requests_total")
                let apps: [JSON] = statuses.map { status in
                    var members = AdminJSON.status(status, now: now).objectValue ?? []
                    let state = status.paused ? "paused" : status.gateUntil > now ? "gated" : "sending"
                    members += [
                        ("provider", AdminJSON.optional(self.providers[status.name])),
                        ("state", .string(state)),
                        ("last_hour", .array(self.history.lastHour(status.name, now: now).map(AdminJSON.finished))),
                        ("answers", .array(answers.filter { $0.labels["app"] == status.name }.map {
                            ["code": .string($0.labels["code"] ?? ""), "count": .int(Int64($0.value))]
                        })),
                        ("dead_last_hour", .array(reasons.filter { $0.app == status.name }.map {
                            ["reason": AdminJSON.optional($0.reason), "count": .int($0.count)]
                        })),
                    ]
                    return .object(members)
                }
                return Self.json(200, [
                    "at": .int(now),
                    "history_since": .int(self.history.since),
                    "apps": .array(apps),
                ])
            }
        }
    }
}
