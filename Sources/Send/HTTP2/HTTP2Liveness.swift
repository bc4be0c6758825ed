/// How Herald's HTTP/2 client finds a connection that went silent (a dead NAT entry, a half-open TCP path): with
/// requests in flight and nothing received for `pingAfterMillis`, a PING; no ACK within `pingTimeoutMillis` and
/// the connection is closed, its requests failing as `reset` for the caller to retry. A request that times out
/// makes its connection suspect: it takes no new request until a PING's ACK comes back.
///
/// The kernel is the backstop: `TCP_USER_TIMEOUT` of both times together, and keepalive on idle connections.
public struct HTTP2Liveness: Sendable, Equatable {
    public var pingAfterMillis: Int
    public var pingTimeoutMillis: Int
    /// A connection that carried nothing this long is closed (GOAWAY): the next request opens a fresh one.
    public var idleMillis: Int

    /// A dead connection is found within 3 s + 5 s, well inside SPEC's 10 s.
    public static let standard = HTTP2Liveness(pingAfterMillis: 3_000, pingTimeoutMillis: 5_000, idleMillis: 300_000)

    public init(pingAfterMillis: Int, pingTimeoutMillis: Int, idleMillis: Int = 300_000) {
        self.pingAfterMillis = max(1, pingAfterMillis)
        self.pingTimeoutMillis = max(1, pingTimeoutMillis)
        self.idleMillis = max(1, idleMillis)
    }
}
