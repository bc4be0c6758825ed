import Console
import Foundation
import ProviderKit
import Queue
import Send
import Storage
import Support

/// `herald status [--totals] [--db PATH|URL] [--json]`
enum StatusCommand {
    static let help = """
        Usage: herald status [--totals] [--db PATH|URL] [--config FILE] [--secrets-key-file FILE] [--json]

        Shows, per app: whether it is sending, paused (with the reason) or gated (until when, since when, and what
        closed the gate: a connection reset, a timeout, a failed connection, a 5xx, a Retry-After or a quota error;
        a fault closes it once however many requests it failed, for 1 s, doubling only while separate faults go
        on); its queued deliveries and how many of them are ready to send now; the messages scheduled for later
        (send_at ahead, not cancelled; a message to users in every app counts in each); how long the oldest ready
        one has been waiting since it became due; deliveries in flight; dead letters; and what finished in the last
        minute (delivered, dead, dropped). It reads the indexes only, so it answers quickly at millions of rows.

        A Web Push app's push-service origins (https://host[:port] of its subscriptions) have gates and pauses of
        their own: an origin that fails closes only its own gate, and one that refused the sender for 5 different
        subscriptions in a row is paused until `herald resume APP`. Those gated or paused now are listed under the
        table; the app goes on sending to every other origin.

        Each outcome webhook (SPEC §23) that has sent: the feed's seq its receiver has acknowledged, the batches in
        flight, its lag (how long ago the oldest outcome not yet acknowledged happened), the outcomes skipped
        because the feed's retention passed them, and its last failed attempt (status code or transport failure).

        With the serve configuration (--config and --secrets-key-file, or HERALD_CONFIG and
        HERALD_SECRETS_KEY_FILE, as `herald serve` reads them), also the credentials in force, never a secret: the
        secrets key's id, and each APNs certificate's expiry date and SHA-256 fingerprint.

        Options:
          --totals    also count every app and state, finished rows included (the queue_depth view); this reads
                      the whole deliveries table, which takes seconds at millions of rows
          --config FILE, --secrets-key-file FILE
                      the serve configuration whose credentials to show (read and checked as serve does)
          --db PATH|URL SQLite file, postgres:// URL or 'host=… dbname=…' (default: herald.db, or HERALD_DB)
          --json      one JSON object: {"at", "apps": [...], "totals"?: [...]}; "scheduled" counts queued
                      deliveries not due yet (send_at, retries), "scheduled_messages" the messages waiting for their
                      send_at; a gated app's "gate_reason"
                      is a short code (reset, timeout, connect, transport, http_503, retry_after, quota) and
                      "gated_since" the time its gate closed; "origins" lists a Web Push app's gated or paused
                      origins ({"origin", "paused", "pause_reason", "paused_at", "gated", "gate_until",
                      "gate_reason", "gated_since"}); "source" is "database" for an app stored there
                      (`herald apps`), else "config"; "outcome_webhooks" ({"webhook" (an app, or * for the
                      top-level one), "seq", "batches_in_flight", "lag_seconds", "skipped", "last_error",
                      "last_error_at"}); with the serve configuration, "secrets_key_id" and an APNs app's
                      "certificate" ({"expires_at", "sha256", "subject"})

        Example:
          herald status --db /var/lib/herald/herald.db
        """

    static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, options: Arguments.Option.common + [
            .flag("totals"), .value("config"), .value("secrets-key-file"),
        ])
        if parsed.flag("help") {
            print(help)
            return 0
        }
        try parsed.expectPositional(0, "no arguments")
        let credentials = try credentials(parsed, environment: ProcessInfo.processInfo.environment)
        let connection = try openExistingDatabase(parsed)
        let now = Clock.nowMillis()
        let (apps, totals, stored, webhooks) = try connection.snapshot {
            (
                try connection.appStatuses(now: now, lastMinute: true),
                parsed.flag("totals") ? try connection.queueDepth() : nil,
                try connection.appDefinitionVersions(),
                try connection.outcomeWebhookStatuses()
            )
        }
        if parsed.flag("json") {
            var members: [(String, JSON)] = [("at", .int(now)), ("apps", .array(apps.map { app in
                var object = (json(app, now: now).objectValue ?? []).map { ($0.key, $0.value) }
                object.append(("source", stored[app.name] == nil ? "config" : "database"))
                if let certificate = credentials?.certificates[app.name] { object.append(("certificate", certificate.json)) }
                return JSON(members: object)
            }))]
            if let totals { members.append(("totals", .array(totals.map(json)))) }
            members.append(("outcome_webhooks", .array(webhooks.map { $0.json(now: now) })))
            if let credentials { members.append(("secrets_key_id", AdminJSON.optional(credentials.secretsKeyID))) }
            Output.json(JSON(members: members))
        } else {
            print(text(apps, totals: totals, now: now))
            if !webhooks.isEmpty { print("\n" + text(webhooks, now: now)) }
            if let credentials { print("\n" + text(credentials, now: now)) }
            if !stored.isEmpty {
                print("\nstored in the database (herald apps list): " + stored.keys.sorted().joined(separator: ", "))
            }
        }
        return 0
    }

    /// The credentials of the serve configuration that `--config` and `--secrets-key-file` (or their environment
    /// variables) name, resolved and checked as `serve` does; nil when none is named.
    static func credentials(_ parsed: Arguments, environment: [String: String]) throws -> CredentialFacts? {
        let names = ["config", "secrets-key-file"]
        let given = names.flatMap { name in parsed.value(name).map { ["--\(name)", $0] } ?? [] }
        guard !given.isEmpty || names.contains(where: { environment[ServeConfiguration.environmentName($0)] != nil })
        else { return nil }
        do {
            let serve = try Arguments(given, options: ServeConfiguration.options)
            return try ServeConfiguration.resolve(serve, environment: environment).credentialFacts
        } catch let invalid as ServeConfiguration.Invalid {
            throw CommandError(description: "the serve configuration: \(invalid)")
        }
    }

    /// The secrets key's id and each certificate's expiry, under the table.
    static func text(_ credentials: CredentialFacts, now: Int64) -> String {
        let key = credentials.secretsKeyID.map { "id \($0)" } ?? "none (storing secrets is refused)"
        var lines = ["secrets key: " + key]
        for (app, certificate) in credentials.certificates.sorted(by: { $0.key < $1.key }) {
            let renew = certificate.expiresAt - now < TLSClientIdentity.expiryWarningMillis
            let soon = renew ? ": renew it soon" : ""
            lines.append("""
                \(app): \(certificate.provider) certificate \(certificate.subject ?? "") expires \
                \(Output.time(certificate.expiresAt)) (\(Output.relative(certificate.expiresAt, now: now)))\(soon); \
                sha256 \(certificate.sha256)
                """)
        }
        return lines.joined(separator: "\n")
    }

    static func json(_ app: AppStatus, now: Int64) -> JSON { AdminJSON.status(app, now: now) }

    /// The outcome webhooks' table, under the apps'.
    static func text(_ webhooks: [OutcomeWebhookStatus], now: Int64) -> String {
        var table = TextTable(
            ["OUTCOME WEBHOOK", "ACKNOWLEDGED SEQ", "IN FLIGHT", "LAG", "SKIPPED", "LAST ERROR"],
            rightAligned: [1, 2, 4])
        for webhook in webhooks {
            let error = webhook.state.lastError.map { error in
                "\(error)" + (webhook.state.lastErrorAt.map { " (\(Output.relative($0, now: now)))" } ?? "")
            }
            table.append([
                webhook.state.name, String(webhook.state.seq), String(webhook.state.inFlight.count),
                DurationText.format(webhook.lagMillis(now: now)), String(webhook.state.skipped),
                error ?? "-",
            ])
        }
        return table.render()
    }

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
            ["APP", "SENDING", "QUEUED", "READY", "SCHEDULED MSGS", "OLDEST READY", "IN FLIGHT", "DEAD",
             "DELIVERED/MIN", "DEAD/MIN", "DROPPED/MIN"],
            rightAligned: Set(2...10))
        var notes: [String] = []
        for app in apps {
            let sending = app.paused ? "paused" : app.gateUntil > now ? "gated" : "yes"
            table.append([
                app.name, sending, String(app.queued), String(app.ready), String(app.scheduledMessages),
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
