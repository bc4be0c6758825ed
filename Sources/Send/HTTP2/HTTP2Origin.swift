/// One host and port the pool talks to: its connections, and the requests waiting for a stream on one of them.
/// Owned by the loop thread; the loop forgets it once it has neither (and nothing of it is left to remember).
final class HTTP2Origin {
    /// `HTTPSTarget.origin`: its key in the loop's table.
    let key: String
    let host: String
    let port: Int
    var connections: [HTTP2Connection] = []
    /// Requests not on a stream yet, oldest first (a refused one goes back to the front).
    var waiting = FIFO<HTTP2Stream>()
    /// Until then (monotonic seconds) requests that no HTTP/2 connection has room for go to the HTTP/1.1 pool: the
    /// server chose HTTP/1.1 in a recent handshake.
    var http1Until = 0.0
    /// No new connection before this (monotonic seconds): one just failed.
    var noConnectionsBefore = 0.0
    /// How many connections may be opening at once.
    var ramp: ConnectionRamp
    /// The request headers last encoded, reused while they stay the same (every request of one app
    /// with one access token).
    let requestHeaders = HTTP2RequestHeaders()

    /// How long a server that chose HTTP/1.1 is sent HTTP/1.1 before h2 is offered again.
    static let http1Seconds = 60.0

    init(_ target: HTTPSTarget, maxConnections: Int) {
        key = target.origin
        host = target.host
        port = target.port
        ramp = ConnectionRamp(ceiling: maxConnections)
    }

    /// Nothing of it is worth keeping at `now`: no connection, nothing waiting, no pause or HTTP/1.1 spell running.
    func isForgettable(now: Double) -> Bool {
        connections.isEmpty && waiting.isEmpty && http1Until <= now && noConnectionsBefore <= now
    }

    /// Connections still resolving, connecting, in their TLS handshake or waiting for the server's SETTINGS.
    var opening: Int {
        connections.reduce(0) { $0 + ($1.isOpening ? 1 : 0) }
    }
}
