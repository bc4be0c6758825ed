import Support

/// A browser's push subscription (SPEC §16): its push service endpoint and its keys, exactly what
/// `PushSubscription.toJSON()` gives, validated — and the one text Herald keeps it as, a token of the registry.
///
/// The token is the endpoint with the keys in its fragment, `https://push.example/abc#p256dh=BNc…&auth=tBH…`, so a
/// subscription is registered, fanned out to by `users`, deleted on `410` and listed like any other token, and
/// every delivery carries what its encryption needs. A URL parser reads it back; the endpoint is what comes before
/// `#`.
///
/// ```swift
/// let subscription = try WebPushSubscription(json: JSON.parse(Array(body.utf8)))
/// registry.upsert(subscription.token, app: "web", user: "u1")
/// ```
public struct WebPushSubscription: Sendable, Equatable {
    /// Push service URLs are far shorter; a bound keeps tokens within the registry's 4096 bytes.
    public static let maximumEndpointBytes = 2048

    public let endpoint: String
    public let keys: WebPushKeys

    /// Why a subscription was refused, in words for the backend that sent it.
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    public init(endpoint: String, keys: WebPushKeys) throws(Invalid) {
        if let problem = Self.problem(endpoint: endpoint) { throw Invalid(problem) }
        self.endpoint = endpoint
        self.keys = keys
    }

    /// `{"endpoint": "https://…", "expirationTime": null, "keys": {"p256dh": "…", "auth": "…"}}`.
    public init(json: JSON) throws(Invalid) {
        guard json.objectValue != nil else {
            throw Invalid("subscription must be an object: {\"endpoint\", \"keys\": {\"p256dh\", \"auth\"}}")
        }
        for member in json.objectValue ?? [] where !["endpoint", "keys", "expirationTime"].contains(member.key) {
            throw Invalid("unknown field subscription.\(member.key)")
        }
        guard let endpoint = json["endpoint"]?.stringValue else {
            throw Invalid("subscription.endpoint must be the push service's https URL")
        }
        if let problem = Self.problem(endpoint: endpoint) { throw Invalid(problem) }
        guard let keys = json["keys"], keys.objectValue != nil else {
            throw Invalid("subscription.keys must be an object with p256dh and auth")
        }
        for member in keys.objectValue ?? [] where member.key != "p256dh" && member.key != "auth" {
            throw Invalid("unknown field subscription.keys.\(member.key)")
        }
        guard let p256dh = keys["p256dh"]?.stringValue, let auth = keys["auth"]?.stringValue else {
            throw Invalid("subscription.keys needs p256dh and auth (base64url strings)")
        }
        do {
            self.keys = try WebPushKeys(p256dh: p256dh, auth: auth)
        } catch {
            throw Invalid("subscription.\(error.description)")
        }
        self.endpoint = endpoint
    }

    /// A token made by `token`; nil for any other text (an FCM or APNs token).
    public init?(token: String) {
        guard token.utf8.starts(with: "https://".utf8), let hash = token.utf8.firstIndex(of: UInt8(ascii: "#"))
        else { return nil }
        let endpoint = String(token[..<hash])
        let fragment = token[token.index(after: hash)...]
        let fields = fragment.split(separator: "&", omittingEmptySubsequences: false)
        guard fields.count == 2, fields[0].hasPrefix("p256dh="), fields[1].hasPrefix("auth="),
              let keys = try? WebPushKeys(
                p256dh: String(fields[0].dropFirst("p256dh=".count)), auth: String(fields[1].dropFirst("auth=".count))),
              Self.problem(endpoint: endpoint) == nil
        else { return nil }
        self.endpoint = endpoint
        self.keys = keys
    }

    /// The registry's form: `{endpoint}#p256dh={p256dh}&auth={auth}`, keys in unpadded base64url.
    public var token: String {
        endpoint + "#p256dh=" + keys.p256dhText + "&auth=" + keys.authText
    }

    /// `https://host[:port]`: VAPID's audience, and the pool a request goes out on.
    public var origin: String {
        VAPID.origin(of: endpoint) ?? endpoint
    }

    /// The endpoint's host as its URL writes it (lowercase, an IPv6 address in brackets), and its port.
    public var authority: (host: String, port: Int) {
        let hostAndPort = origin.dropFirst("https://".count)
        guard let colon = hostAndPort.lastIndex(of: ":"), !hostAndPort[colon...].contains("]"),
              let port = Int(hostAndPort[hostAndPort.index(after: colon)...])
        else { return (String(hostAndPort), 443) }
        return (String(hostAndPort[..<colon]), port)
    }

    /// Nil for an `https` URL with a host, no fragment, no whitespace or control characters, within the bound.
    static func problem(endpoint: String) -> String? {
        guard endpoint.utf8.count <= maximumEndpointBytes else {
            return "subscription.endpoint is longer than \(maximumEndpointBytes) bytes"
        }
        guard endpoint.utf8.starts(with: "https://".utf8) else {
            return "subscription.endpoint must be an https URL (a push service's), got \(quotedStart(endpoint))"
        }
        guard endpoint.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "#") }) else {
            return "subscription.endpoint must be a URL without spaces, control characters or a fragment"
        }
        guard VAPID.origin(of: endpoint) != nil else {
            return "subscription.endpoint has no host: \(quotedStart(endpoint))"
        }
        return nil
    }

    private static func quotedStart(_ text: String) -> String {
        "\"" + (text.utf8.count > 60 ? String(text.prefix(60)) + "…" : text) + "\""
    }
}
