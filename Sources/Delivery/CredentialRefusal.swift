/// What an endpoint's refusal of a credential (FCM v1: 401 `UNAUTHENTICATED`) means.
public enum CredentialRefusal: Sendable, Equatable {
    /// The current credential: dropped, and the next one obtained; the request goes back to the queue uncharged.
    case renew
    /// An older credential: a newer one is already in use or on its way; the request goes back uncharged.
    case stale
    /// The credential obtained because its predecessor was refused is refused too: renewing again would not help,
    /// so the app pauses.
    case pause
}
