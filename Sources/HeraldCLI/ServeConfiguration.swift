import Delivery
import Foundation
import HTTP
import OAuth
import ProviderKit
import ProviderList
import Queue
import Send
import Storage
import Support

/// One app: what every app has, and its provider's own settings. Secrets stay in memory only.
struct AppConfiguration: Sendable {
    var name: String
    var concurrency: Int
    /// Whether a flag, the environment or the config file set `concurrency`; if not, it follows the provider
    /// (`ProviderDefinition.defaultConcurrency`) once the provider is settled.
    var concurrencyGiven: Bool
    /// Sends per second at most; nil: no limit.
    var maxRate: Double?
    /// Its provider's settings (`ProviderList` names every provider), checked and loaded by `ServeConfiguration.check`.
    var settings: any AppSettings

    /// Its `"provider"`: `fcm-v1`.
    var provider: String { settings.provider }

    init(name: String, settings: any AppSettings, concurrency: Int? = nil, maxRate: Double? = nil) {
        self.name = name
        self.settings = settings
        self.concurrency = concurrency ?? Self.defaultConcurrency(settings.provider)
        concurrencyGiven = concurrency != nil
        self.maxRate = maxRate
    }

    /// Requests in flight by default, the provider's. v1: enough to carry FCM's default quota (10,000/s) at a 100 ms
    /// round trip, over ⌈1000 ÷ 100⌉ + 1 HTTP/2 connections. Legacy: a connection per request, as before.
    static func defaultConcurrency(_ provider: String) -> Int {
        ProviderList.named(provider)?.defaultConcurrency ?? 1000
    }
}

/// Everything `herald serve` runs with, resolved from flag > environment > config file > default.
struct ServeConfiguration: Sendable {
    typealias Invalid = ConfigurationError

    var database: DatabaseLocation
    var listen: ListenAddress
    var apiToken: String?
    /// A second token for the console and `GET /v1/admin/…`: it can look but not act.
    var consoleReadOnlyToken: String? = nil
    var durability: Durability
    var sandbox: Bool
    var logLevel: Log.Level
    var maxConnections: Int
    /// How long after acceptance a `time_to_live: 0` message may still be sent.
    var ttlZeroWindowMillis: Int64
    /// How long the token-event and outcome feeds keep their entries.
    var tokenEventRetentionMillis: Int64
    /// How long a claim holds a delivery unless renewed.
    var leaseMillis: Int64
    /// When a quiet HTTP/2 connection gets a PING, and how long its ACK may take.
    var liveness: HTTP2Liveness
    /// How long a request to a provider may wait for its answer (from its submission), every app's.
    var requestTimeoutMillis = 30_000
    var apps: [AppConfiguration]
    /// The outcome webhooks (`outcome_webhook`, SPEC §23), each app's own and the top-level one.
    var outcomeWebhooks: [OutcomeWebhook] = []
    /// The key of the secrets stored in the database (`--secrets-key-file`); nil: storing a secret is refused.
    var secretsKey: SecretsKey? = nil

    /// The built-in simulator speaks HTTP/1.1 (a connection per request in flight), so the sandbox's v1 app keeps
    /// the legacy default rather than v1's 1000 unless told otherwise.
    static let sandboxConcurrency = 64
    static let maxRateRange = 0.01...1_000_000.0

    /// The settings of `serve`: flag name, default, and the help line. The environment variable is
    /// `HERALD_` + the name in capitals with `_`; the config file key is the name with `_`. The providers'
    /// quick-start flags (`ProviderCommandLine.quickStart`) come between `general` and `running`, in the list's order.
    static let settings = general + ProviderList.all.flatMap { $0.quickStart?.flags ?? [] }.map {
        (name: $0.name, value: $0.defaultValue, help: $0.help)
    } + running

    private static let general: [(name: String, value: String?, help: String)] = [
        ("config", nil, "JSON config file (keys as these flags, with _; plus \"apps\")"),
        ("db", "herald.db", "SQLite file, or PostgreSQL (postgres://… or 'host=… dbname=…') shared by several serve"),
        ("listen", "127.0.0.1:8600", "ingest API address, HOST:PORT or unix:/path.sock"),
        ("api-token", nil, "admin token: `Authorization: Bearer TOKEN` (tenants: herald api-tokens); else loopback"),
        ("console-read-only-token", nil, "a token for /console and GET /v1/admin/… that can look, not act"),
    ]

    private static let running: [(name: String, value: String?, help: String)] = [
        ("secrets-key-file", nil, "key of the secrets stored in the database (`herald secrets-key --out FILE`)"),
        ("concurrency", nil, "concurrent requests per app (default 1000 for FCM v1, APNs; 64 for legacy, HMS)"),
        ("max-rate", nil, "sends per second at most for app `default`, to stay under a quota (default: no limit)"),
        ("durability", "full", "SQLite: full fsyncs before acknowledging; normal survives a crash, not a power cut"),
        ("sandbox", nil, "send to a built-in simulator on loopback (FCM v1, HMS; APNs, Web Push over HTTP/2 + TLS)"),
        ("log-level", "info", "debug, info, warn or error"),
        ("max-connections", "4096", "open ingest connections at most"),
        ("ttl-zero-window", "5s", "a time_to_live 0 message not sent this long after acceptance is dead/Expired"),
        ("token-event-retention", "30d", "how long the token-event and outcome feeds keep entries (trimmed hourly)"),
        ("lease", "2m", "a claimed delivery's lease; renewed while held, taken back when a process stops renewing"),
        ("h2-ping-after", "3s", "HTTP/2: a PING when a connection with requests on it has received nothing this long"),
        ("h2-ping-timeout", "5s", "HTTP/2: a PING unanswered this long closes its connection; requests are retried"),
        ("request-timeout", "30s", "a request to a provider not answered this long fails as timeout and is retried"),
    ]

    static var options: [Arguments.Option] {
        settings.map { Arguments.Option(name: $0.name, takesValue: $0.name != "sandbox") }
    }

    static func environmentName(_ name: String) -> String {
        "HERALD_" + name.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    static func resolve(_ arguments: Arguments, environment: [String: String]) throws -> ServeConfiguration {
        let configPath = arguments.value("config") ?? environment[environmentName("config")]
        var file: [(key: String, value: JSON)] = []
        if let configPath {
            let bytes: Data
            do {
                bytes = try Data(contentsOf: URL(fileURLWithPath: configPath))
            } catch {
                throw Invalid(description: "cannot read config file \(configPath): \(error.localizedDescription)")
            }
            guard let object = (try? JSON.parse(bytes))?.objectValue else {
                throw Invalid(description: "config file \(configPath) is not a JSON object")
            }
            let known = Set(
                settings.map { $0.name.replacingOccurrences(of: "-", with: "_") } + ["apps", outcomeWebhookKey])
            if let unknown = object.first(where: { !known.contains($0.key) }) {
                throw Invalid(description: "config file \(configPath): unknown key \"\(unknown.key)\"")
            }
            file = object
        }

        /// The text of a setting from the flag, environment or file that sets it, or nil when none does.
        func given(_ name: String) throws(Invalid) -> String? {
            if name == "sandbox" {
                if arguments.flag(name) { return "true" }
            } else if let value = arguments.value(name) {
                return value
            }
            if let value = environment[environmentName(name)] { return value }
            let key = name.replacingOccurrences(of: "-", with: "_")
            if let value = file.first(where: { $0.key == key })?.value {
                switch value {
                case .string(let string): return string
                case .number(let number): return number
                case .bool(let bool): return bool ? "true" : "false"
                case .null: return nil
                default: throw Invalid(description: "config key \"\(key)\" must be a string, number or boolean")
                }
            }
            return nil
        }

        /// The winning text of a setting, or its default.
        func raw(_ name: String) throws -> String? {
            try given(name) ?? settings.first(where: { $0.name == name })?.value
        }

        func integer(_ name: String, in range: ClosedRange<Int>) throws -> Int {
            let text = try raw(name) ?? ""
            guard let value = Int(text), range.contains(value) else {
                throw Invalid(
                    description: "--\(name) must be an integer in \(range.lowerBound)...\(range.upperBound), "
                        + "got \"\(text)\"")
            }
            return value
        }

        let listenText = try raw("listen") ?? ""
        let listen: ListenAddress
        do {
            listen = try ListenAddress.parse(listenText)
        } catch {
            throw Invalid(description: "--listen \(listenText): \(error)")
        }
        let durabilityText = try raw("durability") ?? ""
        guard let durability = Durability(rawValue: durabilityText) else {
            throw Invalid(description: "--durability must be full or normal, got \"\(durabilityText)\"")
        }
        let levelText = try raw("log-level") ?? ""
        guard let logLevel = Log.Level(name: levelText) else {
            throw Invalid(description: "--log-level must be debug, info, warn or error, got \"\(levelText)\"")
        }
        let sandboxText = try raw("sandbox") ?? "false"
        guard let sandbox = ["true": true, "1": true, "false": false, "0": false, "": false][sandboxText] else {
            throw Invalid(description: "sandbox must be true or false, got \"\(sandboxText)\"")
        }
        func duration(_ name: String, in range: ClosedRange<Int64>) throws -> Int64 {
            let text = try raw(name) ?? ""
            guard let millis = DurationText.millis(text), range.contains(millis) else {
                throw Invalid(description: """
                    --\(name) must be a duration from \(DurationText.format(range.lowerBound)) to \
                    \(DurationText.format(range.upperBound)), written like 5s, 15m, 12h or 30d; got "\(text)"
                    """)
            }
            return millis
        }
        let ttlZeroWindow = try duration("ttl-zero-window", in: 1_000...600_000)
        let tokenEventRetention = try duration("token-event-retention", in: 3_600_000...3650 * 86_400_000)
        let lease = try duration("lease", in: 2_000...3_600_000)
        let liveness = HTTP2Liveness(
            pingAfterMillis: Int(try duration("h2-ping-after", in: 1_000...600_000)),
            pingTimeoutMillis: Int(try duration("h2-ping-timeout", in: 1_000...600_000)))
        let apiToken = try raw("api-token").flatMap { $0.isEmpty ? nil : $0 }
        let concurrency = try given("concurrency") == nil ? nil : try integer("concurrency", in: 1...10_000)
        var maxRate: Double?
        if let text = try given("max-rate") {
            guard let value = Double(text), value.isFinite, (Self.maxRateRange).contains(value) else {
                throw Invalid(
                    description: "--max-rate must be a number of sends per second in 0.01...1000000, got \"\(text)\"")
            }
            maxRate = value
        }

        let configDirectory = configPath.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path }
        var apps = try parseApps(
            file.first(where: { $0.key == "apps" })?.value, concurrency: concurrency, directory: configDirectory)
        /// Whether a flag or the environment sets `name`, rather than the config file (whose paths are relative to it).
        func outsideFile(_ name: String) -> Bool {
            arguments.value(name) != nil || environment[environmentName(name)] != nil
        }
        let flags = ServeFlagValues(
            given: { name throws(Invalid) in
                guard let text = try given(name) else { return nil }
                guard !outsideFile(name), quickStartFiles.contains(name), let configDirectory else { return text }
                return AppEntry.resolve(text, against: configDirectory)
            },
            outsideFile: outsideFile)
        try applyQuickStart(flags, to: &apps, concurrency: concurrency)
        // Each provider's own app in the quick start (Android, iOS, browsers), answered by the simulator.
        for (name, settings) in ProviderList.all.compactMap(\.sandboxApp)
        where sandbox && !apps.contains(where: { $0.name == name }) {
            apps.append(
                AppConfiguration(name: name, settings: settings, concurrency: concurrency ?? Self.sandboxConcurrency))
        }
        if let maxRate {
            guard let index = apps.firstIndex(where: { $0.name == "default" }) else {
                throw Invalid(description: "--max-rate applies to app \"default\", which is not configured")
            }
            apps[index].maxRate = maxRate
        }
        // A provider's flags may have turned a config file's app into one of theirs (FCM v1's --fcm-service-account).
        for index in apps.indices where !apps[index].concurrencyGiven {
            apps[index].concurrency = AppConfiguration.defaultConcurrency(apps[index].provider)
        }

        let database = DatabaseLocation(try raw("db") ?? "herald.db")
        if case .postgres = database, try given("durability") != nil {
            throw Invalid(description: """
                --durability is SQLite's; on PostgreSQL a commit is as durable as the server's synchronous_commit \
                (set it on the server, or per connection with options=-csynchronous_commit=... in the URL)
                """)
        }
        var configuration = ServeConfiguration(
            database: database, listen: listen, apiToken: apiToken, durability: durability,
            sandbox: sandbox, logLevel: logLevel, maxConnections: try integer("max-connections", in: 1...1_000_000),
            ttlZeroWindowMillis: ttlZeroWindow, tokenEventRetentionMillis: tokenEventRetention,
            leaseMillis: lease, liveness: liveness, apps: apps)
        configuration.consoleReadOnlyToken = try raw("console-read-only-token").flatMap { $0.isEmpty ? nil : $0 }
        configuration.requestTimeoutMillis = Int(try duration("request-timeout", in: 1_000...3_600_000))
        configuration.outcomeWebhooks = try outcomeWebhooks(file: file, directory: configDirectory)
        if let path = try given("secrets-key-file").flatMap({ $0.isEmpty ? nil : $0 }) {
            let inFile = !outsideFile("secrets-key-file")
            configuration.secretsKey = try loadSecretsKey(
                inFile ? configDirectory.map { AppEntry.resolve(path, against: $0) } ?? path : path)
        }
        try configuration.check()
        return configuration
    }

    /// Start-up refusals: no way to deliver, credentials that cannot work, or an open listener without a token.
    /// Reads each v1 app's service-account file and settles its project and token endpoint.
    mutating func check() throws {
        if !sandbox {
            if apps.isEmpty {
                // Apps may come from the database (SPEC §22), now or later.
                Log.warn("""
                    no app configured: only apps stored in the database will send (herald apps add, PUT \
                    /v1/admin/apps/NAME); or give --fcm-service-account FILE, --fcm-key, an "apps" list in --config, \
                    or run with --sandbox
                    """)
            }
            for index in apps.indices {
                let name = apps[index].name
                try apps[index].settings.load(app: name)
            }
        }
        for app in apps { try app.settings.check(app: app.name) }
        if let consoleReadOnlyToken {
            // Without an API token everyone on loopback may act, so a token that only looks would mean nothing.
            guard let apiToken else {
                throw Invalid(description: "--console-read-only-token needs --api-token (without one, anyone may act)")
            }
            if consoleReadOnlyToken == apiToken {
                throw Invalid(description: "--console-read-only-token must differ from --api-token")
            }
        }
        if !listen.isLoopback && apiToken == nil {
            throw Invalid(description: """
                refusing to listen on \(listen) without --api-token: anyone who can reach it could send pushes
                """)
        }
    }

    private static func parseApps(_ value: JSON?, concurrency: Int?, directory: String?) throws -> [AppConfiguration] {
        guard let value else { return [] }
        guard let list = value.arrayValue else { throw Invalid(description: "config key \"apps\" must be a list") }
        var apps: [AppConfiguration] = []
        for (index, item) in list.enumerated() {
            let app = try parseApp(item, label: "apps[\(index)]", concurrency: concurrency, directory: directory)
            guard !apps.contains(where: { $0.name == app.name }) else {
                throw Invalid(description: "apps: \"\(app.name)\" appears twice")
            }
            apps.append(app)
        }
        return apps
    }

    /// One `apps` entry (of the config file, or stored in the database: SPEC §22) as an app, checked as far as can
    /// be without reading a file; `label` names it in errors, "apps[2]".
    static func parseApp(
        _ item: JSON, label: String, concurrency: Int?, directory: String?
    ) throws -> AppConfiguration {
        guard let object = item.objectValue else {
            throw Invalid(description: "\(label) must be an object")
        }
        let known = ProviderList.all.reduce(into: AppEntry.commonKeys.union([outcomeWebhookKey])) {
            $0.formUnion($1.keys)
        }
        if let unknown = object.first(where: { !known.contains($0.key) }) {
            throw Invalid(description: "\(label): unknown key \"\(unknown.key)\"")
        }
        guard let name = item["name"]?.stringValue, !name.isEmpty else {
            throw Invalid(description: "\(label) needs a \"name\"")
        }
        let notStrings = ProviderList.all.reduce(into: Set(["concurrency", "max_rate", outcomeWebhookKey])) {
            $0.formUnion($1.nonStringKeys)
        }
        for (key, value) in object where value.stringValue == nil && !notStrings.contains(key) {
            throw Invalid(description: "\(label) \"\(name)\": \"\(key)\" must be a string")
        }
        let names = ProviderList.all.map { "\"\($0.name)\"" }
        let choices = names.dropLast().joined(separator: ", ") + " or " + (names.last ?? "")
        let definition: any ProviderDefinition
        if let named = item["provider"]?.stringValue {
            guard let found = ProviderList.named(named) else {
                throw Invalid(description: """
                    \(label) "\(name)": provider "\(named)" is not supported: use \(choices)
                    """)
            }
            definition = found
        } else {
            guard let inferred = ProviderList.inferred(from: object.map(\.key)) else {
                throw Invalid(description: "\(label) \"\(name)\" needs a \"provider\": \(choices)")
            }
            definition = inferred
        }
        let own = definition.keys.union(AppEntry.commonKeys)
        if let misplaced = object.first(where: { !own.contains($0.key) }),
           let owner = ProviderList.all.first(where: { $0.keys.contains(misplaced.key) })
        {
            throw Invalid(description: """
                \(label) "\(name)": "\(misplaced.key)" does not apply to provider "\(definition.name)" \
                (it is \(owner.name)'s)
                """)
        }
        var appConcurrency = concurrency
        if let number = item["concurrency"] {
            guard let value = number.int64Value, (1...10_000).contains(value) else {
                throw Invalid(
                    description: "\(label) \"\(name)\": concurrency must be an integer in 1...10000")
            }
            appConcurrency = Int(value)
        }
        var appMaxRate: Double?
        if let number = item["max_rate"] {
            guard case .number(let text) = number, let value = Double(text), maxRateRange.contains(value) else {
                throw Invalid(description: """
                    \(label) "\(name)": max_rate must be a number of sends per second in 0.01...1000000
                    """)
            }
            appMaxRate = value
        }
        let settings = try definition.settings(AppEntry(json: item, app: name, directory: directory))
        for field in definition.secretFields {
            if let fileKey = field.fileKey, item[fileKey] != nil, item[field.key] != nil {
                throw Invalid(description: "\(label) \"\(name)\": give \"\(field.key)\" or \"\(fileKey)\", not both")
            }
        }
        return AppConfiguration(name: name, settings: settings, concurrency: appConcurrency, maxRate: appMaxRate)
    }
}
