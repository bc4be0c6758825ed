import Delivery
import FCMSimulator
import Foundation
import HMSSimulator
import Ingest
import OAuth
import ProviderKit
import Support

/// HMS Push Kit in the list (SPEC §21): `"provider": "hms"`, an app id and an OAuth client's secret.
public struct HMSDefinition: ProviderDefinition {
    public static let name = "hms"
    public var name: String { Self.name }
    /// `token_uri` is FCM v1's key too: the OAuth token URL, for a proxy or a stand-in.
    public let keys: Set = ["app_id", "client_id", "client_secret", "client_secret_file", "token_uri"]
    public var secretFields: [SecretField] { [HMSSettings.secretField] }
    public var reasonCodes: [String] { HMSCode.allCases.map(\.rawValue) }
    /// A request carries up to 1000 tokens, as FCM legacy's multicast: 64 of them are 64,000 tokens in flight.
    public var defaultConcurrency: Int { 64 }
    public var title: String { "HMS Push Kit" }

    public init() {}

    /// Huawei devices beside the others in the quick start: an HMS app `hms` that the simulator's HMS side answers.
    public var sandboxApp: (name: String, settings: any AppSettings)? { ("hms", HMSSettings.sandboxed()) }
    public var simulatorSide: (any SimulatorSide.Type)? { HMSSimulator.self }

    public func settings(_ entry: AppEntry) throws(ConfigurationError) -> any AppSettings {
        try HMSSettings(entry)
    }
}

/// An HMS Push Kit app (SPEC §21), from its `apps` entry:
/// `{"name", "provider": "hms", "app_id", "client_id"?, "client_secret_file" (or "client_secret" inline), "endpoint"?,
/// "token_uri"?}`.
///
/// `client_id` defaults to `app_id`: an AppGallery app's OAuth client id is its app id, as Huawei's server demos use
/// one number for both. The secret is read by `load` at start, held in memory only, never logged.
public struct HMSSettings: AppSettings {
    public static let defaultEndpoint = "https://push-api.cloud.huawei.com"
    public static let defaultTokenURI = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"

    public var provider: String { HMSDefinition.name }
    /// The send API's base URL.
    public var endpoint: String
    public var appID: String
    public var clientID: String
    /// The client secret: a file, or inline (an app stored in the database: opened from its sealed copy).
    public var clientSecretSource: SecretSource?
    static let secretField = SecretField("client_secret", file: "client_secret_file")
    public var tokenURI: String
    /// Read by `load`, or the sandbox's throw-away one.
    public var clientSecret: String?

    public init(_ entry: AppEntry) throws(ConfigurationError) {
        let app = entry.app
        func text(_ key: String, required: Bool) throws(ConfigurationError) -> String? {
            guard let value = entry[key] else {
                if required { throw ConfigurationError("HMS app \"\(app)\" needs \"\(key)\"") }
                return nil
            }
            guard let string = value.stringValue, !string.isEmpty else {
                throw ConfigurationError("HMS app \"\(app)\": \"\(key)\" must be a non-empty string")
            }
            return string
        }
        appID = try text("app_id", required: true)!
        clientID = try text("client_id", required: false) ?? appID
        for (key, value) in [("app_id", appID), ("client_id", clientID)]
        where value.utf8.count > 64 || !value.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            throw ConfigurationError("""
                HMS app "\(app)": \(key) must be the app's number from AppGallery Connect (digits), got "\
                \(value.prefix(100))"
                """)
        }
        if entry["client_secret"] == nil { _ = try text("client_secret_file", required: true) }
        clientSecretSource = entry.secret(Self.secretField)
        tokenURI = try text("token_uri", required: false) ?? Self.defaultTokenURI
        endpoint = try text("endpoint", required: false) ?? Self.defaultEndpoint
    }

    /// `--sandbox`'s: the simulator's HMS side, with the throw-away secret `prepareSandbox` makes.
    static func sandboxed() -> HMSSettings {
        HMSSettings(appID: "10000001")
    }

    private init(appID: String) {
        (self.appID, clientID) = (appID, appID)
        (endpoint, tokenURI) = (Self.defaultEndpoint, Self.defaultTokenURI)
    }

    public func check(app: String) throws(ConfigurationError) {
        for (key, url) in [("endpoint", endpoint), ("token_uri", tokenURI)] {
            do {
                try ServiceAccount.checkURL(url, name: key, source: "HMS app \"\(app)\"")
            } catch {
                throw ConfigurationError(error.description)
            }
        }
    }

    /// Reads the client secret, whitespace around it ignored (a file written by `echo` ends in a newline).
    public mutating func load(app: String) throws(ConfigurationError) {
        guard let clientSecretSource else { throw ConfigurationError("HMS app \"\(app)\" needs \"client_secret_file\"") }
        let secret = try clientSecretSource.text(app: app, what: "HMS client secret file")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard !secret.isEmpty, !secret.contains(where: \.isNewline) else {
            throw ConfigurationError("""
                HMS app "\(app)": \(clientSecretSource.place) must hold the app's client secret (one line, from \
                AppGallery Connect's app information)
                """)
        }
        clientSecret = secret
    }

    /// Every HMS app of the sandbox authenticates with one throw-away client secret that only the simulator knows.
    public mutating func prepareSandbox(_ sandbox: SandboxSetup) throws {
        let secret = sandbox.shared(HMSDefinition.name) { String(UInt64.random(in: .min ... .max), radix: 16) }
        self = Self.sandboxed()
        clientSecret = secret
        sandbox.simulate(HMSSimulator(account: HMSSimulator.Account(appID: appID, clientSecret: secret)))
    }

    public mutating func connectSandbox(_ simulator: SandboxSimulator) {
        endpoint = simulator.url
        tokenURI = simulator.url + HMSSimulator.tokenPath
    }

    public func provider(app: String, context: ProviderContext) throws -> any Provider {
        guard clientSecret != nil else {
            throw ConfigurationError("HMS app \"\(app)\": its client secret was not loaded")
        }
        Log.info("hms app", [
            "app": .string(app), "app_id": .string(appID), "client_id": .string(clientID),
            "endpoint": .string(endpoint), "token_uri": .string(tokenURI),
        ])
        return HMSProvider(
            app: app, settings: self, tokenPool: context.tokenPool(), timeoutMillis: context.requestTimeoutMillis)
    }

    public var addressing: any AddressingRules { HMSAddressing() }

    /// The client credentials grant (RFC 6749 §4.4) Huawei's token endpoint takes, form-encoded.
    static func grant(clientID: String, clientSecret: String) -> String {
        "grant_type=client_credentials&client_id=" + formEncoded(clientID) + "&client_secret="
            + formEncoded(clientSecret)
    }

    private static func formEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    /// RFC 3986's unreserved characters: everything else is percent-encoded.
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
