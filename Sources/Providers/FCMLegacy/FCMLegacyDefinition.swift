import Delivery
import FCMLegacySimulator
import FCMSimulator
import Ingest
import ProviderKit

/// FCM's legacy HTTP API in the list (SPEC §12): `"provider": "fcm-legacy"`, a server key.
public struct FCMLegacyDefinition: ProviderDefinition {
    public static let name = "fcm-legacy"
    /// FCM's legacy send URL.
    public static let defaultEndpoint = "https://fcm.googleapis.com/fcm/send"
    public var name: String { Self.name }
    public let keys: Set = ["server_key"]
    public var secretFields: [SecretField] { [SecretField("server_key")] }
    /// A connection per request in flight: 64, as before HTTP v1.
    public let defaultConcurrency = 64

    public var simulatorSide: (any SimulatorSide.Type)? { FCMLegacySimulator.self }

    public init() {}

    public var title: String { "FCM legacy" }

    /// `--fcm-endpoint`, where app `default` sends whichever FCM API it speaks (FCM v1's quick start reads it too),
    /// and `--fcm-key`.
    public var quickStart: QuickStart? {
        QuickStart(app: "default", on: "fcm-key", flags: [
            ServeFlag(
                "fcm-endpoint", default: Self.defaultEndpoint,
                help: "where app `default` sends; for FCM v1 a base URL, https://fcm.googleapis.com"),
            ServeFlag("fcm-key", help: "server key of app `default` (FCM legacy); never logged"),
        ])
    }

    /// A legacy app `default` with `--fcm-key`'s server key, or the config file's legacy `default` given it; and app
    /// `default`, whatever its provider, sends to `--fcm-endpoint` when a flag or the environment sets it.
    public func quickStartSettings(
        _ flags: ServeFlagValues, current: (any AppSettings)?
    ) throws(ConfigurationError) -> (any AppSettings)? {
        let key = try flags.nonEmpty("fcm-key")
        guard var current else {
            guard let key else { return nil }
            return LegacySettings(endpoint: try flags.value("fcm-endpoint") ?? Self.defaultEndpoint, serverKey: key)
        }
        if let key {
            // Legacy FCM no longer delivers: never let a stray HERALD_FCM_KEY turn an app of another provider into it.
            guard var legacy = current as? LegacySettings else {
                throw ConfigurationError("""
                    app "default" is "\(current.provider)" in the config file, and --fcm-key (or HERALD_FCM_KEY) \
                    gives it a legacy server key: remove one of them
                    """)
            }
            legacy.serverKey = key
            current = legacy
        }
        if flags.isGivenOutsideFile("fcm-endpoint") {
            current.endpoint = try flags.value("fcm-endpoint") ?? Self.defaultEndpoint
        }
        return current
    }

    public func settings(_ entry: AppEntry) throws(ConfigurationError) -> any AppSettings {
        LegacySettings(
            endpoint: entry["endpoint"]?.stringValue ?? Self.defaultEndpoint,
            serverKey: entry["server_key"]?.stringValue)
    }
}

/// An FCM legacy app: its send URL and server key (never logged).
public struct LegacySettings: AppSettings {
    public var provider: String { FCMLegacyDefinition.name }
    public var endpoint: String
    public var serverKey: String?

    public init(endpoint: String = FCMLegacyDefinition.defaultEndpoint, serverKey: String? = nil) {
        (self.endpoint, self.serverKey) = (endpoint, serverKey)
    }

    public func load(app: String) throws(ConfigurationError) {
        if serverKey == nil {
            throw ConfigurationError("""
                app "\(app)" has no server key ("server_key" in the config file, or "provider": "fcm-v1" with a \
                "service_account_file")
                """)
        }
    }

    /// The simulator's `/fcm/send` takes any key.
    public mutating func connectSandbox(_ simulator: SandboxSimulator) {
        endpoint = simulator.url + FCMLegacySimulator.sendPath
        serverKey = "sandbox"
    }

    public func provider(app: String, context: ProviderContext) throws -> any Provider {
        guard let serverKey else { throw ConfigurationError("app \"\(app)\" has no server key") }
        return LegacyProvider(
            app: app, endpoint: endpoint, serverKey: serverKey, timeoutMillis: context.requestTimeoutMillis)
    }

    public var addressing: any AddressingRules { LegacyAddressing() }
}
