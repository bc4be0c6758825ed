import Synchronization

/// What happened to a pool's connections, counted by its loop thread and read from any thread (for `/metrics`).
public struct TransportStatistics: Sendable, Equatable {
    /// Connections opened (a socket created), over the pool's life.
    public var opened = 0
    /// Connections closed, by cause: `connect`, `reset`, `goaway`, `ping_timeout`, `idle`, `protocol_error`,
    /// `shutdown`.
    public var closed: [String: Int] = [:]
    /// PINGs sent to find out whether a connection is alive.
    public var pings = 0
    /// Requests that were on a connection when it was lost: they may have reached the server, and fail as `reset`
    /// for the caller to send again.
    public var requestsLost = 0

    public init() {}
}

/// The counters behind `TransportStatistics`: kept by the loop thread on rare events (a connection opened or
/// closed, a PING), read by `/metrics`.
final class HTTP2Counters: Sendable {
    private let counts = Mutex(TransportStatistics())

    func opened() { counts.withLock { $0.opened += 1 } }
    func closed(_ cause: HTTP2CloseCause) { counts.withLock { $0.closed[cause.label, default: 0] += 1 } }
    func pinged() { counts.withLock { $0.pings += 1 } }
    func lostRequests(_ count: Int) {
        guard count > 0 else { return }
        counts.withLock { $0.requestsLost += count }
    }

    var snapshot: TransportStatistics { counts.withLock { $0 } }
}
