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

    init(configuration: HTTPServerConfiguration, handler: any HTTPHandler) {
        self.configuration = configuration
        self.handler = handler
        if case .tcp = configuration.address { isTCP = true } else { isTCP = false }
    }
}
