import APNsSimulator
import Delivery
import FCMSimulator
import Foundation
import Ingest
import OAuth
import ProviderKit
import Send
import Support

/// APNs in the list (SPEC §15): `"provider": "apns"`, a `.p8` key or a certificate (SPEC §22).
public struct APNsDefinition: ProviderDefinition {
    public static let name = "apns"
    public var name: String { Self.name }
    public var keys: Set<String> { APNsSettings.keys }
    public var secretFields: [SecretField] { [APNsSettings.keyField] + APNsCertificateSource.fields }
    public var reasonCodes: [String] { APNsCode.allCases.map(\.rawValue) }

    public init() {}

    /// iOS beside Android in the quick start: an APNs app `ios` that the simulator answers.
    public var sandboxApp: (name: String, settings: any AppSettings)? { ("ios", APNsSettings.sandboxed()) }
    public var simulatorSide: (any SimulatorSide.Type)? { APNsSimulator.self }

    public func settings(_ entry: AppEntry) throws(ConfigurationError) -> any AppSettings {
        var settings = try APNsSettings(
            key: entry.secret(APNsSettings.keyField), keyID: entry["key_id"]?.stringValue,
            teamID: entry["team_id"]?.stringValue, topic: entry["topic"]?.stringValue,
            environment: entry["environment"]?.stringValue, certificate: try APNsCertificateSource(entry),
            app: entry.app)
        settings.endpoint = entry["endpoint"]?.stringValue ?? settings.defaultEndpoint
        return settings
    }
}

/// An APNs app's credentials and target (SPEC §15), from its `apps` entry or the `--apns-*` flags.
public struct APNsSettings: SandboxedOverTLS {
    /// The `apps` entry's keys for an APNs app.
    static let keys: Set = [
        "key_file", "key", "key_id", "team_id", "topic", "environment", "certificate_file",
        "certificate_password_file", "certificate_key_file", "certificate", "certificate_password", "certificate_key",
    ]
    /// The `.p8` key: a file, or its PEM inline.
    static let keyField = SecretField("key", file: "key_file")

    public var provider: String { APNsDefinition.name }
    public var endpoint: String
    /// Token-based authentication: the `.p8` key, its id and the team's; nil and empty with a certificate.
    var keySource: SecretSource?
    var keyID: String
    var teamID: String
    /// Certificate-based authentication instead: see `APNsCertificateSource`.
    var certificate: APNsCertificateSource?
    /// The app's bundle id: `apns-topic`.
    var topic: String
    var sandbox: Bool
    /// Read by `load` at start; never logged or stored.
    var key: P256PrivateKey?
    /// Read by `load` at start from `certificate`; the TLS client certificate of the app's connections.
    public private(set) var clientCertificate: TLSClientIdentity?
    /// The CA file the endpoint's certificate is checked against instead of the default ones; set in the sandbox
    /// alone, to the certificate of the simulator it starts.
    public var caFile: String?

    var defaultEndpoint: String { sandbox ? APNsProvider.sandbox : APNsProvider.production }

    /// `--sandbox`'s: no key file; every APNs app of the sandbox signs with one throw-away key that only the
    /// built-in simulator trusts.
    static func sandboxed(topic: String = "com.example.sandbox") -> APNsSettings {
        APNsSettings(keySource: .inline(""), keyID: "SANDBOXKEY", teamID: "SANDBOXTM", topic: topic, sandbox: true)
    }

    private init(keySource: SecretSource, keyID: String, teamID: String, topic: String, sandbox: Bool) {
        (self.keySource, self.keyID, self.teamID, self.topic, self.sandbox) = (keySource, keyID, teamID, topic, sandbox)
        endpoint = ""
    }

    /// Exactly one way to authenticate: `key`, `keyID` and `teamID` (a `.p8` key), or `certificate`.
    /// `key` as given: a path relative to the config file's directory is resolved by the caller.
    public init(
        key: SecretSource?, keyID: String?, teamID: String?, topic: String?, environment: String?,
        certificate: APNsCertificateSource? = nil, app: String
    ) throws(ConfigurationError) {
        func required(_ value: String?, _ key: String) throws(ConfigurationError) -> String {
            guard let value, !value.isEmpty else { throw ConfigurationError("APNs app \"\(app)\" needs \"\(key)\"") }
            return value
        }
        if let certificate {
            guard key == nil, keyID == nil, teamID == nil else {
                throw ConfigurationError("""
                    APNs app "\(app)": give either "certificate_file" (a certificate) or "key_file", "key_id" and \
                    "team_id" (a .p8 signing key), not both
                    """)
            }
            (keySource, self.keyID, self.teamID) = (nil, "", "")
            self.certificate = certificate
        } else {
            guard let key else {
                throw ConfigurationError("""
                    APNs app "\(app)" needs "key_file" (or the key's PEM inline, "key"), "key_id" and "team_id" (a \
                    .p8 signing key), or "certificate_file" (a .p12, or a PEM certificate and its key)
                    """)
            }
            keySource = key
            self.keyID = try required(keyID, "key_id")
            self.teamID = try required(teamID, "team_id")
        }
        self.topic = try required(topic, "topic")
        switch environment ?? "production" {
        case "production": sandbox = false
        case "sandbox", "development": sandbox = true
        case let other:
            throw ConfigurationError("""
                APNs app "\(app)": environment must be "production" or "sandbox", got "\(other)"
                """)
        }
        guard self.certificate != nil
            || self.keyID.utf8.count == 10 && self.keyID.utf8.allSatisfy({ $0 < 0x80 && $0 > 0x20 })
        else {
            throw ConfigurationError("""
                APNs app "\(app)": key_id must be the key's 10-character Key ID from Apple's developer site
                """)
        }
        endpoint = sandbox ? APNsProvider.sandbox : APNsProvider.production
    }

    /// Reads the `.p8` file and checks that it is a P-256 private key, or reads the certificate and its key; says
    /// exactly what is wrong otherwise.
    public mutating func load(app: String) throws(ConfigurationError) {
        if let certificate {
            clientCertificate = try certificate.load(app: app, topic: topic, now: Clock.nowMillis())
            return
        }
        guard let keySource else { throw ConfigurationError("APNs app \"\(app)\" needs a key or a certificate") }
        key = try AppEntry.readP256Key(
            keySource, app: app, provider: "APNs",
            expected: "an APNs signing key (a .p8 file with a P-256 private key)")
    }

    /// Every APNs app of the sandbox signs with one throw-away key that only the simulator trusts.
    public mutating func prepareSandbox(_ sandbox: SandboxSetup) throws {
        let key = try sandbox.shared(APNsDefinition.name) { try P256PrivateKey.generate() }
        let sandboxed = Self.sandboxed(topic: topic)
        sandbox.simulate(APNsSimulator(account: APNsSimulator.Account(
            publicKeyPEM: key.publicKey.pem(), keyID: sandboxed.keyID, teamID: sandboxed.teamID)))
        self = sandboxed
        self.key = key
    }

    public func provider(app: String, context: ProviderContext) throws -> any Provider {
        if let certificate = clientCertificate {
            Log.info("apns app", [
                "app": .string(app), "topic": .string(topic),
                "certificate": .string(certificate.subjectCommonName ?? "-"),
                "certificate_sha256": .string(certificate.sha256Fingerprint),
                "certificate_expires": .string(
                    Date(timeIntervalSince1970: Double(certificate.notAfterMillis) / 1000).ISO8601Format()),
                "endpoint": .string(endpoint),
            ])
            return APNsProvider(
                app: app, certificate: certificate, topic: topic, endpoint: endpoint,
                timeoutMillis: context.requestTimeoutMillis, caFile: caFile)
        }
        guard let key else { throw ConfigurationError("APNs app \"\(app)\": its key was not loaded") }
        Log.info("apns app", [
            "app": .string(app), "topic": .string(topic), "key_id": .string(keyID), "team_id": .string(teamID),
            "endpoint": .string(endpoint),
        ])
        return APNsProvider(
            app: app, key: key, keyID: keyID, teamID: teamID, topic: topic, endpoint: endpoint,
            timeoutMillis: context.requestTimeoutMillis, caFile: caFile)
    }

    public var addressing: any AddressingRules { APNsAddressing() }
}
