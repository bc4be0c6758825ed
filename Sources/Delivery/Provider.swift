import Classify
import Posix
import Send
import Queue
import Support
import Synchronization

/// One request to a provider about to be sent: the deliveries it carries, in the order the provider will answer them.
///
/// A class: a request goes from the scheduler's queue to the sender thread and back with its answer, and a struct
/// of a dozen strings and arrays was retained and released field by field at every hand-over (~5 % of Herald's
/// CPU at FCM's rate, atomics shared between the two threads). Immutable but for when it was sent (an atomic the
/// scheduler sets once, before the hand-over), so sharing it is safe.
public final class PreparedRequest: Sendable {
    public let app: String
    public let message: ClaimedMessage
    public let deliveries: [ClaimedDelivery]
    public let outbound: OutboundRequest
    public let kind: TargetKind
    public let format: RequestFormat
    /// Set when the message cannot be sent to this provider at all (an APNs body over Apple's limit): the scheduler
    /// makes its deliveries dead letters with this reason instead of sending.
    public let refusal: DeliveryReason?
    /// The fault domain below the app that the request's endpoint belongs to: a Web Push subscription's push-service
    /// origin (`https://host[:port]`), which has its own gate, pause and share of the app's requests (SPEC §19). Nil
    /// for an endpoint the operator named (FCM, APNs): its faults are the app's.
    public let origin: String?
    private let sent = Atomic<Int64>(0)

    /// When the scheduler put it on the wire (Unix milliseconds; 0 before): whether its failure is part of the
    /// fault that last closed the app's gate, or a fault of its own.
    public var sentAt: Int64 { sent.load(ordering: .relaxed) }

    func markSent(at now: Int64) { sent.store(now, ordering: .relaxed) }

    public init(
        app: String, message: ClaimedMessage, deliveries: [ClaimedDelivery], outbound: OutboundRequest,
        kind: TargetKind, format: RequestFormat, refusal: DeliveryReason? = nil, origin: String? = nil
    ) {
        self.refusal = refusal
        self.origin = origin
        self.app = app
        self.message = message
        self.deliveries = deliveries
        self.outbound = outbound
        self.kind = kind
        self.format = format
    }
}

/// Whether a provider can send, once its credentials were obtained (`Credentials.obtain`).
public enum ProviderReadiness: Sendable, Equatable {
    case ready
    /// Not before this Unix millisecond: the credentials could not be had for now (the token endpoint failed).
    case retry(at: Int64)
    /// The credentials were refused: pause the app with this reason until an operator resumes it.
    case pause(reason: String)
}

/// What differs between providers (each in its folder under `Sources/Providers`): how claimed deliveries become
/// requests and how answers become outcomes, and which credentials must be obtained first. Everything around it
/// (claim, retry, reconcile) is shared.
///
/// Two steps, run in different places. Rendering (`requests`) is the engine's render stage: off the scheduler, on
/// any thread and on several at once, where the CPU of a send may go (an encryption) and a provider may keep caches.
/// Classifying (`classify`) runs inside the app's scheduler: a pure function of the answer, without a lock, a log
/// line or a clock of its own (what is worth a log line about an answer, the engine reads from it). Neither obtains, renews or
/// judges a credential: they are handed it, and the rest is `credentials`' part, carried out by the engine when the
/// app's scheduler asks.
public protocol Provider: Sendable {
    /// How many deliveries one request can carry (FCM legacy's multicast: 1000; the others: one per request).
    var maxTargetsPerRequest: Int { get }
    /// What the provider must obtain before it sends (FCM v1: an access token); nil when it needs nothing (FCM
    /// legacy's server key, in the provider's own headers).
    var credentials: (any Credentials)? { get }
    /// The render step: the requests for one message's claimed deliveries, made with `credential` (`credentials`'
    /// current one; nil for a provider without credentials). Every delivery goes in exactly one request; a message
    /// the provider cannot take is a request with a `refusal`. Called by the render stage, from several threads at
    /// once.
    func requests(
        for message: ClaimedMessage, deliveries: [ClaimedDelivery], credential: String?, now: Int64
    ) -> [PreparedRequest]
    /// One outcome per delivery of `request`. A refusal of the request's credential is `.requeue`: whether it is
    /// renewed or the app pauses is for `credentials` to say. Pure: called by the app's scheduler.
    func classify(_ result: TransportResult, of request: PreparedRequest, now: Int64) -> Classification
    /// The connections to the endpoint that `concurrency` requests in flight need, which the app's pool may open.
    func maxConnections(concurrency: Int) -> Int
    /// The largest answer body the app's pool reads; a longer one fails its request as `ResponseTooLarge` (retried).
    var maxResponseBytes: Int { get }
    /// The app's sender pool, for `concurrency` requests in flight; `liveness` for its HTTP/2 connections.
    func makeTransport(concurrency: Int, name: String, liveness: HTTP2Liveness) -> any RequestTransport
}

extension Provider {
    /// `deliveries` as its requests carry them: tokens share requests of up to `maxTargetsPerRequest` (a multicast
    /// provider's 1000); a topic or a condition has its one delivery in a request of its own.
    public func requestRuns(_ deliveries: [ClaimedDelivery], kind: TargetKind) -> [[ClaimedDelivery]] {
        let size = kind == .tokens ? maxTargetsPerRequest : 1
        return stride(from: 0, to: deliveries.count, by: size).map {
            Array(deliveries[$0..<min($0 + size, deliveries.count)])
        }
    }

    /// A server key needs nothing obtained.
    public var credentials: (any Credentials)? { nil }

    /// One connection per request in flight: HTTP/1.1 keep-alive.
    public func maxConnections(concurrency: Int) -> Int {
        HTTPClientPool.connectionsNeeded(inFlight: concurrency, multiplexed: false)
    }

    /// A push answer: a few KiB at most.
    public var maxResponseBytes: Int { HTTPClientPool.pushResponseBytes }

    /// libcurl, with `maxConnections` connections.
    public func makeTransport(concurrency: Int, name: String, liveness: HTTP2Liveness) -> any RequestTransport {
        HTTPClientPool(
            maxConnectionsPerHost: maxConnections(concurrency: concurrency), maxResponseBytes: maxResponseBytes,
            name: name)
    }
}

extension Provider {
    /// Herald's HTTP/2 client for `concurrency` requests in flight, `maxConnections(concurrency:)` of them to one
    /// host and `totalConnections` (nil: no other limit) to all hosts together, and an HTTP/1.1 pool of a connection
    /// per request for a server that does not offer h2. `caFile` replaces the CA certificates servers are checked
    /// against (`$SSL_CERT_FILE`, else the system's): the sandbox's simulator. `clientIdentity`: the certificate the
    /// connections present (APNs' certificate authentication). `addressPolicy`: for hosts Herald does not choose (Web
    /// Push's), where connections may go.
    public func http2Transport(
        concurrency: Int, name: String, liveness: HTTP2Liveness, caFile: String? = nil,
        clientIdentity: TLSClientIdentity? = nil, totalConnections: Int? = nil, addressPolicy: AddressPolicy? = nil
    ) -> any RequestTransport {
        let connections = maxConnections(concurrency: concurrency)
        let http1 = HTTPClientPool.connectionsNeeded(inFlight: concurrency, multiplexed: false)
        guard let caFile else {
            return HTTP2ClientPool(
                maxConnectionsPerHost: connections, maxConnections: totalConnections,
                maxResponseBytes: maxResponseBytes, http1Connections: http1, name: name,
                clientIdentity: clientIdentity, liveness: liveness, addressPolicy: addressPolicy)
        }
        return HTTP2ClientPool(
            maxConnectionsPerHost: connections, maxConnections: totalConnections, maxResponseBytes: maxResponseBytes,
            http1Connections: http1, name: name, caFile: caFile, clientIdentity: clientIdentity, liveness: liveness,
            addressPolicy: addressPolicy)
    }
}
