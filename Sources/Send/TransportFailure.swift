/// Why a request got no complete response. Its `description` is the text Herald stores and counts
/// (`deliveries.reason`, `herald_fcm_requests_total{code}`): users script against it, so a case's text never
/// changes once SPEC names it.
///
/// ```swift
/// TransportFailure.responseTooLarge.description        // "ResponseTooLarge"
/// TransportFailure(describing: "timeout")              // .timeout
/// ```
public enum TransportFailure: Hashable, Sendable, CustomStringConvertible {
    /// No answer within the request's timeout.
    case timeout
    /// No connection could be made to any of the host's addresses.
    case connect
    /// The connection ended (closed or reset by the peer, a PING unanswered) before a complete answer.
    case reset
    /// The pool shut down, or was already shut down at submit: never charged to the delivery.
    case cancelled
    /// The answer (its header fields or its body) was larger than the pool reads: not delivered, and retried.
    case responseTooLarge
    /// Every address of the host is one the pool's `AddressPolicy` refuses (SPEC §19): nothing was connected to. Its
    /// text is the delivery's reason as stored.
    case forbiddenAddress
    /// Anything else, in libcurl's or TLS's words (`"Couldn't resolve host name"`, `"TLS handshake: …"`).
    /// Never the text of another case: build it from text with `init(describing:)`.
    case other(String)

    /// The failure whose `description` is `text`: a named case when one has that text, else `.other(text)`.
    public init(describing text: String) {
        self = switch text {
        case "timeout": .timeout
        case "connect": .connect
        case "reset": .reset
        case "cancelled": .cancelled
        // Its text before SPEC §19 named it, still in rows stored then.
        case "ResponseTooLarge", "response too large": .responseTooLarge
        case "ForbiddenAddress": .forbiddenAddress
        default: .other(text)
        }
    }

    /// A TLS handshake with a stranger's server failed, whatever the reason: what the server did is not told to the
    /// caller, who could otherwise probe hosts through Herald (SPEC §19).
    public static let tlsHandshakeFailed = TransportFailure.other("TLS handshake failed")

    public var description: String {
        switch self {
        case .timeout: "timeout"
        case .connect: "connect"
        case .reset: "reset"
        case .cancelled: "cancelled"
        case .responseTooLarge: "ResponseTooLarge"
        case .forbiddenAddress: "ForbiddenAddress"
        case .other(let text): text
        }
    }
}
