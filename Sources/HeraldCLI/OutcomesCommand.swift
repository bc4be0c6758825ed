import Queue
import Support

/// `herald outcomes [--after N] [--app APP] [--limit N]`: the outcome feed (SPEC §23).
enum OutcomesCommand {
    static let help = """
        Usage: herald outcomes [--after SEQ] [--app APP] [--limit N] [--db PATH|URL] [--json]

        Lists every delivery's final state (delivered, dead, dropped) and its reason, in the order it was committed.
        The same feed as GET /v1/outcomes; pass the printed "next" as --after to continue. Entries are kept as long
        as token events (serve --token-event-retention, default 30d).

        Options:
          --after SEQ  only outcomes after this seq (default 0: from the start)
          --app APP    only this app's outcomes
          --limit N    at most N outcomes (default 100, at most 1000)
          --db PATH|URL SQLite file, postgres:// URL or 'host=… dbname=…' (default: herald.db, or HERALD_DB)
          --json       {"outcomes": [{"seq", "message_id", "app", "token", "user", "state", "reason",
                       "provider_message_id", "at"}], "next"}

        Example:
          herald outcomes --app default --after 1200 --limit 500
        """

    static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(
            arguments, options: Arguments.Option.common + [.value("after"), .value("app"), .value("limit")])
        if parsed.flag("help") {
            print(help)
            return 0
        }
        try parsed.expectPositional(0, "no arguments")
        let after = Int64(try parsed.integer("after", default: 0, in: 0...Int.max))
        let limit = try parsed.integer("limit", default: 100, in: 1...1000)
        let connection = try openExistingDatabase(parsed)
        let outcomes = try connection.outcomes(after: after, app: parsed.value("app"), limit: limit)
        let next = outcomes.last?.seq ?? after
        if parsed.flag("json") {
            Output.json(["outcomes": .array(outcomes.map(\.json)), "next": .int(next)])
            return 0
        }
        if outcomes.isEmpty {
            print("no outcomes after \(after)")
            return 0
        }
        var table = TextTable(["SEQ", "AT", "APP", "TOKEN", "USER", "STATE", "REASON", "MESSAGE"], rightAligned: [0])
        for outcome in outcomes {
            table.append([
                String(outcome.seq), Output.time(outcome.at), outcome.app, outcome.token, outcome.user ?? "-",
                outcome.state.rawValue, outcome.reason?.rawValue ?? "-", outcome.messageID,
            ])
        }
        print(table.render())
        print("next: \(next)")
        return 0
    }
}
