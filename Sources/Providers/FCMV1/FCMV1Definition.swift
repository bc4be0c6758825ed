import Delivery
import FCMSimulator
import FCMV1Simulator
import Ingest
import OAuth
import ProviderKit
import Support

/// FCM HTTP v1 in the list (SPEC §12): `"provider": "fcm-v1"`, a service account.
public struct FCMV1Definition: ProviderDefinition {
    public static let name = "fcm-v1"
    public var name: String { Self.name }
    public let keys: Set = ["service_account_file", "service_account", "project_id", "token_uri"]
    public var nonStringKeys: Set<String> { ["service_account"] }
    public var secretFields: [SecretField] { [V1Settings.accountField] }
    public var reasonCodes: [String] { V1Code.allCases.map(\.rawValue) }
    public var simulatorSide: (any SimulatorSide.Type)? { FCMV1Simulator.self }

    public init() {}

    public var title: String { "FCM HTTP v1" }

    /// What production runs, in the sandbox: FCM HTTP v1 against the built-in simulator with a throw-away service
    /// account.
    public var sandboxApp: (name: String, settings: any AppSettings)? { ("default", V1Settings()) }

    public var quickStart: QuickStart? {
        QuickStart(app: "default", on: "fcm-service-account", flags: [
            ServeFlag(
                "fcm-service-account", file: true,
                help: "service-account key file of app `default`: sends with FCM HTTP v1"),
        ])
    }

    /// App `default` sends with FCM HTTP v1 and `--fcm-service-account`'s key: a new app (to `--fcm-endpoint`, FCM
    /// legacy's flag, if set), or the config file's `default` turned into one.
    public func quickStartSettings(
        _ flags: ServeFlagValues, current: (any AppSettings)?
    ) throws(ConfigurationError) -> (any AppSettings)? {
        guard let file = try flags.nonEmpty("fcm-service-account") else { return nil }
        var settings = if let current {
            current as? V1Settings ?? V1Settings()
        } else {
            V1Settings(endpoint: try flags.value("fcm-endpoint") ?? V1Provider.defaultEndpoint)
        }
        settings.serviceAccountSource = .file(file)
        return settings
    }

    public func settings(_ entry: AppEntry) throws(ConfigurationError) -> any AppSettings {
        V1Settings(
            endpoint: entry["endpoint"]?.stringValue ?? V1Provider.defaultEndpoint,
            serviceAccount: entry.secret(V1Settings.accountField), projectID: entry["project_id"]?.stringValue,
            tokenURI: entry["token_uri"]?.stringValue)
    }
}

/// An FCM HTTP v1 app: its service-account key file as configured, and (once `load` has read it) its key and the
/// project and token endpoint in force: the config's overrides, else the file's.
public struct V1Settings: AppSettings {
    /// The service account's key: a file, or its JSON inline.
    static let accountField = SecretField("service_account", file: "service_account_file")
    public var provider: String { FCMV1Definition.name }
    /// The base URL, `https://fcm.googleapis.com`.
    public var endpoint: String
    /// Where the service account's key is: its file, or its JSON.
    public var serviceAccountSource: SecretSource?
    public var projectID: String?
    public var tokenURI: String?
    public var serviceAccount: ServiceAccount?

    public init(
        endpoint: String = V1Provider.defaultEndpoint, serviceAccount: SecretSource? = nil, projectID: String? = nil,
        tokenURI: String? = nil
    ) {
        (self.endpoint, self.serviceAccountSource, self.projectID, self.tokenURI) =
            (endpoint, serviceAccount, projectID, tokenURI)
    }

    public func check(app: String) throws(ConfigurationError) {
        if endpoint.hasSuffix("/fcm/send") {
            throw ConfigurationError("""
                app "\(app)" uses FCM HTTP v1: its endpoint is a base URL such as \(V1Provider.defaultEndpoint), \
                not the legacy \(endpoint)
                """)
        }
        do {
            try ServiceAccount.checkURL(endpoint, name: "endpoint", source: "app \"\(app)\"")
        } catch {
            throw ConfigurationError(error.description)
        }
    }

    /// Reads the key file (exactly what is wrong, if anything) and settles `projectID` and `tokenURI`.
    public mutating func load(app: String) throws(ConfigurationError) {
        guard let source = serviceAccountSource else {
            throw ConfigurationError("app \"\(app)\" uses fcm-v1 but names no \"service_account_file\"")
        }
        let account: ServiceAccount
        do {
            switch source {
            case .file(let path):
                account = try ServiceAccount(contentsOf: path)
                AppEntry.warnIfOthersCanRead(path, "the service account file", app: app)
            case .inline(let text):
                account = try ServiceAccount(json: Array(text.utf8), source: "its \"service_account\"")
            }
        } catch {
            throw ConfigurationError("app \"\(app)\": \(error)")
        }
        let path = source.place
        guard let projectID = projectID ?? account.projectID else {
            throw ConfigurationError("""
                app "\(app)": service account file \(path) has no "project_id" and the config sets none
                """)
        }
        guard let tokenURI = tokenURI ?? account.tokenURI else {
            throw ConfigurationError("""
                app "\(app)": service account file \(path) has no "token_uri" and the config sets none
                """)
        }
        do {
            try ServiceAccount.checkURL(tokenURI, name: "token_uri", source: "app \"\(app)\"")
        } catch {
            throw ConfigurationError(error.description)
        }
        // A key that parses may still fail to sign (SPEC §22): sign once now, not at the first token request.
        do {
            _ = try JWT.sign(
                JWT.Claims(issuer: account.clientEmail, scope: "", audience: tokenURI, issuedAt: 0, lifetime: 60),
                with: account.privateKey)
        } catch {
            throw ConfigurationError("app \"\(app)\": the service account's private_key cannot sign: \(error)")
        }
        serviceAccount = account
        self.projectID = projectID
        self.tokenURI = tokenURI
    }

    /// Every v1 app of the sandbox signs with one throw-away service account that only the simulator trusts.
    public mutating func prepareSandbox(_ sandbox: SandboxSetup) throws {
        let account = try sandbox.shared(FCMV1Definition.name) {
            ServiceAccount(clientEmail: "sandbox@herald.invalid", privateKey: try RSAPrivateKey.generate(),
                           projectID: "sandbox", tokenURI: nil)
        }
        sandbox.simulate(FCMV1Simulator(account: FCMV1Simulator.Account(account)))
        serviceAccount = account
        projectID = account.projectID
    }

    public mutating func connectSandbox(_ simulator: SandboxSimulator) {
        endpoint = simulator.url
        tokenURI = simulator.url + FCMV1Simulator.tokenPath
    }

    public func provider(app: String, context: ProviderContext) throws -> any Provider {
        guard let serviceAccount, let projectID, let tokenURI else {
            throw ConfigurationError("app \"\(app)\": its service account was not loaded")
        }
        Log.info("fcm v1 app", [
            "app": .string(app), "project": .string(projectID), "client_email": .string(serviceAccount.clientEmail),
            "endpoint": .string(endpoint), "token_uri": .string(tokenURI),
        ])
        return V1Provider(
            app: app, account: serviceAccount, projectID: projectID, endpoint: endpoint, tokenURI: tokenURI,
            tokenPool: context.tokenPool(), timeoutMillis: context.requestTimeoutMillis)
    }

    public var addressing: any AddressingRules { V1Addressing() }
}
