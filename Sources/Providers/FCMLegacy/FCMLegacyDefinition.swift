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
