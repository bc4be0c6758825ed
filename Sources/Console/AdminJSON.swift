import Ingest
import Queue
import Support

/// The JSON shapes the console's API and the CLI's `--json` share, so a script reads one shape from either.
public enum AdminJSON {
    /// One app in `herald status --json` and `GET /v1/admin/overview`.
    public static func status(_ app: AppStatus, now: Int64) -> JSON {
        [
            "app": .string(app.name),
            "paused": .bool(app.paused),
            "pause_reason": optional(app.pauseReason),
            "paused_at": optional(app.pausedAt),
            "gated": .bool(app.gateUntil > now),
            "gate_until": app.gateUntil > 0 ? .int(app.gateUntil) : .null,
            "gate_reason": app.gateUntil > 0 ? optional(app.gateReason?.rawValue) : .null,
            "gated_since": app.gateUntil > 0 ? optional(app.gatedAt) : .null,
            "queued": .int(app.queued),
            "ready": .int(app.ready),
            "scheduled": .int(app.queued - app.ready),
            "scheduled_messages": .int(app.scheduledMessages),
            "oldest_ready_seconds": app.oldestReadySince.map { .double(Double(now - $0) / 1000) } ?? .null,
            "inflight": .int(app.inflight),
            "dead": .int(app.dead),
            "last_minute": finished(app.finishedLastMinute),
            "origins": .array(app.origins.map { origin($0, now: now) }),
        ]
    }

    /// One gated or paused push-service origin of a Web Push app (SPEC §19), in an app's `origins`.
    public static func origin(_ origin: OriginSwitch, now: Int64) -> JSON {
        let gated = origin.gateUntil > now
        return [
            "origin": .string(origin.origin),
            "paused": .bool(origin.paused),
            "pause_reason": optional(origin.pauseReason),
            "paused_at": optional(origin.pausedAt),
            "gated": .bool(gated),
            "gate_until": gated ? .int(origin.gateUntil) : .null,
            "gate_reason": gated ? optional(origin.gateReason?.rawValue) : .null,
            "gated_since": gated ? optional(origin.gatedAt) : .null,
        ]
    }

    public static func finished(_ counts: FinishedCounts) -> JSON {
        ["delivered": .int(counts.delivered), "dead": .int(counts.dead), "dropped": .int(counts.dropped)]
    }

    /// One dead letter in `herald dead list --json` and `GET /v1/admin/dead`.
    public static func deadLetter(_ letter: DeadLetterRecord, now: Int64) -> JSON {
        [
            "delivery_id": .int(letter.deliveryID),
            "message_id": .string(letter.messageID),
            "app": .string(letter.app),
            "token": .string(letter.token),
            "reason": optional(letter.reason?.rawValue),
            "attempts": .int(letter.attempts),
            "last_status": optional(letter.lastStatus),
            "died_at": .int(letter.diedAt),
            "expired": .bool(letter.isExpired(now: now)),
        ]
    }

    public static func group(_ group: DeadLetterGroup) -> JSON {
        ["app": .string(group.app), "reason": optional(group.reason?.rawValue), "count": .int(group.count)]
    }

    /// A message as `GET /v1/messages/{id}` shows it, without its deliveries (a dead letter is one of them).
    public static func messageWithoutDeliveries(_ record: MessageRecord) -> JSON {
        .object((IngestAPI.messageJSON(record).objectValue ?? []).filter { $0.key != "deliveries" })
    }

    public static func optional(_ value: String?) -> JSON { value.map(JSON.string) ?? .null }
    public static func optional(_ value: Int64?) -> JSON { value.map(JSON.int) ?? .null }
}
