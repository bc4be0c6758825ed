import Delivery
import OAuth
import Support
import Synchronization

/// APNs' provider token (token-based authentication, SPEC §15): an ES256 JWT `{"alg":"ES256","kid":<key id>}`
/// `{"iss":<team id>,"iat":<seconds>}` signed with the team's `.p8` key. Signing is local — no I/O — so the
/// scheduler never waits for it.
///
/// Apple wants one token reused for 20 to 60 minutes and answers `TooManyProviderTokenUpdates` to a sender that
/// renews faster than every 20. Herald renews after `refreshMillis` (40 min), and sooner only once, when Apple
/// calls the token expired (`ExpiredProviderToken`, a clock that ran away): a refusal of the renewed token before
/// Apple took it pauses the app instead. When Apple says tokens change too often anyway (several Heralds signing
/// with one key each make their own), every token from then on is kept `longestMillis` (55 min), just inside
/// Apple's hour.
///
/// ```swift
/// let tokens = APNsProviderToken(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
/// let jwt = try tokens.token(now: Clock.nowMillis())   // the same string for the next 40 minutes
/// ```
final class APNsProviderToken: Sendable {
    static let refreshMillis: Int64 = 40 * 60_000
    static let longestMillis: Int64 = 55 * 60_000

    private struct Current {
        var token: String
        var issuedAt: Int64
        var renewAt: Int64
        /// Made because Apple called the one before it expired: Apple refusing this one too pauses the app.
        var madeAfterRefusal: Bool
    }

    private let key: P256PrivateKey
    let keyID: String
    let teamID: String
    private let state = Mutex<Current?>(nil)
    /// `refreshMillis`, or `longestMillis` once Apple said tokens change too often.
    private let lifetime = Mutex<Int64>(refreshMillis)

    init(key: P256PrivateKey, keyID: String, teamID: String) {
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
    }

    /// The token to send with now, signed anew when the current one is due for renewal.
    func token(now: Int64) throws(CryptoError) -> String {
        if let current = state.withLock({ $0 }), now < current.renewAt { return current.token }
        let token = try sign(now: now)
        let lifetime = lifetime.withLock { $0 }
        return state.withLock { state in
            // Another thread may have renewed meanwhile: the first renewal wins, so all send the same token.
            if let current = state, now < current.renewAt { return current.token }
            state = Current(token: token, issuedAt: now, renewAt: now + lifetime, madeAfterRefusal: false)
            return token
        }
    }

    /// Apple answered `TooManyProviderTokenUpdates`: the current token and every later one are kept
    /// `longestMillis`.
    func keepLonger() {
        lifetime.withLock { $0 = Self.longestMillis }
        state.withLock { state in
            guard var current = state else { return }
            current.renewAt = max(current.renewAt, current.issuedAt + Self.longestMillis)
            state = current
        }
    }

    /// Apple refused `token` (`ExpiredProviderToken`): a new one once; the same answer to that one pauses the app.
    func refused(token: String, now: Int64) -> CredentialRefusal {
        guard let fresh = try? sign(now: now) else { return .pause }
        return state.withLock { state in
            guard let current = state, current.token == token else { return .stale }
            guard !current.madeAfterRefusal else { return .pause }
            state = Current(
                token: fresh, issuedAt: now, renewAt: now + lifetime.withLock { $0 }, madeAfterRefusal: true)
            return .renew
        }
    }

    /// Apple took a request sent with `token`: a renewal made after a refusal has proved itself, and a later
    /// refusal may renew again. Returns whether the current token still waits for such proof.
    func accepted(token: String) -> Bool {
        state.withLock { state in
            guard var current = state, current.madeAfterRefusal else { return false }
            guard current.token == token else { return true }
            current.madeAfterRefusal = false
            state = current
            return false
        }
    }

    private func sign(now: Int64) throws(CryptoError) -> String {
        try JWT.signES256(
            header: [("kid", .string(keyID))], claims: .object([("iss", .string(teamID)), ("iat", .int(now / 1000))]),
            with: key)
    }
}

/// The provider token as the engine drives it (`Credentials`): signed here, at once, so there is nothing to wait for.
extension APNsProviderToken: Credentials {
    func current(now: Int64) -> String? {
        try? token(now: now)
    }

    /// `current` renews a token that is due as it reads it.
    func renewalDue(now: Int64) -> Bool { false }

    func renew(now: Int64) {}

    func obtain(now: Int64, completion: @escaping @Sendable (ProviderReadiness) -> Void) {
        do {
            _ = try token(now: now)
            completion(.ready)
        } catch {
            completion(.pause(reason: "the APNs key cannot sign a provider token: \(error)"))
        }
    }

    func refused(_ request: PreparedRequest) -> CredentialRefusal {
        refused(token: Self.providerToken(of: request), now: Clock.nowMillis())
    }

    func accepted(_ request: PreparedRequest) -> Bool {
        accepted(token: Self.providerToken(of: request))
    }

    func renewedTooOften(now: Int64) {
        keepLonger()
    }

    /// The token a request was sent with, from its `authorization: bearer …` header.
    static func providerToken(of request: PreparedRequest) -> String {
        let value = request.outbound.headers.first { $0.name == "authorization" }?.value ?? ""
        return value.hasPrefix("bearer ") ? String(value.dropFirst("bearer ".count)) : value
    }
}
