import Foundation
import OAuth
import Queue
import Support

/// `herald apps add|set|show|list|remove`: apps stored in the database (SPEC §22), which every `serve` on it applies
/// within seconds, without a restart.
enum AppsCommand {
    static let help = """
        Usage: herald apps add|set|show|list|remove [options]

        Apps stored in the database, beside those of serve's config file: every serve on the database applies a
        change within 5 seconds, without a restart, and requests already rendered finish with the credentials
        they were rendered with. The entry is a config-file "apps" entry; its secrets ("service_account" or
        "service_account_file", "key" or "key_file", "vapid_private_key" or "vapid_private_key_file",
        "server_key") are read here and stored encrypted under --secrets-key-file's key: never in clear, never
        shown (key ids and SHA-256 fingerprints only). An app of the config file is read-only here.

          list                                     the stored apps
          show NAME                                one stored app, its secrets described, not shown
          add NAME [--file ENTRY.json]             store a new app (the entry from --file, else stdin)
          set NAME [--file ENTRY.json]             store an app, or replace a stored one (rotate its key)
          remove NAME                              remove a stored app (its queued messages wait for it)

        Options of add and set:
          --file FILE              the entry's JSON (default: stdin)
          --secrets-key-file FILE  the key that seals the secrets (`herald secrets-key --out FILE`), the same as
                                   serve's --secrets-key-file (or HERALD_SECRETS_KEY_FILE)

        Example:
          herald apps set android --file android.json --secrets-key-file /etc/herald/secrets.key
          echo '{"provider":"fcm-v1","service_account_file":"new-key.json"}' | herald apps set android \\
              --secrets-key-file /etc/herald/secrets.key
        """

    static func run(_ arguments: [String]) throws -> Int32 {
        try Subcommands(command: "apps", help: help, subcommands: [
            ("list", list), ("show", show), ("add", { try store($0, replacing: false) }),
            ("set", { try store($0, replacing: true) }), ("remove", remove),
        ]).run(arguments)
    }

    static func list(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, options: Arguments.Option.common)
        if parsed.flag("help") {
            print("""
                Usage: herald apps list [--db PATH|URL] [--json]

                The apps stored in the database (those of serve's config file are not stored there).

                Options:
                  --json   {"apps": [<as herald apps show --json>]}
                """)
            return 0
        }
        try parsed.expectPositional(0, "no arguments")
        let records = try openExistingDatabase(parsed).appDefinitions()
        if parsed.flag("json") {
            Output.json(["apps": .array(records.map(StoredApps.view))])
            return 0
        }
        guard !records.isEmpty else {
            print("no apps stored in the database")
            return 0
        }
        var table = TextTable(["NAME", "PROVIDER", "VERSION", "UPDATED"])
        for record in records {
            table.append([record.name, record.provider, String(record.version), Output.time(record.updatedAt)])
        }
        print(table.render())
        return 0
    }

    static func show(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, options: Arguments.Option.common)
        if parsed.flag("help") {
            print("""
                Usage: herald apps show NAME [--db PATH|URL] [--json]

                One stored app: its entry without its secrets, and of each secret its SHA-256, the id of the key
                that sealed it and, for a service account, its client_email and private_key_id.
                """)
            return 0
        }
        try parsed.expectPositional(1, "an app's name")
        let name = parsed.positional[0]
        guard let record = try openExistingDatabase(parsed).appDefinitions().first(where: { $0.name == name }) else {
            throw CommandError(description: "no app \"\(name)\" is stored in the database")
        }
        let view = StoredApps.view(record)
        if parsed.flag("json") {
            Output.json(view)
        } else {
            for (key, value) in view.objectValue ?? [] {
                let text = value.stringValue ?? value.serialized()
                print("\(key.padding(toLength: 24, withPad: " ", startingAt: 0)) \(text)")
            }
        }
        return 0
    }

    static func store(_ arguments: [String], replacing: Bool) throws -> Int32 {
        let verb = replacing ? "set" : "add"
        let parsed = try Arguments(
            arguments, options: Arguments.Option.common + [.value("file"), .value("secrets-key-file")])
        if parsed.flag("help") {
            print("""
                Usage: herald apps \(verb) NAME [--file ENTRY.json] [--secrets-key-file FILE] [--db PATH|URL] [--json]

                \(replacing ? "Stores app NAME, or replaces the stored one" : "Stores a new app NAME"): \
                the entry is checked first (its files read, its keys parsed, a service account signs) and refused
                with the reason, nothing stored. Every serve on the database applies it within 5 seconds.
                """)
            return 0
        }
        try parsed.expectPositional(1, "an app's name")
        let name = parsed.positional[0]
        let text: Data
        if let file = parsed.value("file") {
            guard let read = FileManager.default.contents(atPath: file) else {
                throw CommandError(description: "cannot read \(file)")
            }
            text = read
        } else {
            text = FileHandle.standardInput.readDataToEndOfFile()
        }
        guard let body = try? JSON.parse(text) else {
            throw CommandError(description: "the entry is not JSON (an \"apps\" entry: {\"provider\": …})")
        }
        let keyFile = parsed.value("secrets-key-file")
            ?? ProcessInfo.processInfo.environment[ServeConfiguration.environmentName("secrets-key-file")]
        let apps = StoredApps(key: try keyFile.map(ServeConfiguration.loadSecretsKey))
        let connection = try openExistingDatabase(parsed)
        let record: AppDefinitionRecord
        do {
            (record, _) = try apps.prepare(name: name, body: body, now: Clock.nowMillis())
        } catch {
            throw CommandError(description: error.description)
        }
        let (stored, created) = try connection.transaction { () -> (AppDefinitionRecord, Bool)? in
            if !replacing, try connection.appDefinitionVersions()[name] != nil { return nil }
            return try connection.putAppDefinition(record)
        } ?? { throw CommandError(description: "app \"\(name)\" is stored already: `herald apps set` replaces it") }()
        if parsed.flag("json") {
            Output.json(StoredApps.view(stored))
        } else {
            print("\(name): \(created ? "added" : "replaced") (\(stored.provider), version \(stored.version))")
        }
        return 0
    }

    static func remove(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, options: Arguments.Option.common)
        if parsed.flag("help") {
            print("""
                Usage: herald apps remove NAME [--db PATH|URL] [--json]

                Removes a stored app: every serve stops claiming for it within 5 seconds; its deliveries in flight
                finish, its queued ones stay queued until an app of that name is back. Exits 1 when none is stored.
                """)
            return 0
        }
        try parsed.expectPositional(1, "an app's name")
        let name = parsed.positional[0]
        let connection = try openExistingDatabase(parsed)
        guard try connection.transaction({ try connection.removeAppDefinition(name, now: Clock.nowMillis()) }) else {
            throw CommandError(description: "no app \"\(name)\" is stored in the database")
        }
        if parsed.flag("json") {
            Output.json(["name": .string(name), "removed": true])
        } else {
            print("\(name): removed")
        }
        return 0
    }
}
