/// How an `HTTPServer` listens and what it tolerates from clients. Times are seconds.
public struct HTTPServerConfiguration: Sendable {
    public var address: ListenAddress
    /// Event-loop threads; each owns an epoll set and the connections assigned to it.
    public var eventLoops: Int
    /// Open client connections beyond this are answered 503 and closed.
    public var maxConnections: Int
    /// The largest request head (request line and headers) accepted; larger gets 431.
    public var maxHeaderBytes: Int
    /// How long a keep-alive connection may wait for its next request before it is closed silently.
    public var idleTimeout: Double
    /// How long a request head may take to arrive once its first byte has; then 408.
    public var headerTimeout: Double
    /// How long a request body may take to arrive once its head has; then 408.
    public var bodyTimeout: Double
    /// The `listen(2)` backlog.
    public var backlog: Int
    /// Bytes of request bodies held at once across all connections: each body's `Content-Length` is reserved
    /// from this budget before its first byte is read, and given back when the handler has answered it (or
    /// the connection closes first). A request whose body does not fit is answered 503 with `Retry-After`
    /// from its head, without `100 Continue`. Keep it at least the largest body limit, or such bodies are
    /// never accepted.
    public var maxBodyBytesInFlight: Int

    public init(
        address: ListenAddress,
        eventLoops: Int = 2,
        maxConnections: Int = 4096,
        maxHeaderBytes: Int = 16 * 1024,
        idleTimeout: Double = 60,
        headerTimeout: Double = 10,
        bodyTimeout: Double = 30,
        backlog: Int = 1024,
        maxBodyBytesInFlight: Int = 64 << 20
    ) {
        self.address = address
        self.eventLoops = eventLoops
        self.maxConnections = maxConnections
        self.maxHeaderBytes = maxHeaderBytes
        self.idleTimeout = idleTimeout
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.backlog = backlog
        self.maxBodyBytesInFlight = maxBodyBytesInFlight
    }
}
