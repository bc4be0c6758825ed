import Synchronization

/// What every event loop of one server shares: the configuration, the handler, and the connection count
/// that `maxConnections` and graceful shutdown read.
final class ServerContext: Sendable {
    let configuration: HTTPServerConfiguration
    let handler: any HTTPHandler
    let isTCP: Bool
    /// Connections accepted since the start.
    let accepted = Atomic<Int>(0)
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

    /// Decides from a head alone, before any of its body is read or `100 Continue` is sent: the handler's own answer,
    /// 413 over the body limit, or 503 when the body budget cannot hold the body. An admitted body's length is
    /// reserved from the budget (`reserved`, 0 when nothing was) until the handler answers it.
    func admit(_ head: HTTPRequest, bodyLength: Int) -> (answer: HTTPResponse?, reserved: Int) {
        if let answer = handler.admit(head) { return (answer, 0) }
        guard bodyLength > 0 else { return (nil, 0) }
        let limit = handler.bodyLimit(method: head.method, path: head.path)
        if bodyLength > limit { return (HTTPRequestError.bodyTooLarge(limit: limit).response, 0) }
        guard reserveBodyBytes(bodyLength) else { return (HTTPRequestError.bodyBudgetExhausted.response, 0) }
        return (nil, bodyLength)
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
