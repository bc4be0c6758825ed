import Delivery
import FCMSimulator
import Ingest
import OAuth
import ProviderKit
import Support
import WebPushCrypto
import WebPushSimulator

/// Web Push in the list (SPEC §16): `"provider": "webpush"`, a VAPID key.
public struct WebPushDefinition: ProviderDefinition {
    public static let name = "webpush"
    public var name: String { Self.name }
    public var keys: Set<String> { WebPushSettings.keys }
    public var nonStringKeys: Set<String> { WebPushSettings.nonStringKeys }
    public var secretFields: [SecretField] { [WebPushSettings.keyField] }

    public init() {}

    /// Browsers too: a Web Push app `web` whose every push the simulator's push service answers (and decrypts).
    public var sandboxApp: (name: String, settings: any AppSettings)? { ("web", WebPushSettings.sandboxed()) }
    public var simulatorSide: (any SimulatorSide.Type)? { WebPushSimulator.self }

    public func settings(_ entry: AppEntry) throws(ConfigurationError) -> any AppSettings {
        try WebPushSettings(entry)
    }
}

/// A Web Push app's VAPID identity (SPEC §16), the endpoints it sends to and its bounds (SPEC §19), from its `apps`
/// entry.
public struct WebPushSettings: SandboxedOverTLS {
    /// The `apps` entry's keys for a Web Push app.
    static let keys: Set = [
        "vapid_private_key_file", "vapid_private_key", "vapid_subject", "origin_concurrency", "max_connections",
        "allow_private_endpoints", "trusted_push_hosts",
    ]
    /// The keys whose values are not strings.
    static let nonStringKeys: Set = [
        "origin_concurrency", "max_connections", "allow_private_endpoints", "trusted_push_hosts",
    ]
    /// The VAPID key: a file, or its PEM inline.
    static let keyField = SecretField("vapid_private_key", file: "vapid_private_key_file")
    public var provider: String { WebPushDefinition.name }
    /// When set, where every push goes instead of its subscription's origin (a proxy, a stand-in).
    public var endpoint = ""
    var keySource: SecretSource
    /// `mailto:…` or `https://…`: whom a push service contacts about this sender.
    var subject: String
    /// Read by `load` at start; never logged or stored.
    var key: P256PrivateKey?
    /// The sandbox's: the built-in simulator's certificate, which its push service is checked against.
    public var caFile: String?
    /// `origin_concurrency`: of the app's requests in flight, how many may go to one push-service origin.
    public var originConcurrency = ProviderContext.defaultOriginConcurrency
    /// `max_connections`: connections to all push services together at most.
    var maxConnections = WebPushProvider.defaultConnectionLimit
    /// `allow_private_endpoints` and `trusted_push_hosts`: which endpoints its subscriptions may have.
    var endpoints = EndpointPolicy()

    /// `--sandbox`'s: no key file (`prepareSandbox` makes a throw-away key), and the simulator on loopback to send to.
    static func sandboxed() -> WebPushSettings {
        var settings = WebPushSettings(keySource: .inline(""), subject: "mailto:sandbox@herald.invalid")
        settings.endpoints = EndpointPolicy(allowsPrivate: true)
        return settings
    }

    private init(keySource: SecretSource, subject: String) {
        (self.keySource, self.subject) = (keySource, subject)
    }

    /// From the `apps` entry `entry`.
    init(_ entry: AppEntry) throws(ConfigurationError) {
        let (item, app) = (entry.json, entry.app)
        try self.init(
            key: entry.secret(Self.keyField), subject: item["vapid_subject"]?.stringValue, app: app)
        endpoint = item["endpoint"]?.stringValue ?? ""
        endpoints = try Self.endpoints(item, app: app)
        originConcurrency = try Self.integer(
            item, "origin_concurrency", app: app, meaning: "requests in flight to one push service at most",
            default: originConcurrency)
        maxConnections = try Self.integer(
            item, "max_connections", app: app, meaning: "connections to all push services together",
            default: maxConnections)
    }

    /// `key`'s value, an integer in 1...10000, or `default` when the entry has none.
    private static func integer(
        _ item: JSON, _ key: String, app: String, meaning: String, default: Int
    ) throws(ConfigurationError) -> Int {
        guard let json = item[key] else { return `default` }
        guard let value = json.int64Value, (1...10_000).contains(value) else {
            throw ConfigurationError("""
                Web Push app "\(app)": \(key) must be an integer in 1...10000 (\(meaning); default \(`default`))
                """)
        }
        return Int(value)
    }

    private init(key: SecretSource?, subject: String?, app: String) throws(ConfigurationError) {
        guard let key else {
            throw ConfigurationError("""
                Web Push app "\(app)" needs "vapid_private_key_file" (make one with `herald webpush-keys --out FILE`)
                """)
        }
        guard let subject, subject.hasPrefix("mailto:") || subject.hasPrefix("https://") else {
            throw ConfigurationError("""
                Web Push app "\(app)" needs "vapid_subject": "mailto:you@example.com" or an https URL, whom push \
                services contact about your pushes
                """)
        }
        keySource = key
        self.subject = subject
    }

    /// `allow_private_endpoints` (a boolean) and `trusted_push_hosts` (host names, stored lowercase).
    private static func endpoints(_ item: JSON, app: String) throws(ConfigurationError) -> EndpointPolicy {
        var allowsPrivate = false
        if let value = item["allow_private_endpoints"] {
            guard let flag = value.boolValue else {
                throw ConfigurationError("""
                    Web Push app "\(app)": "allow_private_endpoints" must be true or false
                    """)
            }
            allowsPrivate = flag
        }
        guard let value = item["trusted_push_hosts"] else { return EndpointPolicy(allowsPrivate: allowsPrivate) }
        let hosts = value.arrayValue?.compactMap(\.stringValue).map { $0.lowercased() } ?? []
        let isHostName = { (host: String) in
            !host.isEmpty && !host.hasPrefix(".") && !host.hasSuffix(".")
                && host.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }
        }
        guard !hosts.isEmpty, hosts.count == value.arrayValue?.count, hosts.allSatisfy(isHostName) else {
            throw ConfigurationError("""
                Web Push app "\(app)": "trusted_push_hosts" must be a non-empty list of host names, such as \
                ["fcm.googleapis.com", "push.services.mozilla.com", "push.apple.com", "notify.windows.com"]
                """)
        }
        return EndpointPolicy(allowsPrivate: allowsPrivate, trustedHosts: hosts)
    }

    /// Reads the PEM file and checks that it is a P-256 private key, saying exactly what is wrong otherwise.
    public mutating func load(app: String) throws(ConfigurationError) {
        key = try AppEntry.readP256Key(
            keySource, app: app, provider: "Web Push",
            expected: "a VAPID key (a PEM P-256 private key, as `herald webpush-keys` writes)")
    }

    /// A throw-away VAPID key: the simulator's push service checks the JWT against the key in the header.
    public mutating func prepareSandbox(_ sandbox: SandboxSetup) throws {
        key = try P256PrivateKey.generate()
    }

    public func provider(app: String, context: ProviderContext) throws -> any Provider {
        guard let key else { throw ConfigurationError("Web Push app \"\(app)\": its key was not loaded") }
        let vapid = try VAPID(key: key, subject: subject)
        Log.info("webpush app", [
            "app": .string(app), "subject": .string(subject), "max_connections": .int(Int64(maxConnections)),
            "application_server_key": .string(vapid.publicKeyText),
            "endpoint": .string(endpoint.isEmpty ? "each subscription's" : endpoint),
        ])
        return WebPushProvider(
            app: app, vapid: vapid, redirect: endpoint.isEmpty ? nil : endpoint,
            timeoutMillis: context.requestTimeoutMillis, caFile: caFile,
            allowsPrivateEndpoints: endpoints.addresses.allowsPrivate, connectionLimit: maxConnections)
    }

    public var addressing: any AddressingRules { WebPushAddressing(endpoints: endpoints) }
}
