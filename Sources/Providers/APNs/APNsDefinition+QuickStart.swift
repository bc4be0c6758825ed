import ProviderKit

extension APNsDefinition {
    public var title: String { "APNs" }

    /// App `ios` from the `--apns-*` flags (or their environment variables and config keys), for a quick start
    /// without an `apps` list.
    public var quickStart: QuickStart? {
        QuickStart(app: "ios", on: "apns-key-file", flags: [
            ServeFlag(
                "apns-key-file", file: true,
                help: "APNs .p8 key of app `ios` (with --apns-key-id, --apns-team-id, --apns-topic)"),
            ServeFlag("apns-key-id", help: "the 10-character id of the APNs key (Apple's Key ID)"),
            ServeFlag("apns-team-id", help: "the Apple developer team id that owns the key"),
            ServeFlag("apns-topic", help: "the iOS app's bundle id, e.g. com.example.app"),
            ServeFlag(
                "apns-environment", default: "production",
                help: "production or sandbox (development builds of the app)"),
        ])
    }

    public func quickStartSettings(
        _ flags: ServeFlagValues, current: (any AppSettings)?
    ) throws(ConfigurationError) -> (any AppSettings)? {
        guard let keyFile = try flags.nonEmpty("apns-key-file") else {
            for name in ["apns-key-id", "apns-team-id", "apns-topic"] where try flags.value(name) != nil {
                throw ConfigurationError("--\(name) needs --apns-key-file (the .p8 key of app \"ios\")")
            }
            return nil
        }
        func flag(_ name: String) throws(ConfigurationError) -> String {
            guard let value = try flags.nonEmpty(name) else {
                throw ConfigurationError("--apns-key-file needs --\(name) too")
            }
            return value
        }
        let settings = try APNsSettings(
            key: .file(keyFile), keyID: try flag("apns-key-id"), teamID: try flag("apns-team-id"),
            topic: try flag("apns-topic"), environment: try flags.value("apns-environment"), app: "ios")
        guard current == nil else {
            throw ConfigurationError("""
                --apns-key-file configures app "ios", which the config file's "apps" also has: remove one of them
                """)
        }
        return settings
    }
}
