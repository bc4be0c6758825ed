import Delivery
import FCMSimulator
import Send
import Ingest
import Support

/// One provider as its folder gives it to the list (`ProviderList`): its name and keys in the config file, how an
/// `apps` entry becomes its settings, and the stored reasons it acts on. What an app of it then does — the key
/// check, the sandbox, its sender, what ingest refuses for it — is its settings' (`AppSettings`). Nothing outside
/// the list names a provider. What it gives the command line (`serve`'s flags, its own commands) is
/// `ProviderCommandLine`'s.
///
/// ```swift
/// struct HMSDefinition: ProviderDefinition {
///     static let name = "hms"
///     let keys: Set = ["app_id", "client_id", "client_secret_file", "token_uri"]
///     func settings(_ entry: AppEntry) throws(ConfigurationError) -> any AppSettings { try HMSSettings(entry) }
/// }
/// ```
public protocol ProviderDefinition: ProviderCommandLine {
    /// `"provider"` in an `apps` entry, as users write it: `"fcm-v1"`.
    var name: String { get }
    /// The keys of an `apps` entry that belong to this provider, beyond the common ones (`AppEntry.commonKeys`): on
    /// an app of another provider each is refused at start.
    var keys: Set<String> { get }
    /// Of `keys`, those whose values are not strings (the others must be).
    var nonStringKeys: Set<String> { get }
    /// Of `keys`, the secrets (SPEC §22): inline or in a file, sealed when the app is stored in the database, never
    /// shown.
    var secretFields: [SecretField] { get }
    /// The provider's own codes with a rule, as stored in `deliveries.reason` (its classifier's `V1Code`, …): kept
    /// verbatim by `DeliveryReason(stored:)`, so none may be the text of a reason of Herald's own.
    var reasonCodes: [String] { get }
    /// Requests in flight per app when neither the app nor `--concurrency` says.
    var defaultConcurrency: Int { get }
    /// The app `--sandbox` adds for this provider when the configuration has no app of that name (`ios`, `web`),
    /// or nil.
    var sandboxApp: (name: String, settings: any AppSettings)? { get }
    /// An `apps` entry of this provider as its settings, checked as far as can be without reading a file.
    func settings(_ entry: AppEntry) throws(ConfigurationError) -> any AppSettings

    // MARK: - The simulator's side (SPEC §9, §21)
    /// The provider's side of the simulator (`Sources/Providers/<Name>/Simulator`), which `herald fcm-sim` and the
    /// sandbox serve; nil for a provider without one.
    var simulatorSide: (any SimulatorSide.Type)? { get }
}

extension ProviderDefinition {
    public var simulatorSide: (any SimulatorSide.Type)? { nil }
}

extension ProviderDefinition {
    public var nonStringKeys: Set<String> { [] }
    public var secretFields: [SecretField] { [] }
    public var reasonCodes: [String] { [] }
    public var defaultConcurrency: Int { 1000 }
    public var sandboxApp: (name: String, settings: any AppSettings)? { nil }
}

/// An app's settings for its provider: what its `apps` entry gave beyond the common keys, and what an app of the
/// provider does at start.
public protocol AppSettings: Sendable {
    /// The provider's `ProviderDefinition.name`.
    var provider: String { get }
    /// Where the app sends, for the log and the console; "" where each token says (Web Push).
    var endpoint: String { get set }
    /// Checks what can be checked without reading a file or being told of the sandbox (an endpoint's form); at
    /// start, in the sandbox too.
    func check(app: String) throws(ConfigurationError)
    /// Reads and checks what the settings name (a key file, a service account), saying exactly what is wrong; at
    /// start, outside the sandbox.
    mutating func load(app: String) throws(ConfigurationError)
    /// In the sandbox, before the simulator starts: throw-away credentials that only the simulator trusts, told to
    /// the provider's side through `sandbox.simulate(_:)`.
    mutating func prepareSandbox(_ sandbox: SandboxSetup) throws
    /// In the sandbox, once the simulator listens: send to it.
    mutating func connectSandbox(_ simulator: SandboxSimulator)
    /// Whether the sandbox's simulator must also listen over TLS (HTTP/2) for this app.
    var sandboxNeedsTLS: Bool { get }
    /// The app's sender, its settings loaded (or sandboxed).
    func provider(app: String, context: ProviderContext) throws -> any Provider
    /// What ingest refuses for the app.
    var addressing: any AddressingRules { get }
    /// Of the app's requests in flight, how many may go to one origin (Web Push's push services; others have one).
    var originConcurrency: Int { get }
    /// The FCM project id the drop-in v1 endpoint routes to this app, if any.
    var projectID: String? { get }
    /// The TLS client certificate the app's connections present (APNs' certificate authentication), for `status`
    /// and the console to show its expiry; nil for an app that authenticates otherwise.
    var clientCertificate: TLSClientIdentity? { get }
}

extension AppSettings {
    public func check(app: String) throws(ConfigurationError) {}
    public func prepareSandbox(_ sandbox: SandboxSetup) throws {}
    public var sandboxNeedsTLS: Bool { false }
    public var originConcurrency: Int { ProviderContext.defaultOriginConcurrency }
    public var projectID: String? { nil }
    public var clientCertificate: TLSClientIdentity? { nil }
}
