import Foundation
import HTTP
import Ingest
import Queue
import Storage
import Support

/// `herald serve`: the ingest API (and, from the delivery stage on, the workers) until SIGTERM or SIGINT.
enum ServeCommand {
    static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(
            arguments, options: ServeConfiguration.options + [.init(name: "help", takesValue: false)])
        if parsed.flag("help") {
            print(help)
            return 0
        }
        guard parsed.positional.isEmpty else {
            throw Arguments.UsageError(description: "unexpected argument \(parsed.positional[0])")
        }
        let configuration: ServeConfiguration
        do {
            configuration = try ServeConfiguration.resolve(parsed, environment: ProcessInfo.processInfo.environment)
        } catch let invalid as ServeConfiguration.Invalid {
            throw Arguments.UsageError(description: invalid.description)
        }
        Log.level = configuration.logLevel

        // SIGTERM and SIGINT are taken by sigwait below: block them before any thread starts, so every
        // thread inherits the mask and none is interrupted.
        var signals = blockTerminationSignals()

        let service = try Service(configuration)
        try service.start()
        var received: Int32 = 0
        sigwait(&signals, &received)
        Log.info("stopping", ["signal": .string(received == SIGTERM ? "SIGTERM" : "SIGINT")])
        service.stop()
        Log.info("stopped")
        return 0
    }

    static var help: String {
        let width = ServeConfiguration.settings.map { $0.name.count }.max()! + 8
        let lines = ServeConfiguration.settings.map { setting -> String in
            let flag = "--\(setting.name)" + (setting.name == "sandbox" ? "" : " X")
            let fallback = setting.value.map { " (default: \($0))" } ?? ""
            return "  \(flag.padding(toLength: width, withPad: " ", startingAt: 0))\(setting.help)\(fallback)"
        }
        return """
            Usage: herald serve [options]

            Accepts push messages on a local HTTP API, commits them to SQLite before answering, and delivers them
            to Firebase Cloud Messaging. Every option can also be set by an environment variable HERALD_<NAME>
            (e.g. HERALD_FCM_KEY) or a key of the --config file; a flag wins over the environment, which wins
            over the file.

            Options:
            \(lines.joined(separator: "\n"))

            SIGTERM or SIGINT: stop accepting, finish open requests, close the database cleanly, exit 0.

            Examples:
              herald serve --sandbox
              herald serve --fcm-service-account /etc/herald/firebase-service-account.json   (FCM HTTP v1)
              HERALD_FCM_KEY=... herald serve --db /var/lib/herald/herald.db --listen 127.0.0.1:8600   (legacy)

            Per-app providers ("fcm-v1" with "service_account_file", "project_id", "token_uri", "endpoint";
            "fcm-legacy" with "server_key", "endpoint"; "apns" with "key_file", "key_id", "team_id", "topic",
            "environment" — or, for a certificate instead of a .p8 key, "certificate_file" (a .p12, with
            "certificate_password_file" if it has a password, or a PEM certificate with "certificate_key_file");
            "webpush" with "vapid_private_key_file", "vapid_subject" — make the key with
            `herald webpush-keys --out FILE` — "origin_concurrency", requests in flight to one push service at most,
            default 100, and optionally "trusted_push_hosts" (host suffixes its endpoints must be on) and
            "allow_private_endpoints" (true: also loopback, private addresses and any port; for tests)) go in the
            config file's "apps" list.
            """
    }
}
