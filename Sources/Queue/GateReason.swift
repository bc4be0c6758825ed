/// Why an app's gate closed: the `gate_reason` of `apps`, which `herald status` explains and scripts read
/// (`--json`'s `gate_reason`). The stored texts are short codes users script against: `rawValue` must never change
/// one.
///
/// ```swift
/// GateReason.http(503).rawValue     // "http_503"
/// GateReason(stored: "reset")       // .reset
/// GateReason(stored: "something")   // .other("something")
/// ```
public enum GateReason: Hashable, Sendable {
    /// The connection closed, or its stream was reset, before the answer.
    case reset
    /// No answer in time.
    case timeout
    /// No connection to the endpoint could be made.
    case connect
    /// Another transport failure (TLS, an error curl names otherwise).
    case transport
    /// The answer carried a `Retry-After`.
    case retryAfter
    /// A quota error without `Retry-After` (FCM v1 `429 QUOTA_EXCEEDED`).
    case quota
    /// A server error, by its status (`http_503`).
    case http(Int)
    /// A code this version does not know (a newer Herald wrote it), kept as stored.
    case other(String)

    public init(stored: String) {
        switch stored {
        case "reset": self = .reset
        case "timeout": self = .timeout
        case "connect": self = .connect
        case "transport": self = .transport
        case "retry_after": self = .retryAfter
        case "quota": self = .quota
        default:
            if stored.hasPrefix("http_"), let status = Int(stored.dropFirst(5)), String(status) == stored.dropFirst(5) {
                self = .http(status)
            } else {
                self = .other(stored)
            }
        }
    }

    public var rawValue: String {
        switch self {
        case .reset: "reset"
        case .timeout: "timeout"
        case .connect: "connect"
        case .transport: "transport"
        case .retryAfter: "retry_after"
        case .quota: "quota"
        case .http(let status): "http_\(status)"
        case .other(let stored): stored
        }
    }
}
