import Foundation
import PostgreSQL
import ProviderKit
import ProviderList
import Queue
import Storage
import Support

/// `herald <command> ...`: dispatches to a command and turns its outcome into an exit code
/// (0 ok, 1 error, 2 usage).
public enum HeraldCLI {
    typealias Command = HeraldCommand

    /// Herald's own commands, with the providers' (`webpush-keys`) after `fcm-sim`.
    static let commands: [Command] = [
        Command(name: "serve", summary: "run the ingest API and the delivery workers", run: ServeCommand.run),
        Command(name: "migrate", summary: "create or upgrade the database schema, then exit", run: MigrateCommand.run),
        Command(name: "status", summary: "queue depth, oldest ready, in flight, dead letters, paused apps, rates",
                run: StatusCommand.run),
        Command(name: "send", summary: "queue one message given as JSON (argument or stdin)", run: SendCommand.run),
        Command(name: "message", summary: "show a message and each of its deliveries", run: MessageCommand.run),
        Command(name: "dead", summary: "list, show, requeue or purge dead letters", run: DeadCommand.run),
        Command(name: "pause", summary: "stop sending for an app until it is resumed", run: AppSwitchCommand.pause),
        Command(name: "resume", summary: "resume sending for a paused app", run: AppSwitchCommand.resume),
        Command(name: "tokens", summary: "list, show, add or delete registered tokens", run: TokensCommand.run),
        Command(name: "api-tokens", summary: "create, list or revoke per-tenant API tokens (a role, for some apps)",
                run: APITokensCommand.run),
        Command(name: "token-events", summary: "the feed of tokens deleted or replaced by FCM's answers",
                run: TokenEventsCommand.run),
        Command(name: "outcomes", summary: "the feed of every delivery's final state, in commit order",
                run: OutcomesCommand.run),
        Command(name: "prune", summary: "delete old delivered and dropped deliveries (never dead letters)",
                run: PruneCommand.run),
        Command(name: "backup", summary: "write an online, consistent copy of the database", run: BackupCommand.run),
        Command(name: "fcm-sim", summary: "run the FCM simulator (for tests, demos and benchmarks)",
                run: SimulatorCommand.run),
    ] + ProviderList.all.flatMap(\.commands) + [
        Command(name: "apps", summary: "add, change, show, list or remove apps stored in the database",
                run: AppsCommand.run),
        Command(name: "webhook-secret", summary: "make a Standard Webhooks secret for an outcome webhook",
                run: WebhookSecretCommand.run),
        Command(name: "secrets-key", summary: "make the key that encrypts the secrets stored in the database",
                run: SecretsKeyCommand.run),
        Command(name: "help", summary: "show help for a command", run: { arguments in
            guard let name = arguments.first else {
                print(usage)
                return 0
            }
            guard let command = commands.first(where: { $0.name == name }) else {
                throw Arguments.UsageError(description: "unknown command \"\(name)\"")
            }
            return try command.run(["--help"])
        }),
    ]

    static var usage: String {
        let width = commands.map(\.name.count).max() ?? 0
        let lines = commands.map { "  \($0.name.padding(toLength: width, withPad: " ", startingAt: 0))  \($0.summary)" }
        return """
            herald — a durable outbound push-delivery queue for Firebase Cloud Messaging

            Usage: herald <command> [options]

            Commands:
            \(lines.joined(separator: "\n"))

            Run `herald <command> --help` for a command's options.
            """
    }

    public static func main() -> Never {
        exit(run(Array(CommandLine.arguments.dropFirst())))
    }

    /// Runs one command line; returns the exit code.
    public static func run(_ arguments: [String]) -> Int32 {
        guard let name = arguments.first else {
            printError(usage)
            return 2
        }
        if name == "--help" || name == "-h" {
            print(usage)
            return 0
        }
        guard let command = commands.first(where: { $0.name == name }) else {
            printError("herald: unknown command \"\(name)\"; run `herald --help` for the list")
            return 2
        }
        do {
            return try command.run(Array(arguments.dropFirst()))
        } catch let error as CommandError {
            printError("herald \(name): \(error)")
            return 1
        } catch let error as Arguments.UsageError {
            printError("herald \(name): \(error); run `herald \(name) --help`")
            return 2
        } catch {
            printError("herald \(name): \(error)")
            return 1
        }
    }

    static func printError(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}

/// `herald migrate [--db PATH|URL]`
enum MigrateCommand {
    static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(
            arguments, options: [.init(name: "db", takesValue: true), .init(name: "help", takesValue: false)])
        if parsed.flag("help") {
            print("""
                Usage: herald migrate [--db PATH|URL]

                Creates the database (SQLite: a file of mode 0600) or applies the migrations it lacks, in order,
                each in its own transaction, then exits. Refuses a database whose schema is newer than this herald.
                On PostgreSQL the database must exist; several heralds migrating at once wait for each other.

                Options:
                  --db PATH|URL   SQLite file, or PostgreSQL: postgres://USER@HOST/DB or 'host=… dbname=…'
                                  (default: herald.db, or HERALD_DB)

                Examples:
                  herald migrate --db /var/lib/herald/herald.db
                  herald migrate --db 'postgresql://herald@db.internal/herald?sslmode=verify-full'
                  herald migrate --db 'host=db.internal dbname=herald user=herald sslmode=verify-full'
                """)
            return 0
        }
        guard parsed.positional.isEmpty else {
            throw Arguments.UsageError(description: "unexpected argument \(parsed.positional[0])")
        }
        let location = DatabaseLocation(parsed)
        let (before, applied, latest): (Int, [Int], Int)
        switch location {
        case .sqlite(let path):
            let connection = try Storage.Connection(path: path)
            try connection.requireWAL()
            (before, applied, latest) = (try Migrator.currentVersion(connection), try Migrator.migrate(connection),
                                         Migrator.latestVersion)
        case .postgres(let url):
            let connection = try PGConnection(url: url, applicationName: "herald-migrate")
            (before, applied, latest) = (try PGMigrator.currentVersion(connection), try PGMigrator.migrate(connection),
                                         PGMigrator.latestVersion)
        }
        print(applied.isEmpty
            ? "\(location): schema is at version \(before), nothing to do"
            : "\(location): applied \(applied.map(String.init).joined(separator: ", ")); "
                + "schema is at version \(latest)")
        return 0
    }
}
