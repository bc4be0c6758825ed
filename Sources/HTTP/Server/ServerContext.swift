import Synchronization

/// What every event loop of one server shares: the configuration, the handler, and the connection count
/// that `maxConnections` and graceful shutdown read.
final class ServerContext: Sendable {
    let configuration: HTTPServerConfiguration
    let handler: any HTTPHandler
    let isTCP: Bool
    /// Open client connections, counted from accept to close (lingering closes included).
    let openConnections = Atomic<Int>(0)
    /// Of those, connections whose last response is written and that only wait for the client to close.
    let lingeringConnections = Atomic<Int>(0)
    /// Of `configuration.maxBodyBytesInFlight`, the bytes reserved by bodies being read or in the handler.
    let reservedBodyBytes = Atomic<Int>(0)

    init(configuration: HTTPServerConfiguration, handler: any HTTPHandler) {
        self.configuration = configuration
        self.handler = handler
        if case .tcp = configuration.address { isTCP = true } else { isTCP = false }
    }

    /// Reserves `count` bytes of the body budget; false, reserving nothing, when they do not fit.
    func reserveBodyBytes(_ count: Int) -> Bool {
        var current = reservedBodyBytes.load(ordering: .acquiring)
        while true {
            guard count <= configuration.maxBodyBytesInFlight - current else { return false }
            let (exchanged, original) = reservedBodyBytes.compareExchange(
                expected: current, desired: current + count, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
    }

    func releaseBodyBytes(_ count: Int) {
        guard count > 0 else { return }
        reservedBodyBytes.subtract(count, ordering: .releasing)
    }
}
