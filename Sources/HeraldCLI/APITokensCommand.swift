import Console
import Ingest
import Queue
import Support

/// `herald api-tokens create|list|revoke`: per-tenant API tokens (SPEC §22). Not `herald tokens`, which is the
/// device-token registry.
enum APITokensCommand {
    static let help = """
        Usage: herald api-tokens create|list|revoke [options]

        API tokens for one team or service each: a token acts in one role, for the apps it names, and gets 403
        anywhere else. serve's --api-token stays the admin token (every route, the console, /v1/admin). Tokens are
        honoured only by a serve that has --api-token.

          create --apps A,B [--role send|register|read] [--name TEXT]
                           make a token and print its secret, the only time it is shown
          list             every token (id, name, role, apps, created, last used, revoked); never a secret
          revoke ID        the token stops working: at once on a serve that revoked it through
                           /v1/admin/api-tokens, within a few seconds on every other

        Roles: send (POST /v1/messages, /v1/messages/batch, /fcm/send, messages:send; DELETE /v1/messages/{id}),
        register (/v1/tokens/{token}, PUT /v1/subscriptions), read (GET /v1/messages/{id}, /v1/token-events).

        Run `herald api-tokens <subcommand> --help` for details.

        Example:
          herald api-tokens create --apps shop,shop-web --role send --name shop-backend
        """

    static func run(_ arguments: [String]) throws -> Int32 {
        try Subcommands(command: "api-tokens", help: help, subcommands: [
            ("create", create), ("list", list), ("revoke", revoke),
        ]).run(arguments)
    }

    // MARK: - create

    static func create(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(
            arguments, options: Arguments.Option.common + [.value("apps"), .value("role"), .value("name")])
        if parsed.flag("help") {
            print("""
                Usage: herald api-tokens create --apps A[,B...] [--role send|register|read] [--name TEXT]
                                                [--db PATH|URL] [--json]

                Makes an API token for the apps named and prints its secret once: store it where the team's
                service reads it. The database keeps only its SHA-256. A serve that uses this database honours it
                within a few seconds.

                Options:
                  --apps A,B      the apps it acts for; each must be known to the database (serve has run with it)
                  --role ROLE     send (default): messages and their cancel; register: device tokens and
                                  subscriptions; read: message status and token events
                  --name TEXT     a label for `list` (the team or service)
                  --json          the token's fields and "secret"

                Example:
                  herald api-tokens create --apps shop --role register --name shop-app-registrations
                """)
            return 0
        }
        try parsed.expectPositional(0, "no arguments")
        guard let apps = parsed.value("apps") else { throw Arguments.UsageError(description: "give --apps A[,B...]") }
        let role = try parsed.value("role").map { name in
            guard let role = APITokenRole(rawValue: name) else {
                throw Arguments.UsageError(description: "--role must be send, register or read")
            }
            return role
        } ?? .send
        let issued: (record: APITokenRecord, secret: String)
        do {
            issued = try APITokenSecret.issue(
                apps: apps.split(separator: ",", omittingEmptySubsequences: false).map(String.init), role: role,
                name: parsed.value("name"), now: Clock.nowMillis())
        } catch let failure as APIError {
            throw Arguments.UsageError(description: failure.message)
        }
        let connection = try openExistingDatabase(parsed)
        do {
            try connection.transaction { try connection.createAPIToken(issued.record) }
        } catch let unknown as UnknownAppsError {
            throw CommandError(description: unknown.description)
        }
        if parsed.flag("json") {
            let shown = AdminJSON.apiToken(issued.record).objectValue ?? []
            Output.json(.object(shown + [("secret", .string(issued.secret))]))
        } else {
            print("""
                \(issued.secret)

                id \(issued.record.id), role \(role.rawValue), apps \(issued.record.apps.joined(separator: ", "))
                This is the only time the secret is shown. Send it as Authorization: Bearer <secret> (key=<secret>
                for /fcm/send).
                """)
        }
        return 0
    }

    // MARK: - list

    static func list(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, options: Arguments.Option.common + [.flag("active")])
        if parsed.flag("help") {
            print("""
                Usage: herald api-tokens list [--active] [--db PATH|URL] [--json]

                Lists the API tokens, oldest first, revoked ones too: id, name, role, apps, when made, last used
                (written by serve a few seconds after the request) and revoked. Never a secret.

                Options:
                  --active   leave revoked tokens out
                  --json     {"api_tokens": [{"id", "name", "role", "apps", "created_at", "last_used_at",
                             "revoked_at"}]}

                Example:
                  herald api-tokens list --active
                """)
            return 0
        }
        try parsed.expectPositional(0, "no arguments")
        let tokens = try openExistingDatabase(parsed).apiTokens(activeOnly: parsed.flag("active"))
        if parsed.flag("json") {
            Output.json(["api_tokens": .array(tokens.map(AdminJSON.apiToken))])
            return 0
        }
        guard !tokens.isEmpty else {
            print("no api tokens")
            return 0
        }
        var table = TextTable(["ID", "NAME", "ROLE", "APPS", "CREATED", "LAST USED", "REVOKED"])
        for token in tokens {
            table.append([
                token.id, token.name ?? "-", token.role.rawValue, token.apps.joined(separator: ","),
                Output.time(token.createdAt), Output.time(token.lastUsedAt), Output.time(token.revokedAt),
            ])
        }
        print(table.render())
        return 0
    }

    // MARK: - revoke

    static func revoke(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, options: Arguments.Option.common)
        if parsed.flag("help") {
            print("""
                Usage: herald api-tokens revoke ID [--db PATH|URL] [--json]

                Revokes the API token with this id (as `list` shows it, and as its secret carries it after hrld_):
                every serve on this database refuses it within a few seconds (401). Exits 1 when no working token
                has this id.

                Example:
                  herald api-tokens revoke 3f9c0a1b2d4e
                """)
            return 0
        }
        try parsed.expectPositional(1, "a token id")
        let id = parsed.positional[0]
        let connection = try openExistingDatabase(parsed)
        guard try connection.transaction({ try connection.revokeAPIToken(id: id, now: Clock.nowMillis()) }) else {
            throw CommandError(description: "no working api token has id \(id)")
        }
        if parsed.flag("json") {
            Output.json(["id": .string(id), "revoked": true])
        } else {
            print("\(id): revoked")
        }
        return 0
    }
}
