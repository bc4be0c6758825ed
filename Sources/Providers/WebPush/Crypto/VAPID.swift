import Ingest
import OAuth
import Support
import Synchronization

/// Voluntary Application Server Identification (RFC 8292): the `Authorization` header that tells a push service
/// which application server sends, signed with the key whose public half the page passed to
/// `pushManager.subscribe` as `applicationServerKey`.
///
/// ```swift
/// let vapid = try VAPID(key: P256PrivateKey(pem: keyFile), subject: "mailto:ops@example.com")
/// let origin = subscription.origin          // "https://fcm.googleapis.com"
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

    /// `vapid t=<JWT>, k=<publicKeyText>` for a push service at `origin` (as `WebPushSubscription.origin(of:)` gives
    /// it): the JWT's header `{"typ":"JWT","alg":"ES256"}`, its claims `aud` = `origin`, `exp` = now + 12 h, `sub` =
    /// the subject.
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
            guard WebPushSubscription.origin(of: subject) != nil else { throw refusal }
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
