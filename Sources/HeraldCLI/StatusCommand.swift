import Console
import Queue
import Storage
import Support

/// `herald status [--totals] [--db PATH|URL] [--json]`
enum StatusCommand {
    static let help = """
        Usage: herald status [--totals] [--db PATH|URL] [--json]

        Shows, per app: whether it is sending, paused (with the reason) or gated (until when, since when, and what
        closed the gate: a connection reset, a timeout, a failed connection, a 5xx, a Retry-After or a quota error;
        a fault closes it once however many requests it failed, for 1 s, doubling only while separate faults go
        on); its queued deliveries and how many of them are ready to send now; how long the oldest ready one has
        been waiting since it became due; deliveries in flight; dead letters; and what finished in the last minute
        (delivered, dead, dropped). It reads the indexes only, so it answers quickly at millions of rows.

        A Web Push app's push-service origins (https://host[:port] of its subscriptions) have gates and pauses of
        their own: an origin that fails closes only its own gate, and one that refused the sender for 5 different
        subscriptions in a row is paused until `herald resume APP`. Those gated or paused now are listed under the
        table; the app goes on sending to every other origin.

        Options:
          --totals    also count every app and state, finished rows included (the queue_depth view); this reads
                      the whole deliveries table, which takes seconds at millions of rows
          --db PATH|URL SQLite file, postgres:// URL or 'host=… dbname=…' (default: herald.db, or HERALD_DB)
          --json      one JSON object: {"at", "apps": [...], "totals"?: [...]}; a gated app's "gate_reason"
                      is a short code (reset, timeout, connect, transport, http_503, retry_after, quota) and
                      "gated_since" the time its gate closed; "origins" lists a Web Push app's gated or paused
                      origins ({"origin", "paused", "pause_reason", "paused_at", "gated", "gate_until",
                      "gate_reason", "gated_since"}); "source" is "database" for an app stored there
                      (`herald apps`), else "config"

        Example:
          herald status --db /var/lib/herald/herald.db
        """

    static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, options: Arguments.Option.common + [.flag("totals")])
        if parsed.flag("help") {
            print(help)
            return 0
        }
        try parsed.expectPositional(0, "no arguments")
        let connection = try openExistingDatabase(parsed)
        let now = Clock.nowMillis()
        let (apps, totals, stored) = try connection.snapshot {
            (
                try connection.appStatuses(now: now, lastMinute: true),
                parsed.flag("totals") ? try connection.queueDepth() : nil,
                try connection.appDefinitionVersions()
            )
        }
        if parsed.flag("json") {
            let listed = apps.map { app in
                JSON(members: (json(app, now: now).objectValue ?? []).map { ($0.key, $0.value) }
                    + [("source", stored[app.name] == nil ? "config" : "database")])
            }
            var members: [(String, JSON)] = [("at", .int(now)), ("apps", .array(listed))]
            if let totals { members.append(("totals", .array(totals.map(json)))) }
            Output.json(JSON(members: members))
        } else {
            print(text(apps, totals: totals, now: now))
            if !stored.isEmpty {
                print("\nstored in the database (herald apps list): " + stored.keys.sorted().joined(separator: ", "))
            }
        }
        return 0
    }

    static func json(_ app: AppStatus, now: Int64) -> JSON { AdminJSON.status(app, now: now) }

    /// What closed a gate, for the note under the table: "after a connection reset".
    static func describe(_ reason: GateReason) -> String {
        switch reason {
        case .reset: "a connection reset"
        case .timeout: "a request timeout"
        case .connect: "a failed connection"
        case .transport: "a transport failure"
        case .retryAfter: "a Retry-After"
        case .quota: "a quota error"
        case .http(let status): "an HTTP \(status) answer"
        case .other(let code): code
        }
    }

    static func json(_ row: QueueDepthRow) -> JSON {
        [
            "app": .string(row.app), "state": .string(row.state.rawValue), "count": .int(row.count),
            "oldest": .int(row.oldest),
        ]
    }

    static func text(_ apps: [AppStatus], totals: [QueueDepthRow]?, now: Int64) -> String {
        guard !apps.isEmpty else { return "no apps yet: nothing was ever queued" }
        var table = TextTable(
            ["APP", "SENDING", "QUEUED", "READY", "OLDEST READY", "IN FLIGHT", "DEAD",
             "DELIVERED/MIN", "DEAD/MIN", "DROPPED/MIN"],
            rightAligned: Set(2...9))
        var notes: [String] = []
        for app in apps {
            let sending = app.paused ? "paused" : app.gateUntil > now ? "gated" : "yes"
            table.append([
                app.name, sending, String(app.queued), String(app.ready),
                app.oldestReadySince.map { DurationText.format(now - $0) } ?? "-",
                String(app.inflight), String(app.dead), String(app.finishedLastMinute.delivered),
                String(app.finishedLastMinute.dead), String(app.finishedLastMinute.dropped),
            ])
            if app.paused {
                let since = app.pausedAt.map { " since \(Output.time($0)) (\(Output.relative($0, now: now)))" } ?? ""
                let reason = app.pauseReason ?? "no reason given"
                notes.append("\(app.name) is paused\(since): \(reason); `herald resume \(app.name)` reopens it")
            }
            if app.gateUntil > now {
                let until = "\(Output.time(app.gateUntil)) (\(Output.relative(app.gateUntil, now: now)))"
                let cause = app.gateReason.map(describe) ?? "a Retry-After or a server error"
                let since = app.gatedAt.map { " (since \(Output.time($0)), \(Output.relative($0, now: now)))" } ?? ""
                notes.append("\(app.name) is gated until \(until) after \(cause)\(since)")
            }
            for origin in app.origins {
                if origin.paused {
                    let since = origin.pausedAt.map { " since \(Output.time($0)) (\(Output.relative($0, now: now)))" }
                    let reason = origin.pauseReason ?? "no reason given"
                    notes.append("""
                        \(app.name): origin \(origin.origin) is paused\(since ?? ""): \(reason); \
                        `herald resume \(app.name)` reopens it
                        """)
                } else if origin.gateUntil > now {
                    let until = "\(Output.time(origin.gateUntil)) (\(Output.relative(origin.gateUntil, now: now)))"
                    let cause = origin.gateReason.map(describe) ?? "a server error"
                    notes.append("\(app.name): origin \(origin.origin) is gated until \(until) after \(cause)")
                }
            }
        }
        var output = table.render()
        if !notes.isEmpty { output += "\n\n" + notes.joined(separator: "\n") }
        if let totals {
            var depth = TextTable(["APP", "STATE", "COUNT", "OLDEST"], rightAligned: [2])
            for row in totals {
                depth.append([row.app, row.state.rawValue, String(row.count), Output.time(row.oldest)])
            }
            output += "\n\n" + depth.render()
        }
        return output
    }
}
