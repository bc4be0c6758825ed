/// What a provider sends with and must obtain first: FCM v1's OAuth2 access token (`AccessTokenCache`), APNs' ES256
/// provider token (`APNsProviderToken`) and Web Push's VAPID key (`VAPID`, its JWTs signed per push-service origin).
/// The provider's two steps (`requests`, `classify`) are handed the credential; obtaining, renewing and judging it is
/// done here, by the engine, when an app's `AppScheduler` asks with an action (`.prepare`, `.renewCredentials`,
/// `.credentialRefused`, `.credentialAccepted`).
///
/// Reads (`current`, `renewalDue`) are the render stage's, never the scheduler's: cheap, a lock for a few loads (or
/// a signature when a token is due), and they never block; obtaining runs on threads of its own.
public protocol Credentials: Sendable {
    /// The credential to send with at `now`, if one is usable for a while yet.
    func current(now: Int64) -> String?
    /// Whether the credential is in its last minutes and a renewal should start (sending goes on meanwhile).
    func renewalDue(now: Int64) -> Bool
    /// Starts that renewal in the background, unless one is under way or not yet allowed.
    func renew(now: Int64)
    /// Gets a usable credential without blocking the caller; `completion` runs once, on any thread.
    func obtain(now: Int64, completion: @escaping @Sendable (ProviderReadiness) -> Void)
    /// The endpoint refused the credential `request` was made with: what that means.
    func refused(_ request: PreparedRequest) -> CredentialRefusal
    /// The endpoint took `request` (any answer but a refusal of its credential). Returns whether a credential
    /// renewed after a refusal still waits for such proof that it works.
    func accepted(_ request: PreparedRequest) -> Bool
    /// The endpoint says the credential is renewed too often (APNs' `TooManyProviderTokenUpdates`, likely several
    /// Heralds signing with one key): keep the current one as long as the endpoint allows.
    func renewedTooOften(now: Int64)
}

extension Credentials {
    /// An OAuth access token's life is the token endpoint's to set.
    public func renewedTooOften(now: Int64) {}
}
