import Delivery
import Foundation
import OAuth
import Support

/// A Web Push app's VAPID identity (SPEC §16) and its bound on connections (SPEC §19), from its `apps` entry.
struct WebPushSettings: Sendable {
    /// The `apps` entry's keys for a Web Push app.
    static let keys: Set = ["vapid_private_key_file", "vapid_subject", "max_connections"]
    /// `max_connections` may be a number; the other keys are strings.
    static let numericKeys: Set = ["max_connections"]

    var keyFile: String
    /// `mailto:…` or `https://…`: whom a push service contacts about this sender.
    var subject: String
    /// Read by `loadKey` at start; never logged or stored.
    var key: P256PrivateKey?
    /// The sandbox's: the built-in simulator's certificate, which its push service is checked against.
    var caFile: String?
    /// Connections to all push services together at most.
    var maxConnections = WebPushProvider.defaultConnectionLimit

    /// `--sandbox`'s: no key file; `Service` makes a throw-away key.
    static func sandboxed() -> WebPushSettings {
        WebPushSettings(keyFile: "", subject: "mailto:sandbox@herald.invalid")
    }

    private init(keyFile: String, subject: String) {
        (self.keyFile, self.subject) = (keyFile, subject)
    }

    init(keyFile: String?, subject: String?, maxConnections: JSON?, app: String, directory: String?) throws {
        guard let path = keyFile, !path.isEmpty else {
            throw ServeConfiguration.Invalid(description: """
                Web Push app "\(app)" needs "vapid_private_key_file" (make one with `herald webpush-keys --out FILE`)
                """)
        }
        guard let subject, subject.hasPrefix("mailto:") || subject.hasPrefix("https://") else {
            throw ServeConfiguration.Invalid(description: """
                Web Push app "\(app)" needs "vapid_subject": "mailto:you@example.com" or an https URL, whom push \
                services contact about your pushes
                """)
        }
        self.keyFile = directory.map { ServeConfiguration.resolvePath(path, against: $0) } ?? path
        self.subject = subject
        if let maxConnections {
            guard let value = maxConnections.int64Value, (1...10_000).contains(value) else {
                throw ServeConfiguration.Invalid(description: """
                    Web Push app "\(app)": max_connections must be an integer in 1...10000 (connections to all push \
                    services together; default \(WebPushProvider.defaultConnectionLimit))
                    """)
            }
            self.maxConnections = Int(value)
        }
    }

    /// Reads the PEM file and checks that it is a P-256 private key, saying exactly what is wrong otherwise.
    mutating func loadKey(app: String) throws {
        key = try ServeConfiguration.readP256Key(
            keyFile, app: app, provider: "Web Push",
            expected: "a VAPID key (a PEM P-256 private key, as `herald webpush-keys` writes)")
    }
}
