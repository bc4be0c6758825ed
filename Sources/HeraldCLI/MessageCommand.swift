import Ingest
import Queue
import Storage
import Support

/// `herald message ID [--db PATH|URL] [--json]`
enum MessageCommand {
    static let help = """
        Usage: herald message ID [--db PATH|URL] [--json]

        Shows one message (app, target kind, options, payload, times) and each of its deliveries: token, state,
        reason, attempts, next attempt, FCM message id and canonical token.

        Options:
          --db PATH|URL SQLite file, postgres:// URL or 'host=… dbname=…' (default: herald.db, or HERALD_DB)
          --json      the same object as GET /v1/messages/{id}

        Example:
          herald message 01JD3M2X0Q8W5N3H7K2C4V6B9R
        """

    static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, options: Arguments.Option.common)
        if parsed.flag("help") {
            print(help)
            return 0
        }
        try parsed.expectPositional(1, "a message id")
        let id = parsed.positional[0]
        let connection = try openExistingDatabase(parsed)
        guard let record = try connection.message(id: id) else { throw CommandError(description: "no message \(id)") }
        if parsed.flag("json") {
            Output.json(IngestAPI.messageJSON(record))
        } else {
            print(text(record, now: Clock.nowMillis()))
        }
        return 0
    }

    /// The message and a table of its deliveries.
    static func text(_ record: MessageRecord, now: Int64) -> String {
        let summary = summary(record, now: now)
        guard !record.deliveries.isEmpty else { return summary }
        var table = TextTable(
            ["TOKEN", "STATE", "REASON", "ATTEMPTS", "NEXT ATTEMPT", "FCM MESSAGE ID", "CANONICAL TOKEN"],
            rightAligned: [3])
        for delivery in record.deliveries {
            table.append([
                delivery.token, delivery.state.rawValue, delivery.reason?.rawValue ?? "-", String(delivery.attempts),
                delivery.state == .queued ? Output.relative(delivery.nextAttemptAt, now: now) : "-",
                delivery.fcmMessageID ?? "-", delivery.canonicalToken ?? "-",
            ])
        }
        return summary + "\n\n" + table.render()
    }

    /// The message's fields and its delivery counts, one per line.
    static func summary(_ record: MessageRecord, now: Int64) -> String {
        var lines = [
            "message      \(record.id)",
            "app          \(record.app)",
            "target       \(record.targetKind.rawValue)",
            "priority     \(record.priority.rawValue)",
            "ttl          \(record.ttlSeconds)s, expires \(Output.time(record.expiresAt))"
                + " (\(Output.relative(record.expiresAt, now: now)))",
            "created      \(Output.time(record.createdAt)) (\(Output.relative(record.createdAt, now: now)))",
        ]
        if let collapseKey = record.collapseKey { lines.append("collapse_key \(collapseKey)") }
        if record.dryRun { lines.append("dry_run      yes") }
        lines.append("payload      \(record.payload)")
        let counts = DeliveryState.allCases.map { state in
            "\(record.deliveries.count(where: { $0.state == state })) \(state.rawValue)"
        }
        lines.append("deliveries   \(counts.joined(separator: ", "))")
        return lines.joined(separator: "\n")
    }
}
