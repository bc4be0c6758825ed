import Classify
import Send
import Storage

/// One FCM request about to be sent: the deliveries it carries, in the order FCM will answer them.
public struct PreparedRequest: Sendable {
    public var app: String
    public var message: ClaimedMessage
    public var deliveries: [ClaimedDelivery]
    public var outbound: OutboundRequest
    public var kind: TargetKind
    public var format: RequestFormat
}

/// What differs between FCM's legacy HTTP API and HTTP v1: how claimed deliveries become requests and how
/// answers become outcomes. Everything around it (claim, retry, reconcile) is shared.
public protocol Provider: Sendable {
    /// The requests for one message's claimed deliveries.
    func requests(for message: ClaimedMessage, deliveries: [ClaimedDelivery], now: Int64) -> [PreparedRequest]
    /// One outcome per delivery of `request`.
    func classify(_ result: TransportResult, of request: PreparedRequest, now: Int64) -> Classification
}
