import Foundation
import HTTP
import Storage
import Support

/// One app: where its pushes go and with which credentials. Secrets stay in memory only.
struct AppConfiguration: Sendable, Equatable {
    var name: String
    var provider: String
    var endpoint: String
    var serverKey: String?
    var concurrency: Int
}

/// Everything `herald serve` runs with, resolved from flag > environment > config file > default.
struct ServeConfiguration: Sendable {
    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    var databasePath: String
    var listen: ListenAddress
    var apiToken: String?
    var durability: Durability
    var sandbox: Bool
    var logLevel: Log.Level
    var maxConnections: Int
    var apps: [AppConfiguration]

    static let defaultEndpoint = "https://fcm.googleapis.com/fcm/send"

    /// The settings of `serve`: flag name, default, and the help line. The environment variable is
    /// `HERALD_` + the name in capitals with `_`; the config file key is the name with `_`.
    static let settings: [(name: String, value: String?, help: String)] = [
        ("config", nil, "JSON config file (keys as these flags, with _; plus \"apps\")"),
        ("db", "herald.db", "SQLite database; created and migrated on start"),
        ("listen", "127.0.0.1:8600", "ingest API address, HOST:PORT or unix:/path.sock"),
        ("api-token", nil, "require `Authorization: Bearer TOKEN` (needed off loopback)"),
        ("fcm-endpoint", defaultEndpoint, "where app `default` sends"),
        ("fcm-key", nil, "server key of app `default`; never logged"),
        ("concurrency", "64", "concurrent FCM requests per app"),
        ("durability", "full", "full: fsync before acknowledging; normal: survives a crash, not a power cut"),
        ("sandbox", nil, "send to a built-in FCM simulator on loopback; no credentials needed"),
        ("log-level", "info", "debug, info, warn or error"),
        ("max-connections", "4096", "open ingest connections at most"),
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
            let known = Set(settings.map { $0.name.replacingOccurrences(of: "-", with: "_") } + ["apps"])
            if let unknown = object.first(where: { !known.contains($0.key) }) {
                throw Invalid(description: "config file \(configPath): unknown key \"\(unknown.key)\"")
            }
            file = object
        }

        /// The winning text of a setting, or nil when none of the sources sets it.
        func raw(_ name: String) throws -> String? {
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
            return settings.first(where: { $0.name == name })?.value
        }

        func integer(_ name: String, in range: ClosedRange<Int>) throws -> Int {
            let text = try raw(name) ?? ""
            guard let value = Int(text), range.contains(value) else {
                throw Invalid(description: "--\(name) must be an integer in \(range.lowerBound)...\(range.upperBound), got \"\(text)\"")
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
        let apiToken = try raw("api-token").flatMap { $0.isEmpty ? nil : $0 }
        let concurrency = try integer("concurrency", in: 1...10_000)

        var apps = try parseApps(file.first(where: { $0.key == "apps" })?.value, concurrency: concurrency)
        let fcmKey = try raw("fcm-key").flatMap { $0.isEmpty ? nil : $0 }
        let endpoint = try raw("fcm-endpoint") ?? defaultEndpoint
        if let index = apps.firstIndex(where: { $0.name == "default" }) {
            if let fcmKey { apps[index].serverKey = fcmKey }
            if arguments.value("fcm-endpoint") != nil || environment[environmentName("fcm-endpoint")] != nil {
                apps[index].endpoint = endpoint
            }
        } else if fcmKey != nil || sandbox {
            apps.insert(
                AppConfiguration(
                    name: "default", provider: "fcm-legacy", endpoint: endpoint, serverKey: fcmKey,
                    concurrency: concurrency), at: 0)
        }

        let configuration = ServeConfiguration(
            databasePath: try raw("db") ?? "herald.db", listen: listen, apiToken: apiToken, durability: durability,
            sandbox: sandbox, logLevel: logLevel, maxConnections: try integer("max-connections", in: 1...1_000_000),
            apps: apps)
        try configuration.check()
        return configuration
    }

    /// Start-up refusals: no way to deliver, or an open listener without a token.
    func check() throws {
        if !sandbox {
            if apps.isEmpty {
                throw Invalid(description: """
                    no FCM credentials: give --fcm-key (or HERALD_FCM_KEY), an "apps" list in --config, \
                    or run with --sandbox to send to the built-in simulator
                    """)
            }
            if let app = apps.first(where: { $0.serverKey == nil }) {
                throw Invalid(description: "app \"\(app.name)\" has no server key (\"server_key\" in the config file)")
            }
        }
        if !listen.isLoopback && apiToken == nil {
            throw Invalid(description: """
                refusing to listen on \(listen) without --api-token: anyone who can reach it could send pushes
                """)
        }
    }

    private static func parseApps(_ value: JSON?, concurrency: Int) throws -> [AppConfiguration] {
        guard let value else { return [] }
        guard let list = value.arrayValue else { throw Invalid(description: "config key \"apps\" must be a list") }
        var apps: [AppConfiguration] = []
        for (index, item) in list.enumerated() {
            guard let object = item.objectValue else {
                throw Invalid(description: "apps[\(index)] must be an object")
            }
            let known: Set = ["name", "provider", "server_key", "endpoint", "concurrency"]
            if let unknown = object.first(where: { !known.contains($0.key) }) {
                throw Invalid(description: "apps[\(index)]: unknown key \"\(unknown.key)\"")
            }
            guard let name = item["name"]?.stringValue, !name.isEmpty else {
                throw Invalid(description: "apps[\(index)] needs a \"name\"")
            }
            guard !apps.contains(where: { $0.name == name }) else {
                throw Invalid(description: "apps: \"\(name)\" appears twice")
            }
            let provider = item["provider"]?.stringValue ?? "fcm-legacy"
            guard provider == "fcm-legacy" else {
                throw Invalid(description: "apps[\(index)] \"\(name)\": provider \"\(provider)\" is not supported")
            }
            var appConcurrency = concurrency
            if let number = item["concurrency"] {
                guard let value = number.int64Value, (1...10_000).contains(value) else {
                    throw Invalid(description: "apps[\(index)] \"\(name)\": concurrency must be an integer in 1...10000")
                }
                appConcurrency = Int(value)
            }
            apps.append(
                AppConfiguration(
                    name: name, provider: provider, endpoint: item["endpoint"]?.stringValue ?? defaultEndpoint,
                    serverKey: item["server_key"]?.stringValue, concurrency: appConcurrency))
        }
        return apps
    }
}
