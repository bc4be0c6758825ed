import Delivery
import Foundation
import OAuth
import Send
import Support

/// An APNs app's credentials and target (SPEC §15), from its `apps` entry or the `--apns-*` flags.
struct APNsSettings: Sendable {
    /// The `apps` entry's keys for an APNs app.
    static let keys: Set = [
        "key_file", "key_id", "team_id", "topic", "environment", "certificate_file", "certificate_password_file",
        "certificate_key_file",
    ]

    /// Token-based authentication: the `.p8` key's file, its id and the team's; empty with a certificate.
    var keyFile: String
    var keyID: String
    var teamID: String
    /// Certificate-based authentication instead (SPEC §22): see `APNsCertificateFiles`.
    var certificateFiles: APNsCertificateFiles?
    /// The app's bundle id: `apns-topic`.
    var topic: String
    var sandbox: Bool
    /// Read by `loadKey` at start; never logged or stored.
    var key: P256PrivateKey?
    var certificate: TLSClientIdentity?
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

    /// Exactly one way to authenticate: `keyFile`, `keyID` and `teamID` (a `.p8` key), or `certificate`'s files.
    init(
        keyFile: String?, keyID: String?, teamID: String?, topic: String?, environment: String?,
        certificate: APNsCertificateFiles? = nil, app: String, directory: String?
    ) throws {
        func required(_ value: String?, _ key: String) throws -> String {
            guard let value, !value.isEmpty else {
                throw ServeConfiguration.Invalid(description: "APNs app \"\(app)\" needs \"\(key)\"")
            }
            return value
        }
        func resolved(_ path: String) -> String {
            directory.map { ServeConfiguration.resolvePath(path, against: $0) } ?? path
        }
        if let certificate {
            guard keyFile == nil, keyID == nil, teamID == nil else {
                throw ServeConfiguration.Invalid(description: """
                    APNs app "\(app)": give either "certificate_file" (a certificate) or "key_file", "key_id" and \
                    "team_id" (a .p8 signing key), not both
                    """)
            }
            (self.keyFile, self.keyID, self.teamID) = ("", "", "")
            certificateFiles = APNsCertificateFiles(
                file: resolved(certificate.file), passwordFile: certificate.passwordFile.map(resolved),
                keyFile: certificate.keyFile.map(resolved))
        } else {
            guard keyFile != nil || keyID != nil || teamID != nil else {
                throw ServeConfiguration.Invalid(description: """
                    APNs app "\(app)" needs "key_file", "key_id" and "team_id" (a .p8 signing key) or \
                    "certificate_file" (a .p12, or a PEM certificate and its key)
                    """)
            }
            self.keyFile = resolved(try required(keyFile, "key_file"))
            self.keyID = try required(keyID, "key_id")
            self.teamID = try required(teamID, "team_id")
        }
        self.topic = try required(topic, "topic")
        switch environment ?? "production" {
        case "production": sandbox = false
        case "sandbox", "development": sandbox = true
        case let other:
            throw ServeConfiguration.Invalid(description: """
                APNs app "\(app)": environment must be "production" or "sandbox", got "\(other)"
                """)
        }
        guard certificateFiles != nil
            || self.keyID.utf8.count == 10 && self.keyID.utf8.allSatisfy({ $0 < 0x80 && $0 > 0x20 })
        else {
            throw ServeConfiguration.Invalid(description: """
                APNs app "\(app)": key_id must be the key's 10-character Key ID from Apple's developer site
                """)
        }
    }

    /// Reads the `.p8` file and checks that it is a P-256 private key, or reads the certificate and its key; says
    /// exactly what is wrong otherwise.
    mutating func loadKey(app: String) throws {
        if let certificateFiles {
            certificate = try certificateFiles.load(app: app, topic: topic, now: Clock.nowMillis())
            return
        }
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
