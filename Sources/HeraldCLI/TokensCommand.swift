import Ingest
import Queue
import Storage
import Support

/// `herald tokens list|show|add|delete`: the token registry.
enum TokensCommand {
    static let help = """
        Usage: herald tokens list|show|add|delete [options]

        The token registry that "users" addressing expands through and that FCM's answers keep clean
        (NotRegistered deletes a token, a canonical id replaces it).

          list                                   registered tokens, in token order
          show TOKEN                             one token
          add TOKEN [--app APP] [--user USER]    register a token, or change its app and user
          delete TOKEN                           remove a token from the registry

        Run `herald tokens <subcommand> --help` for details.

        Example:
          herald tokens add fcm-token-abc --app default --user u1
        """

    static func run(_ arguments: [String]) throws -> Int32 {
        try Subcommands(command: "tokens", help: help, subcommands: [
            ("list", list), ("show", show), ("add", add), ("delete", delete),
        ]).run(arguments)
    }

    // MARK: - list

    static func list(_ arguments: [String]) throws -> Int32 {
        let filters: [Arguments.Option] = [.value("app"), .value("user"), .value("after"), .value("limit")]
        let parsed = try Arguments(arguments, options: Arguments.Option.common + filters)
        if parsed.flag("help") {
            print("""
                Usage: herald tokens list [--app APP] [--user USER] [--after TOKEN] [--limit N] [--db PATH|URL] [--json]

                Lists registered tokens in token order.

                Options:
                  --app APP       only this app's tokens
                  --user USER     only this user's tokens
                  --after TOKEN   start after this token (the last one of the previous page)
                  --limit N       at most N tokens (default 100, at most 100000)
                  --db PATH|URL   SQLite file, postgres:// URL or 'host=… dbname=…' (default: herald.db, or HERALD_DB)
                  --json          {"tokens": [{"token", "app", "user", "created_at", "updated_at"}]}

                Example:
                  herald tokens list --app default --user u1
                """)
            return 0
        }
        try parsed.expectPositional(0, "no arguments")
        let limit = try parsed.integer("limit", default: 100, in: 1...100_000)
        let connection = try openExistingDatabase(parsed)
        let tokens = try connection.tokens(
            app: parsed.value("app"), user: parsed.value("user"), after: parsed.value("after"), limit: limit)
        if parsed.flag("json") {
            Output.json(["tokens": .array(tokens.map(IngestAPI.tokenJSON))])
            return 0
        }
        guard !tokens.isEmpty else {
            print("no tokens match")
            return 0
        }
        var table = TextTable(["TOKEN", "APP", "USER", "UPDATED"])
        for token in tokens { table.append([token.token, token.app, token.user ?? "-", Output.time(token.updatedAt)]) }
        print(table.render())
        if tokens.count == limit, let last = tokens.last {
            print("(first \(limit); --after \(last.token) shows the next page)")
        }
        return 0
    }

    // MARK: - show

    static func show(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, options: Arguments.Option.common)
        if parsed.flag("help") {
            print("""
                Usage: herald tokens show TOKEN [--db PATH|URL] [--json]

                Shows one registered token: its app, user, and when it was registered and last changed.
                Exits 1 when the token is not registered.

                Example:
                  herald tokens show fcm-token-abc
                """)
            return 0
        }
        try parsed.expectPositional(1, "a token")
        let connection = try openExistingDatabase(parsed)
        guard let record = try connection.token(parsed.positional[0]) else {
            throw CommandError(description: "token \(parsed.positional[0]) is not registered")
        }
        if parsed.flag("json") {
            Output.json(IngestAPI.tokenJSON(record))
        } else {
            print("""
                token    \(record.token)
                app      \(record.app)
                user     \(record.user ?? "-")
                created  \(Output.time(record.createdAt))
                updated  \(Output.time(record.updatedAt))
                """)
        }
        return 0
    }

    // MARK: - add

    static func add(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, options: Arguments.Option.common + [.value("app"), .value("user")])
        if parsed.flag("help") {
            print("""
                Usage: herald tokens add TOKEN [--app APP] [--user USER] [--db PATH|URL] [--json]

                Registers TOKEN for APP (default: default) and USER, as PUT /v1/tokens/{token} does; a registered
                token gets the new app and user (no --user clears it).

                Options:
                  --app APP     the app the token belongs to (default: default)
                  --user USER   the user, for "users" addressing
                  --json        the token's fields and "created"

                Example:
                  herald tokens add fcm-token-abc --app default --user u1
                """)
            return 0
        }
        try parsed.expectPositional(1, "a token")
        let token = parsed.positional[0]
        guard !token.isEmpty, token.utf8.count <= 4096 else {
            throw Arguments.UsageError(description: "a token is 1 to 4096 bytes")
        }
        let app = parsed.value("app") ?? MessageValidator.defaultApp
        guard !app.isEmpty else { throw Arguments.UsageError(description: "--app must not be empty") }
        if parsed.value("user")?.isEmpty == true { throw Arguments.UsageError(description: "--user must not be empty") }
        let connection = try openExistingDatabase(parsed)
        let (record, created) = try connection.transaction {
            try connection.upsertToken(token, app: app, user: parsed.value("user"), now: Clock.nowMillis())
        }
        if parsed.flag("json") {
            var members = IngestAPI.tokenJSON(record).objectValue ?? []
            members.append(("created", .bool(created)))
            Output.json(.object(members))
        } else {
            let owner = record.user.map { ", user \($0)" } ?? ""
            print("\(token): \(created ? "registered" : "updated") (app \(record.app)\(owner))")
        }
        return 0
    }

    // MARK: - delete

    static func delete(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, options: Arguments.Option.common)
        if parsed.flag("help") {
            print("""
                Usage: herald tokens delete TOKEN [--db PATH|URL] [--json]

                Removes TOKEN from the registry (queued deliveries to it are left alone). Exits 1 when it was not
                registered.

                Example:
                  herald tokens delete fcm-token-abc
                """)
            return 0
        }
        try parsed.expectPositional(1, "a token")
        let token = parsed.positional[0]
        let connection = try openExistingDatabase(parsed)
        guard try connection.transaction({ try connection.deleteToken(token) }) else {
            throw CommandError(description: "token \(token) is not registered")
        }
        if parsed.flag("json") {
            Output.json(["token": .string(token), "deleted": true])
        } else {
            print("\(token): deleted")
        }
        return 0
    }
}
