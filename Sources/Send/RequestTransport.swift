/// What the delivery engine needs of a sender pool: submit a request, hear back once, count, shut down.
///
/// `HTTPClientPool` (libcurl: HTTP/1.1 keep-alive) and `HTTP2ClientPool` (Herald's HTTP/2 client, libnghttp2 over
/// OpenSSL, for FCM v1 over HTTPS) both conform.
public protocol RequestTransport: AnyObject, Sendable {
    /// A request and what to call with its answer.
    typealias Submission = (request: OutboundRequest, completion: @Sendable (TransportResult, Double) -> Void)

    /// Queues a request; `completion` runs once with the result and the seconds from this call to the result. It
    /// must not block: it runs on the pool's own thread. After `shutdown` has begun it runs at once, on the calling
    /// thread, with `.failure(.cancelled)`.
    func submit(_ request: OutboundRequest, completion: @escaping @Sendable (TransportResult, Double) -> Void)
    /// Queues several requests at once, as `submit` each: a pool may hand them to its thread in one go.
    func submit(_ requests: [Submission])
    /// Connections open or opening right now.
    var connections: Int { get }
    /// Requests submitted whose completion has not started yet.
    var inFlight: Int { get }
    /// What happened to its connections so far (HTTP/2; a pool that keeps no such counts returns zeros).
    var statistics: TransportStatistics { get }
    /// Waits up to `gracePeriod` seconds for requests in flight, cancels the rest, and stops.
    func shutdown(gracePeriod: Double)
}

extension RequestTransport {
    public func submit(_ requests: [Submission]) {
        for (request, completion) in requests { submit(request, completion: completion) }
    }

    public var statistics: TransportStatistics { TransportStatistics() }
}

extension HTTPClientPool: RequestTransport {}
