import APNs

extension ServeConfiguration {
    /// App `ios` from the `--apns-*` flags (or their environment variables and config keys), for a quick start
    /// without an `apps` list; nil when no key file is given.
    static func apnsApp(
        given: (String) throws -> String?, concurrency: Int?
    ) throws -> AppConfiguration? {
        guard let keyFile = try given("apns-key-file").flatMap({ $0.isEmpty ? nil : $0 }) else {
            for name in ["apns-key-id", "apns-team-id", "apns-topic"] where try given(name) != nil {
                throw Invalid(description: "--\(name) needs --apns-key-file (the .p8 key of app \"ios\")")
            }
            return nil
        }
        func flag(_ name: String) throws -> String {
            guard let value = try given(name), !value.isEmpty else {
                throw Invalid(description: "--apns-key-file needs --\(name) too")
            }
            return value
        }
        let settings = try APNsSettings(
            key: .file(keyFile), keyID: try flag("apns-key-id"), teamID: try flag("apns-team-id"),
            topic: try flag("apns-topic"), environment: try given("apns-environment"), app: "ios")
        return AppConfiguration(name: "ios", settings: settings, concurrency: concurrency)
    }
}
