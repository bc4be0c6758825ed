import Delivery
import Foundation
import Ingest
import OAuth
import Support
import WebPush

/// A Web Push app's VAPID identity (SPEC §16), the endpoints it sends to and its bounds (SPEC §19), from its `apps`
/// entry.
struct WebPushSettings: Sendable {
    /// The `apps` entry's keys for a Web Push app.
    static let keys: Set = [
        "vapid_private_key_file", "vapid_subject", "origin_concurrency", "max_connections", "allow_private_endpoints",
        "trusted_push_hosts",
    ]
    /// The keys whose values are not strings.
    static let nonStringKeys: Set = [
        "origin_concurrency", "max_connections", "allow_private_endpoints", "trusted_push_hosts",
    ]
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
    /// `max_connections`: connections to all push services together at most.
    var maxConnections = WebPushProvider.defaultConnectionLimit
    /// `allow_private_endpoints` and `trusted_push_hosts`: which endpoints its subscriptions may have.
    var endpoints = EndpointPolicy()

    /// `--sandbox`'s: no key file (`Service` makes a throw-away key), and the simulator on loopback to send to.
    static func sandboxed() -> WebPushSettings {
        var settings = WebPushSettings(keyFile: "", subject: "mailto:sandbox@herald.invalid")
        settings.endpoints = EndpointPolicy(allowsPrivate: true)
        return settings
    }

    private init(keyFile: String, subject: String) {
        (self.keyFile, self.subject) = (keyFile, subject)
    }

    /// From the `apps` entry `item` of app `app`.
    init(_ item: JSON, app: String, directory: String?) throws {
        try self.init(
            keyFile: item["vapid_private_key_file"]?.stringValue, subject: item["vapid_subject"]?.stringValue, app: app,
            directory: directory)
        endpoints = try Self.endpoints(item, app: app)
        originConcurrency = try Self.integer(
            item, "origin_concurrency", app: app, meaning: "requests in flight to one push service at most",
            default: originConcurrency)
        maxConnections = try Self.integer(
            item, "max_connections", app: app, meaning: "connections to all push services together",
            default: maxConnections)
    }

    /// `key`'s value, an integer in 1...10000, or `default` when the entry has none.
    private static func integer(_ item: JSON, _ key: String, app: String, meaning: String, default: Int) throws -> Int {
        guard let json = item[key] else { return `default` }
        guard let value = json.int64Value, (1...10_000).contains(value) else {
            throw ServeConfiguration.Invalid(description: """
                Web Push app "\(app)": \(key) must be an integer in 1...10000 (\(meaning); default \(`default`))
                """)
        }
        return Int(value)
    }

    private init(keyFile: String?, subject: String?, app: String, directory: String?) throws {
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

    /// `allow_private_endpoints` (a boolean) and `trusted_push_hosts` (host names, stored lowercase).
    private static func endpoints(_ item: JSON, app: String) throws -> EndpointPolicy {
        var allowsPrivate = false
        if let value = item["allow_private_endpoints"] {
            guard let flag = value.boolValue else {
                throw ServeConfiguration.Invalid(description: """
                    Web Push app "\(app)": "allow_private_endpoints" must be true or false
                    """)
            }
            allowsPrivate = flag
        }
        guard let value = item["trusted_push_hosts"] else { return EndpointPolicy(allowsPrivate: allowsPrivate) }
        let hosts = value.arrayValue?.compactMap(\.stringValue).map { $0.lowercased() } ?? []
        let isHostName = { (host: String) in
            !host.isEmpty && !host.hasPrefix(".") && !host.hasSuffix(".")
                && host.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }
        }
        guard !hosts.isEmpty, hosts.count == value.arrayValue?.count, hosts.allSatisfy(isHostName) else {
            throw ServeConfiguration.Invalid(description: """
                Web Push app "\(app)": "trusted_push_hosts" must be a non-empty list of host names, such as \
                ["fcm.googleapis.com", "push.services.mozilla.com", "push.apple.com", "notify.windows.com"]
                """)
        }
        return EndpointPolicy(allowsPrivate: allowsPrivate, trustedHosts: hosts)
    }

    /// Reads the PEM file and checks that it is a P-256 private key, saying exactly what is wrong otherwise.
    mutating func loadKey(app: String) throws {
        key = try ServeConfiguration.readP256Key(
            keyFile, app: app, provider: "Web Push",
            expected: "a VAPID key (a PEM P-256 private key, as `herald webpush-keys` writes)")
    }
}
