import Queue
import Storage
import Support

/// `herald prune [--older-than 7d] [--dry-run]`: retention for finished deliveries.
enum PruneCommand {
    static let help = """
        Usage: herald prune [--older-than DURATION] [--events-older-than DURATION] [--dry-run]
                            [--db PATH|URL] [--json]

        Deletes delivered and dropped deliveries last updated longer ago than DURATION (default 7d), then the
        messages left without any delivery, the token-event and outcome feeds' entries older than
        --events-older-than (default 30d), and reconciliation's bookkeeping (token tombstones, collapse heads)
        older than FCM's longest TTL plus a day, which no queued delivery can need any more. `herald serve` trims
        the last two hourly itself.
        Dead letters are never deleted (nor their messages): they wait for an operator (`herald dead requeue` or
        `herald dead purge`). A message is also kept while its idempotency key still answers (24 h).

        It deletes in batches of \(BatchedWrites.batchSize) rows, each its own short transaction, so a running
        `herald serve` keeps ingesting and sending meanwhile. Run it daily, e.g. from a systemd timer or cron.

        Options:
          --older-than DURATION   age of the rows to delete: 90s, 15m, 12h, 7d (default 7d)
          --events-older-than DURATION
                                  age of the token-event and outcome feed entries to delete (default 30d)
          --dry-run               count the deliveries that would be deleted; delete nothing
          --db PATH|URL           SQLite file, postgres:// URL or 'host=… dbname=…' (default: herald.db, or HERALD_DB)
          --json                  {"cutoff", "deliveries", "messages", "token_events", "outcomes",
                                   "bookkeeping", "dead_letters_kept"}

        Example:
          herald prune --older-than 3d
        """

    static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(
            arguments,
            options: Arguments.Option.common + [.value("older-than"), .value("events-older-than"), .flag("dry-run")])
        if parsed.flag("help") {
            print(help)
            return 0
        }
        try parsed.expectPositional(0, "no arguments")
        let age = try DurationText.option("older-than", in: parsed) ?? 7 * 86_400_000
        let eventsAge = try DurationText.option("events-older-than", in: parsed) ?? 30 * 86_400_000
        let now = Clock.nowMillis()
        let cutoff = now - age
        let rows = { Output.count($0, "delivered or dropped delivery", "delivered or dropped deliveries") }
        let connection = try openExistingDatabase(parsed)

        if parsed.flag("dry-run") {
            let (deliveries, dead) = try connection.snapshot {
                (try connection.finishedDeliveryCount(updatedBefore: cutoff), try connection.deadLetterCount())
            }
            if parsed.flag("json") {
                Output.json([
                    "cutoff": .int(cutoff), "would_delete_deliveries": .int(deliveries),
                    "dead_letters_kept": .int(dead),
                ])
            } else {
                print("would delete \(rows(deliveries)) "
                      + "last updated before \(Output.time(cutoff)), and the messages left without deliveries; "
                      + "\(Output.count(dead, "dead letter")) kept")
            }
            return 0
        }

        var deliveries = 0
        try BatchedWrites.repeatUntilDone(connection) {
            let count = try connection.pruneFinishedDeliveries(updatedBefore: cutoff, limit: BatchedWrites.batchSize)
            deliveries += count
            return count > 0
        }
        var messages = 0
        var cursor: String? = ""
        try BatchedWrites.repeatUntilDone(connection) {
            let page = try connection.pruneEmptyMessages(
                createdBefore: cutoff, now: now, after: cursor ?? "", limit: BatchedWrites.batchSize)
            messages += page.deleted
            cursor = page.next
            return cursor != nil
        }
        var (events, outcomes) = (0, 0)
        try BatchedWrites.repeatUntilDone(connection) {
            let count = try connection.pruneFeeds(before: now - eventsAge, limit: BatchedWrites.batchSize)
            (events, outcomes) = (events + count.tokenEvents, outcomes + count.outcomes)
            return count.tokenEvents + count.outcomes > 0
        }
        var bookkeeping = 0
        try BatchedWrites.repeatUntilDone(connection) {
            let count = try connection.pruneReconciliationState(now: now, limit: BatchedWrites.batchSize)
            bookkeeping += count
            return count > 0
        }
        let dead = try connection.deadLetterCount()
        if parsed.flag("json") {
            Output.json([
                "cutoff": .int(cutoff), "deliveries": .int(deliveries), "messages": .int(messages),
                "token_events": .int(events), "outcomes": .int(outcomes), "bookkeeping": .int(bookkeeping),
                "dead_letters_kept": .int(dead),
            ])
        } else {
            print("deleted \(rows(deliveries)) "
                  + "last updated before \(Output.time(cutoff)) and \(Output.count(messages, "message")) left without "
                  + "deliveries, \(Output.count(events, "token event")), \(Output.count(outcomes, "outcome")) and "
                  + "\(Output.count(bookkeeping, "reconciliation row")); kept \(Output.count(dead, "dead letter"))")
        }
        return 0
    }
}
