import Ingest
import Queue
import Storage
import Support

/// `herald token-events [--after N] [--limit N]`: the feed of what reconciliation did to tokens.
enum TokenEventsCommand {
    static let help = """
        Usage: herald token-events [--after ID] [--limit N] [--db PATH|URL] [--json]

        Lists what FCM's answers did to the token registry, oldest first: tokens deleted (NotRegistered) and
        replaced by a canonical id. The same feed as GET /v1/token-events; pass the printed "next" as --after to
        continue.

        Options:
          --after ID   only events after this id (default 0: from the start)
          --limit N    at most N events (default 100, at most 1000)
          --db PATH|URL SQLite file, postgres:// URL or 'host=… dbname=…' (default: herald.db, or HERALD_DB)
          --json       {"events": [{"id", "at", "app", "token", "kind", "replacement", "reason", "message_id"}], "next"}

        Example:
          herald token-events --after 1200 --limit 500
        """

    static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, options: Arguments.Option.common + [.value("after"), .value("limit")])
        if parsed.flag("help") {
            print(help)
            return 0
        }
        try parsed.expectPositional(0, "no arguments")
        let after = Int64(try parsed.integer("after", default: 0, in: 0...Int.max))
        let limit = try parsed.integer("limit", default: 100, in: 1...1000)
        let connection = try openExistingDatabase(parsed)
        let events = try connection.tokenEvents(after: after, limit: limit)
        let next = events.last?.id ?? after
        if parsed.flag("json") {
            Output.json(["events": .array(events.map(IngestAPI.tokenEventJSON)), "next": .int(next)])
            return 0
        }
        if events.isEmpty {
            print("no token events after \(after)")
            return 0
        }
        var table = TextTable(
            ["ID", "AT", "APP", "TOKEN", "KIND", "REPLACEMENT", "REASON", "MESSAGE"], rightAligned: [0])
        for event in events {
            table.append([
                String(event.id), Output.time(event.at), event.app, event.token, event.kind.rawValue,
                event.replacement ?? "-", event.reason?.rawValue ?? "-", event.messageID ?? "-",
            ])
        }
        print(table.render())
        print("next: \(next)")
        return 0
    }
}
