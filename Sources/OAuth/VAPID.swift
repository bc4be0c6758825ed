import Support
import Synchronization

/// Voluntary Application Server Identification (RFC 8292): the `Authorization` header that tells a push service
/// which application server sends, signed with the key whose public half the page passed to
/// `pushManager.subscribe` as `applicationServerKey`.
///
/// ```swift
/// let vapid = try VAPID(key: P256PrivateKey(pem: keyFile), subject: "mailto:ops@example.com")
/// let origin = VAPID.origin(of: subscription.endpoint)!          // "https://fcm.googleapis.com"
/// request.headers["Authorization"] = try vapid.authorization(origin: origin, now: nowMillis)
/// // vapid t=eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9.eyJhdWQiOi…, k=BDd3_hVL9fZi9Ybo2UUzA284WG5FZR30_95YeZJsiA…
/// ```
///
/// A token lives 12 hours (RFC 8292 allows 24) and is kept per origin until less than an hour of it remains, so a
/// busy sender signs about twice a day per push service rather than once per message. The cache forgets origins
/// unused for a day and holds at most `maximumCachedOrigins`. Thread-safe; no I/O; the clock is the caller's.
public final class VAPID: Sendable {
    /// How long a token is valid: `exp` is this many seconds after it is made.
    public static let tokenLifetime: Int64 = 12 * 3600
    /// A cached token is made again once less than this (seconds) of its life remains.
    public static let renewalMargin: Int64 = 3600
    public static let maximumCachedOrigins = 4096
    /// An origin not asked for this long (milliseconds) is forgotten.
    static let idleLimit: Int64 = 24 * 3600 * 1000

    private let key: P256PrivateKey
    private let subject: String
    /// The public key as base64url: the `k` of the header, and a page's `applicationServerKey`.
    public let publicKeyText: String
    private let cache = Mutex(Cache())

    /// Signs with `key` (P-256) for `subject`: how the push service's operator reaches the sender, a `mailto:`
    /// address or an `https:` URL (RFC 8292 §2.1).
    public init(key: P256PrivateKey, subject: String) throws(VAPID.Invalid) {
        try Self.check(subject: subject)
        self.key = key
        self.subject = subject
        publicKeyText = Base64URL.encode(key.agreement.publicPoint)
    }

    /// `vapid t=<JWT>, k=<publicKeyText>` for a push service at `origin` (as `origin(of:)` gives it): the JWT's
    /// header `{"typ":"JWT","alg":"ES256"}`, its claims `aud` = `origin`, `exp` = now + 12 h, `sub` = the subject.
    /// Reused for the same origin while more than an hour of its life remains. `now` is Unix time in milliseconds.
    public func authorization(origin: String, now: Int64) throws(CryptoError) -> String {
        let cached = cache.withLock { $0.header(for: origin, now: now) }
        if let cached { return cached }
        let expiresAt = now / 1000 + Self.tokenLifetime
        // The claims in alphabetical order, as the reference implementations (py_vapid, web-push) send them.
        let token = try JWT.signES256(
            header: [("typ", .string("JWT"))],
            claims: .object([("aud", .string(origin)), ("exp", .int(expiresAt)), ("sub", .string(subject))]),
            with: key)
        let header = "vapid t=\(token), k=\(publicKeyText)"
        cache.withLock { $0.store(header, expiresAt: expiresAt, for: origin, now: now) }
        return header
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

    /// How many origins have a token cached (for tests).
    var cachedOrigins: Int { cache.withLock { $0.entries.count } }

    /// Why a VAPID configuration was refused; the text names the setting (`vapid_subject`).
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String

        public init(_ description: String) {
            self.description = description
        }
    }

    private static func check(subject: String) throws(Invalid) {
        let refusal = Invalid(#"vapid_subject must be a "mailto:" address or an "https://" URL (RFC 8292 §2.1), not "#
            + "\"\(subject.prefix(100))\"")
        guard !subject.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7f } == true })
        else { throw refusal }
        let lowered = subject.lowercased()
        if lowered.hasPrefix("mailto:") {
            let address = subject.dropFirst("mailto:".count)
            guard let at = address.firstIndex(of: "@"), at != address.startIndex,
                  address.index(after: at) != address.endIndex
            else { throw refusal }
        } else if lowered.hasPrefix("https://") {
            guard origin(of: subject) != nil else { throw refusal }
        } else {
            throw refusal
        }
    }

    // MARK: - The cache

    private struct Cache: Sendable {
        struct Entry: Sendable {
            var header: String
            /// Unix seconds, the token's `exp`.
            var expiresAt: Int64
            /// Unix milliseconds.
            var lastUsed: Int64
        }

        var entries: [String: Entry] = [:]

        /// The cached header for `origin` if more than `renewalMargin` of its life remains (and it does not claim
        /// more than its lifetime: a clock set back would make a push service see `exp` too far ahead).
        mutating func header(for origin: String, now: Int64) -> String? {
            guard var entry = entries[origin] else { return nil }
            let remaining = entry.expiresAt - now / 1000
            guard remaining > VAPID.renewalMargin, remaining <= VAPID.tokenLifetime else { return nil }
            entry.lastUsed = now
            entries[origin] = entry
            return entry.header
        }

        /// Keeps `header`, first forgetting origins idle for a day and, when still full, the least recently used.
        /// Tokens are made rarely (per origin, twice a day), so the sweep's cost does not matter.
        mutating func store(_ header: String, expiresAt: Int64, for origin: String, now: Int64) {
            entries = entries.filter { now - $0.value.lastUsed < VAPID.idleLimit }
            if entries[origin] == nil, entries.count >= VAPID.maximumCachedOrigins,
               let oldest = entries.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key {
                entries[oldest] = nil
            }
            entries[origin] = Entry(header: header, expiresAt: expiresAt, lastUsed: now)
        }
    }
}
