/// What the delivery engine needs of a sender pool: submit a request, hear back once, count, shut down.
///
/// `HTTPClientPool` (libcurl: HTTP/1.1 keep-alive, and HTTP/2 when a TLS server offers it) and `HTTP2ClientPool`
/// (Herald's own HTTP/2 client over OpenSSL, for FCM v1 over HTTPS) both conform.
public protocol RequestTransport: AnyObject, Sendable {
    /// Queues a request; `completion` runs once with the result and the seconds from this call to the result. It
    /// must not block: it runs on the pool's own thread. After `shutdown` has begun it runs at once, on the calling
    /// thread, with `.failure(reason: "cancelled")`.
    func submit(_ request: OutboundRequest, completion: @escaping @Sendable (TransportResult, Double) -> Void)
    /// Connections open or opening right now.
    var connections: Int { get }
    /// Requests submitted whose completion has not started yet.
    var inFlight: Int { get }
    /// Waits up to `gracePeriod` seconds for requests in flight, cancels the rest, and stops.
    func shutdown(gracePeriod: Double)
}

extension HTTPClientPool: RequestTransport {}
