import Foundation
import Queue
import Storage
import Support

/// `herald pause APP [--reason TEXT]` and `herald resume APP`.
enum AppSwitchCommand {
    static func pause(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, options: [
            .init(name: "db", takesValue: true), .init(name: "reason", takesValue: true),
            .init(name: "json", takesValue: false), .init(name: "help", takesValue: false),
        ])
        if parsed.flag("help") {
            print("""
                Usage: herald pause APP [--reason TEXT] [--db PATH|URL] [--json]

                Stops sending for APP: nothing is claimed for it until `herald resume APP`. Messages are still
                accepted and queued. A running `herald serve` notices within a second; requests already in flight
                finish.

                Example:
                  herald pause default --reason "rotating the server key"
                """)
            return 0
        }
        let app = try appName(parsed)
        let reason = parsed.value("reason") ?? "paused by an operator"
        let connection = try openExistingDatabase(parsed)
        let changed = try connection.transaction {
            try connection.pauseApp(app, reason: reason, now: Clock.nowMillis())
        }
        report(parsed, app: app, paused: true, changed: changed)
        return 0
    }

    static func resume(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, options: [
            .init(name: "db", takesValue: true), .init(name: "json", takesValue: false),
            .init(name: "help", takesValue: false),
        ])
        if parsed.flag("help") {
            print("""
                Usage: herald resume APP [--db PATH|URL] [--json]

                Reopens APP after a pause (by an operator, or by Herald itself after FCM refused its credentials
                with 401 or InvalidApnsCredential) and clears its Retry-After gate. For a Web Push app it also
                reopens the push-service origins that were paused (5 different subscriptions refused in a row) or
                gated. A running `herald serve` starts sending within a second (rows of a paused origin within a
                minute).

                Example:
                  herald resume default
                """)
            return 0
        }
        let app = try appName(parsed)
        let connection = try openExistingDatabase(parsed)
        guard try connection.appState(app) != nil else { throw CommandError(description: "no app named \"\(app)\"") }
        let changed = try connection.transaction { try connection.resumeApp(app) }
        report(parsed, app: app, paused: false, changed: changed)
        return 0
    }

    private static func appName(_ parsed: Arguments) throws -> String {
        guard parsed.positional.count == 1, let app = parsed.positional.first, !app.isEmpty else {
            throw Arguments.UsageError(description: "give exactly one app name")
        }
        return app
    }

    private static func report(_ parsed: Arguments, app: String, paused: Bool, changed: Bool) {
        if parsed.flag("json") {
            let answer = JSON.object([("app", .string(app)), ("paused", .bool(paused)), ("changed", .bool(changed))])
            print(answer.serialized())
        } else if changed {
            print(paused ? "\(app): paused" : "\(app): resumed")
        } else {
            print(paused ? "\(app): was already paused" : "\(app): was not paused")
        }
    }
}
