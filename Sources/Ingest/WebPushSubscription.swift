import OAuth
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
        Self.origin(of: endpoint) ?? endpoint
    }

    /// The endpoint's host as its URL writes it (lowercase, an IPv6 address in brackets), and its port.
    public var authority: (host: String, port: Int) {
        let hostAndPort = origin.dropFirst("https://".count)
        guard let colon = hostAndPort.lastIndex(of: ":"), !hostAndPort[colon...].contains("]"),
              let port = Int(hostAndPort[hostAndPort.index(after: colon)...])
        else { return (String(hostAndPort), 443) }
        return (String(hostAndPort[..<colon]), port)
    }

    /// The origin of a push endpoint, the audience its push service expects: `scheme://host[:port]`, the scheme and
    /// host in lowercase, the port left out when it is the scheme's default.
    /// `https://FCM.googleapis.com:443/wp/abc` → `https://fcm.googleapis.com`.
    ///
    /// `http` endpoints get an origin too (`http://127.0.0.1:8700`, the simulator's push service): requiring `https`
    /// is the subscription check's rule (SPEC §16), not this function's. Nil for any other scheme, a missing or
    /// malformed host, user information (`user@host`), or a bad port.
    public static func origin(of endpoint: String) -> String? {
        // Byte by byte: every send asks (its subscription's origin), and `Character`s cost grapheme breaking each.
        let bytes = Array(endpoint.utf8)
        guard let separator = bytes.indices.first(where: { bytes[$0...].starts(with: "://".utf8) }) else { return nil }
        let scheme = String(decoding: bytes[..<separator].map(lowercased), as: UTF8.self)
        let defaultPort: Int
        switch scheme {
        case "https": defaultPort = 443
        case "http": defaultPort = 80
        default: return nil
        }
        let rest = bytes[(separator + 3)...]
        let authority = rest.prefix { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        var host: ArraySlice<UInt8>
        var portText: ArraySlice<UInt8>?
        let bracketed = authority.first == UInt8(ascii: "[")
        if bracketed {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            host = authority[...close]
            let after = authority[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { return nil }
                portText = after.dropFirst()
            }
            let isAddressByte = { (b: UInt8) in
                isDigit(b) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(lowercased(b)) || b == UInt8(ascii: ":")
                    || b == UInt8(ascii: ".")
            }
            guard host.dropFirst().dropLast().allSatisfy(isAddressByte) else { return nil }
        } else if let colon = authority.firstIndex(of: UInt8(ascii: ":")) {
            host = authority[..<colon]
            portText = authority[(colon + 1)...]
        } else {
            host = authority
        }
        let isHostByte = { (b: UInt8) in
            isDigit(b) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(lowercased(b)) || b == UInt8(ascii: "-")
                || b == UInt8(ascii: ".") || b == UInt8(ascii: "_")
        }
        guard host.count > (bracketed ? 2 : 0), bracketed || host.allSatisfy(isHostByte) else { return nil }
        var origin = scheme + "://" + String(decoding: host.map(lowercased), as: UTF8.self)
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy(isDigit),
                  let port = Int(String(decoding: portText, as: UTF8.self)), (1...65535).contains(port)
            else { return nil }
            if port != defaultPort { origin += ":\(port)" }
        }
        return origin
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
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
        guard Self.origin(of: endpoint) != nil else {
            return "subscription.endpoint has no host: \(quotedStart(endpoint))"
        }
        return nil
    }

    private static func quotedStart(_ text: String) -> String {
        "\"" + (text.utf8.count > 60 ? String(text.prefix(60)) + "…" : text) + "\""
    }
}
