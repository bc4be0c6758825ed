import Foundation
import OAuth
import Support

/// A Web Push app's VAPID identity (SPEC §16), from its `apps` entry.
struct WebPushSettings: Sendable {
    /// The `apps` entry's keys for a Web Push app.
    static let keys: Set = ["vapid_private_key_file", "vapid_subject", "origin_concurrency"]
    /// Requests in flight to one push-service origin at most, by default (SPEC §19).
    static let defaultOriginConcurrency = 100

    var keyFile: String
    /// `mailto:…` or `https://…`: whom a push service contacts about this sender.
    var subject: String
    /// Read by `loadKey` at start; never logged or stored.
    var key: P256PrivateKey?
    /// The sandbox's: the built-in simulator's certificate, which its push service is checked against.
    var caFile: String?
    /// `origin_concurrency`: of the app's requests in flight, how many may go to one push-service origin.
    var originConcurrency = defaultOriginConcurrency

    /// `--sandbox`'s: no key file; `Service` makes a throw-away key.
    static func sandboxed() -> WebPushSettings {
        WebPushSettings(keyFile: "", subject: "mailto:sandbox@herald.invalid")
    }

    private init(keyFile: String, subject: String) {
        (self.keyFile, self.subject) = (keyFile, subject)
    }

    init(
        keyFile: String?, subject: String?, originConcurrency: JSON? = nil, app: String, directory: String?
    ) throws {
        if let originConcurrency {
            guard let value = originConcurrency.int64Value, (1...10_000).contains(value) else {
                throw ServeConfiguration.Invalid(description: """
                    Web Push app "\(app)": origin_concurrency must be an integer in 1...10000 (requests in flight to \
                    one push service at most)
                    """)
            }
            self.originConcurrency = Int(value)
        }
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
    }

    /// Reads the PEM file and checks that it is a P-256 private key, saying exactly what is wrong otherwise.
    mutating func loadKey(app: String) throws {
        key = try ServeConfiguration.readP256Key(
            keyFile, app: app, provider: "Web Push",
            expected: "a VAPID key (a PEM P-256 private key, as `herald webpush-keys` writes)")
    }
}
