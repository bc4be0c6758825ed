import APNs
import Delivery
import Foundation
import OAuth

/// An APNs app's credentials and target (SPEC §15), from its `apps` entry or the `--apns-*` flags.
struct APNsSettings: Sendable {
    /// The `apps` entry's keys for an APNs app.
    static let keys: Set = ["key_file", "key_id", "team_id", "topic", "environment"]

    var keyFile: String
    var keyID: String
    var teamID: String
    /// The app's bundle id: `apns-topic`.
    var topic: String
    var sandbox: Bool
    /// Read by `loadKey` at start; never logged or stored.
    var key: P256PrivateKey?
    /// The CA file the endpoint's certificate is checked against instead of the default ones; set by `Service` in the
    /// sandbox alone, to the certificate of the simulator it starts.
    var caFile: String?

    var defaultEndpoint: String { sandbox ? APNsProvider.sandbox : APNsProvider.production }

    /// `--sandbox`'s: no key file; `Service` gives every APNs app one throw-away key that only the built-in
    /// simulator trusts.
    static func sandboxed(topic: String = "com.example.sandbox") -> APNsSettings {
        APNsSettings(keyFile: "", keyID: "SANDBOXKEY", teamID: "SANDBOXTM", topic: topic, sandbox: true)
    }

    private init(keyFile: String, keyID: String, teamID: String, topic: String, sandbox: Bool) {
        (self.keyFile, self.keyID, self.teamID, self.topic, self.sandbox) = (keyFile, keyID, teamID, topic, sandbox)
    }

    init(
        keyFile: String?, keyID: String?, teamID: String?, topic: String?, environment: String?, app: String,
        directory: String?
    ) throws {
        func required(_ value: String?, _ key: String) throws -> String {
            guard let value, !value.isEmpty else {
                throw ServeConfiguration.Invalid(description: "APNs app \"\(app)\" needs \"\(key)\"")
            }
            return value
        }
        let path = try required(keyFile, "key_file")
        self.keyFile = directory.map { ServeConfiguration.resolvePath(path, against: $0) } ?? path
        self.keyID = try required(keyID, "key_id")
        self.teamID = try required(teamID, "team_id")
        self.topic = try required(topic, "topic")
        switch environment ?? "production" {
        case "production": sandbox = false
        case "sandbox", "development": sandbox = true
        case let other:
            throw ServeConfiguration.Invalid(description: """
                APNs app "\(app)": environment must be "production" or "sandbox", got "\(other)"
                """)
        }
        guard self.keyID.utf8.count == 10, self.keyID.utf8.allSatisfy({ $0 < 0x80 && $0 > 0x20 }) else {
            throw ServeConfiguration.Invalid(description: """
                APNs app "\(app)": key_id must be the key's 10-character Key ID from Apple's developer site
                """)
        }
    }

    /// Reads the `.p8` file and checks that it is a P-256 private key, saying exactly what is wrong otherwise.
    mutating func loadKey(app: String) throws {
        key = try ServeConfiguration.readP256Key(
            keyFile, app: app, provider: "APNs", expected: "an APNs signing key (a .p8 file with a P-256 private key)")
    }
}

extension ServeConfiguration {
    /// The P-256 private key (PEM) in `path`, for `provider`'s app `app`; an error that says what `expected` is.
    static func readP256Key(_ path: String, app: String, provider: String, expected: String) throws -> P256PrivateKey {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw Invalid(description: "\(provider) app \"\(app)\": cannot read key file \(path)")
        }
        let key: P256PrivateKey
        do {
            key = try P256PrivateKey(pem: text)
        } catch {
            throw Invalid(description: "\(provider) app \"\(app)\": \(path) is not \(expected): \(error)")
        }
        warnIfOthersCanRead(path, "the \(provider) key file", app: app)
        return key
    }

    /// App `ios` from the `--apns-*` flags (or their environment variables and config keys), for a quick start
    /// without an `apps` list; nil when no key file is given.
    static func apnsApp(
        given: (String) throws -> String?, concurrency: Int?, directory: String?
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
            keyFile: keyFile, keyID: try flag("apns-key-id"), teamID: try flag("apns-team-id"),
            topic: try flag("apns-topic"), environment: try given("apns-environment"), app: "ios",
            directory: nil)
        var app = AppConfiguration(
            name: "ios", provider: .apns, endpoint: settings.defaultEndpoint, concurrency: concurrency)
        app.apns = settings
        return app
    }
}
