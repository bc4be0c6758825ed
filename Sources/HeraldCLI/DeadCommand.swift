import Console
import Foundation
import Ingest
import Queue
import Storage
import Support

/// `herald dead list|show|requeue|purge`: the dead letters (deliveries in state `dead`), which need an operator.
enum DeadCommand {
    static let help = """
        Usage: herald dead list|show|requeue|purge [options]

        Dead letters are deliveries FCM refused for good (InvalidRegistration, MismatchSenderId, MessageTooBig, ...)
        or that ran out of attempts (MaxAttempts) or time (Expired). Retention never deletes them.

          list      the most recent dead letters, filtered
          show ID   one dead letter (by delivery id) and its message
          requeue   send matching dead letters again: queued, attempts 0, due now
          purge     delete matching dead letters (the only command that does)

        Filters (list, requeue, purge): --app APP, --reason REASON, --since DURATION (died within, e.g. 90s, 15m,
        12h, 7d); requeue and purge also take delivery ids. Run `herald dead <subcommand> --help` for details.

        Example:
          herald dead list --reason InvalidRegistration --since 1h
        """

    static func run(_ arguments: [String]) throws -> Int32 {
        try Subcommands(command: "dead", help: help, subcommands: [
            ("list", list), ("show", show), ("requeue", requeue), ("purge", purge),
        ]).run(arguments)
    }

    private static let filterOptions: [Arguments.Option] = [.value("app"), .value("reason"), .value("since")]

    private static let filterHelp = """
          --app APP           only dead letters of this app
          --reason REASON     only this reason (as stored: InvalidRegistration, MaxAttempts, Expired, ...)
          --since DURATION    only those that died within DURATION (90s, 15m, 12h, 7d)
          --db PATH|URL       SQLite file, postgres:// URL or 'host=… dbname=…' (default: herald.db, or HERALD_DB)
        """

    private static func filter(_ parsed: Arguments, ids: [String] = [], now: Int64) throws -> DeadLetterFilter {
        let deliveryIDs = try ids.map { text in
            guard let id = Int64(text), id > 0 else {
                throw Arguments.UsageError(description: "\(text) is not a delivery id (a positive integer)")
            }
            return id
        }
        let since = try DurationText.option("since", in: parsed)
        return DeadLetterFilter(
            app: parsed.value("app"), reason: parsed.value("reason"), diedSince: since.map { now - $0 },
            deliveryIDs: deliveryIDs)
    }

    // MARK: - list

    static func list(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, options: Arguments.Option.common + filterOptions + [.value("limit")])
        if parsed.flag("help") {
            print("""
                Usage: herald dead list [--app APP] [--reason REASON] [--since DURATION] [--limit N]
                                        [--db PATH|URL] [--json]

                Lists dead letters, the most recent deaths first: delivery id, app, token, reason, attempts, last HTTP
                status, when it died, and its message.

                Options:
                \(filterHelp)
                  --limit N           at most N rows (default 100, at most 100000)
                  --json              {"dead_letters": [...]}

                Example:
                  herald dead list --app default --reason MismatchSenderId --since 12h
                """)
            return 0
        }
        try parsed.expectPositional(0, "no arguments")
        let limit = try parsed.integer("limit", default: 100, in: 1...100_000)
        let now = Clock.nowMillis()
        let filter = try filter(parsed, now: now)
        let connection = try openExistingDatabase(parsed)
        let letters = try connection.deadLetters(filter, limit: limit)
        if parsed.flag("json") {
            Output.json(["dead_letters": .array(letters.map { json($0, now: now) })])
            return 0
        }
        guard !letters.isEmpty else {
            print("no dead letters match")
            return 0
        }
        var table = TextTable(
            ["ID", "APP", "TOKEN", "REASON", "ATTEMPTS", "STATUS", "DIED", "MESSAGE"], rightAligned: [0, 4, 5])
        for letter in letters {
            table.append([
                String(letter.deliveryID), letter.app, letter.token.abbreviated(to: 40),
                letter.reason?.rawValue ?? "-", String(letter.attempts), letter.lastStatus.map(String.init) ?? "-",
                Output.relative(letter.diedAt, now: now), letter.messageID,
            ])
        }
        print(table.render())
        if letters.count == limit { print("(first \(limit); --limit N shows more)") }
        return 0
    }

    // MARK: - show

    static func show(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, options: Arguments.Option.common)
        if parsed.flag("help") {
            print("""
                Usage: herald dead show ID [--db PATH|URL] [--json]

                Shows one dead letter, by its delivery id (the ID column of `herald dead list`), with its message.

                Options:
                  --db PATH|URL SQLite file, postgres:// URL or 'host=… dbname=…' (default: herald.db, or HERALD_DB)
                  --json      the dead letter's fields and "message"

                Example:
                  herald dead show 4711
                """)
            return 0
        }
        try parsed.expectPositional(1, "a delivery id")
        let now = Clock.nowMillis()
        let id = try filter(parsed, ids: parsed.positional, now: now).deliveryIDs[0]
        let connection = try openExistingDatabase(parsed)
        let (found, message) = try connection.snapshot {
            let letter = try connection.deadLetter(id: id)
            return (letter, try letter.flatMap { try connection.message(id: $0.messageID) })
        }
        guard let letter = found, let message else {
            throw CommandError(description: "no dead letter with delivery id \(id)")
        }
        if parsed.flag("json") {
            var members = json(letter, now: now).objectValue ?? []
            members.append(("message", AdminJSON.messageWithoutDeliveries(message)))
            Output.json(.object(members))
            return 0
        }
        var lines = [
            "delivery     \(letter.deliveryID)",
            "app          \(letter.app)",
            "token        \(letter.token)",
            "reason       \(letter.reason?.rawValue ?? "-")",
            "attempts     \(letter.attempts)",
            "last status  \(letter.lastStatus.map(String.init) ?? "-")",
            "died         \(Output.time(letter.diedAt)) (\(Output.relative(letter.diedAt, now: now)))",
        ]
        if letter.isExpired(now: now) { lines.append("expired      yes: requeue skips it, it would only expire again") }
        print(lines.joined(separator: "\n"))
        print("")
        print(MessageCommand.summary(message, now: now))
        return 0
    }

    // MARK: - requeue

    static func requeue(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, options: Arguments.Option.common + filterOptions)
        if parsed.flag("help") {
            print("""
                Usage: herald dead requeue [ID...] [--app APP] [--reason REASON] [--since DURATION]
                                           [--db PATH|URL] [--json]

                Puts the matching dead letters back in the queue: state queued, attempts 0, due now, reason cleared.
                A running `herald serve` sends them within a second. Without ids or filters it requeues every dead
                letter. Dead letters whose message's time_to_live has passed are skipped (sent again they would only
                expire again) and counted. Fix the cause first (a key, a package name), or they die again.

                Options:
                  ID...               only these dead letters (delivery ids)
                \(filterHelp)
                  --json              {"requeued": N, "skipped_expired": N}

                Example:
                  herald dead requeue --app default --reason MismatchSenderId --since 2h
                """)
            return 0
        }
        let now = Clock.nowMillis()
        let filter = try filter(parsed, ids: parsed.positional, now: now)
        let connection = try openExistingDatabase(parsed)
        var requeued = 0
        try BatchedWrites.repeatUntilDone(connection) {
            let count = try connection.requeueDeadLetters(filter, now: now, limit: BatchedWrites.batchSize)
            requeued += count
            return count > 0
        }
        let skipped = try connection.expiredDeadLetterCount(filter, now: now)
        if parsed.flag("json") {
            Output.json(["requeued": .int(requeued), "skipped_expired": .int(skipped)])
        } else {
            var line = "requeued \(Output.count(requeued, "dead letter"))"
            if skipped > 0 { line += "; skipped \(skipped) whose message expired (they would only expire again)" }
            print(line)
        }
        return 0
    }

    // MARK: - purge

    static func purge(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, options: Arguments.Option.common + filterOptions + [.flag("yes")])
        if parsed.flag("help") {
            print("""
                Usage: herald dead purge [ID...] [--app APP] [--reason REASON] [--since DURATION] --yes
                                         [--db PATH|URL] [--json]

                Deletes the matching dead letters, and their messages when nothing else of them is left. This is the
                only command that deletes dead letters (`prune` keeps them). Without --yes it prints what would be
                deleted and exits 1. Without ids or filters it matches every dead letter.

                Options:
                  ID...               only these dead letters (delivery ids)
                \(filterHelp)
                  --yes               really delete
                  --json              {"deleted": N, "messages_deleted": N};
                                      without --yes {"would_delete": N, "groups": [{"app", "reason", "count"}]}

                Example:
                  herald dead purge --reason InvalidRegistration --since 7d --yes
                """)
            return 0
        }
        let now = Clock.nowMillis()
        let filter = try filter(parsed, ids: parsed.positional, now: now)
        let connection = try openExistingDatabase(parsed)
        guard parsed.flag("yes") else {
            let groups = try connection.deadLetterGroups(filter)
            let total = groups.reduce(0) { $0 + $1.count }
            if parsed.flag("json") {
                Output.json([
                    "would_delete": .int(total),
                    "groups": .array(groups.map(AdminJSON.group)),
                ])
            } else {
                var table = TextTable(["APP", "REASON", "COUNT"], rightAligned: [2])
                for group in groups { table.append([group.app, group.reason?.rawValue ?? "-", String(group.count)]) }
                let listing = groups.isEmpty ? "" : ":\n\n" + table.render()
                print("would delete \(Output.count(total, "dead letter"))\(listing)")
            }
            HeraldCLI.printError(
                "herald dead purge: nothing deleted; add --yes to delete \(total == 1 ? "it" : "them")")
            return 1
        }
        var deleted = 0
        var messages = 0
        try BatchedWrites.repeatUntilDone(connection) {
            let batch = try connection.purgeDeadLetters(filter, now: now, limit: BatchedWrites.batchSize)
            deleted += batch.deliveries
            messages += batch.messages
            return batch.deliveries > 0
        }
        if parsed.flag("json") {
            Output.json(["deleted": .int(deleted), "messages_deleted": .int(messages)])
        } else {
            print("deleted \(Output.count(deleted, "dead letter")) and \(Output.count(messages, "message")) "
                  + "left without deliveries")
        }
        return 0
    }

    // MARK: - JSON

    static func json(_ letter: DeadLetterRecord, now: Int64) -> JSON { AdminJSON.deadLetter(letter, now: now) }
}
