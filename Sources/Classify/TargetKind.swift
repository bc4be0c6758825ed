/// How a request addressed FCM, which decides the reply shapes the classifier accepts.
public enum TargetKind: Sendable {
    /// `to` with one token or a device-group notification key, or `registration_ids`.
    case tokens
    /// `to: "/topics/…"`.
    case topic
    /// `condition`.
    case condition
}
