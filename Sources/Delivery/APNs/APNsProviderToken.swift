import OAuth
import Support
import Synchronization

/// APNs' provider token (token-based authentication, SPEC §15): an ES256 JWT `{"alg":"ES256","kid":<key id>}`
/// `{"iss":<team id>,"iat":<seconds>}` signed with the team's `.p8` key. Signing is local — no I/O — so the
/// scheduler never waits for it.
///
/// Apple wants one token reused for 20 to 60 minutes and answers `TooManyProviderTokenUpdates` to a sender that
/// renews faster than every 20. Herald renews after `refreshMillis` (40 min), and sooner only once, when Apple
/// calls the token expired (`ExpiredProviderToken`, a clock that ran away): a second refusal of the renewed token
/// pauses the app instead.
///
/// ```swift
/// let tokens = APNsProviderToken(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
/// let jwt = try tokens.current(now: Clock.nowMillis())   // the same string for the next 40 minutes
/// ```
final class APNsProviderToken: Sendable {
    static let refreshMillis: Int64 = 40 * 60_000
    /// How long a token is kept when Apple says it is renewed too often (it expires at 60 minutes).
    static let extendedMillis: Int64 = 55 * 60_000

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

    init(key: P256PrivateKey, keyID: String, teamID: String) {
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
    }

    /// The token to send with now, signed anew when the current one is due for renewal.
    func current(now: Int64) throws(CryptoError) -> String {
        if let current = state.withLock({ $0 }), now < current.renewAt { return current.token }
        let token = try sign(now: now)
        return state.withLock { state in
            // Another thread may have renewed meanwhile: the first renewal wins, so all send the same token.
            if let current = state, now < current.renewAt { return current.token }
            state = Current(token: token, issuedAt: now, renewAt: now + Self.refreshMillis, madeAfterRefusal: false)
            return token
        }
    }

    /// Apple answered `ExpiredProviderToken` to a request sent with `token`. True when a request may go out again
    /// with a newer token (one made now, or already made since); false when the token was itself the renewal of a
    /// refused one, and the app must pause.
    func expired(_ token: String, now: Int64) -> Bool {
        guard let fresh = try? sign(now: now) else { return false }
        return state.withLock { state in
            guard let current = state, current.token == token else { return true }
            guard !current.madeAfterRefusal else { return false }
            state = Current(token: fresh, issuedAt: now, renewAt: now + Self.refreshMillis, madeAfterRefusal: true)
            return true
        }
    }

    /// Whether the token sent with a request may still be renewed once for it (the classifier's
    /// `mayRenewCredentials`).
    func mayRenew(_ token: String) -> Bool {
        state.withLock { state in
            guard let current = state, current.token == token else { return true }
            return !current.madeAfterRefusal
        }
    }

    /// Apple answered `TooManyProviderTokenUpdates`: another sender with the same key renews too, so this token is
    /// kept nearly as long as Apple accepts one (`extendedMillis`).
    func renewedTooOften(now: Int64) {
        state.withLock { state in
            guard var current = state else { return }
            current.renewAt = max(current.renewAt, current.issuedAt + Self.extendedMillis)
            state = current
        }
    }

    private func sign(now: Int64) throws(CryptoError) -> String {
        try JWT.signES256(
            header: [("kid", .string(keyID))], claims: .object([("iss", .string(teamID)), ("iat", .int(now / 1000))]),
            with: key)
    }
}
