import Support

/// What a provider gives `herald`'s command line, beside its `apps` entries: the `serve` flags that make its app for
/// a quick start without an `apps` list (`--apns-key-file`), and commands of its own (`webpush-keys`). `HeraldCLI`
/// asks the list for them and names no provider.
///
/// ```swift
/// public var quickStart: QuickStart? {
///     QuickStart(app: "ios", on: "apns-key-file", flags: [
///         ServeFlag("apns-key-file", file: true, help: "APNs .p8 key of app `ios`"), ServeFlag("apns-key-id", …), …,
///     ])
/// }
/// public func quickStartSettings(
///     _ flags: ServeFlagValues, current: (any AppSettings)?
/// ) throws(ConfigurationError) -> (any AppSettings)? {
///     guard let keyFile = try flags.nonEmpty("apns-key-file") else { return nil }
///     …
/// }
/// ```
public protocol ProviderCommandLine: Sendable {
    /// The provider as people call it, "FCM HTTP v1": in `status` ("APNs certificate") and in errors that set two
    /// providers side by side.
    var title: String { get }
    /// The app this provider's `serve` flags configure, and the flags; nil: it has none.
    var quickStart: QuickStart? { get }
    /// App `quickStart.app`'s settings once this provider's flags apply; `current` is that app as it stands (the
    /// config file's, or as a provider before this one in the list left it), nil when there is none. nil: the flags
    /// leave it alone.
    func quickStartSettings(
        _ flags: ServeFlagValues, current: (any AppSettings)?
    ) throws(ConfigurationError) -> (any AppSettings)?
    /// Commands of the provider's own, listed by `herald --help` with the others.
    var commands: [HeraldCommand] { get }
}

extension ProviderCommandLine {
    public var quickStart: QuickStart? { nil }
    public func quickStartSettings(
        _ flags: ServeFlagValues, current: (any AppSettings)?
    ) throws(ConfigurationError) -> (any AppSettings)? { nil }
    public var commands: [HeraldCommand] { [] }
}

/// A `herald` command: `herald <name> [arguments]`. `run` returns the exit code; it throws `Arguments.UsageError`
/// for a usage mistake (exit 2) and anything else for a failure (exit 1).
public struct HeraldCommand: Sendable {
    public var name: String
    /// Its line in `herald --help`.
    public var summary: String
    public var run: @Sendable ([String]) throws -> Int32

    public init(name: String, summary: String, run: @escaping @Sendable ([String]) throws -> Int32) {
        (self.name, self.summary, self.run) = (name, summary, run)
    }
}

/// A provider's quick start: the app its `serve` flags configure and the flags, in `serve --help`'s order.
public struct QuickStart: Sendable {
    /// "default", "ios".
    public var app: String
    /// The flag that asks for the app (`fcm-key`): two providers' such flags given for one app are refused.
    public var on: String
    public var flags: [ServeFlag]

    public init(app: String, on: String, flags: [ServeFlag]) {
        (self.app, self.on, self.flags) = (app, on, flags)
    }
}

/// A `serve` flag of a provider's quick start, `--apns-topic X`: also `HERALD_APNS_TOPIC` and the config file's
/// `"apns_topic"`, a flag winning over the environment, which wins over the file.
public struct ServeFlag: Sendable {
    public var name: String
    /// Shown in `--help`; the provider applies it.
    public var defaultValue: String?
    /// A file's path: one written in the config file is relative to the file's directory.
    public var isFile: Bool
    /// Its line in `serve --help`.
    public var help: String

    public init(_ name: String, default defaultValue: String? = nil, file isFile: Bool = false, help: String) {
        (self.name, self.defaultValue, self.isFile, self.help) = (name, defaultValue, isFile, help)
    }
}

/// What `serve`'s flags, the environment and the config file say of the quick-start flags.
public struct ServeFlagValues {
    private let given: (String) throws(ConfigurationError) -> String?
    private let outsideFile: (String) -> Bool

    /// `given`: a flag's text from where it is set (a file's path from the config file resolved), nil where it is
    /// not; `outsideFile`: whether a flag or environment variable sets it.
    public init(
        given: @escaping (String) throws(ConfigurationError) -> String?, outsideFile: @escaping (String) -> Bool
    ) {
        (self.given, self.outsideFile) = (given, outsideFile)
    }

    /// The text of flag `name` (without `--`), empty if set so; nil when nothing sets it.
    public func value(_ name: String) throws(ConfigurationError) -> String? { try given(name) }

    /// The text of flag `name`, nil when nothing sets it or it is set empty.
    public func nonEmpty(_ name: String) throws(ConfigurationError) -> String? {
        try given(name).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Whether a flag or an environment variable sets `name`, rather than the config file or nothing.
    public func isGivenOutsideFile(_ name: String) -> Bool { outsideFile(name) }
}
