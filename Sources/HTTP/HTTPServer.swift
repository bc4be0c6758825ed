import Support

/// An HTTP/1.1 server on POSIX sockets and epoll, with its own event-loop threads.
///
/// ```swift
/// let server = HTTPServer(configuration: .init(address: .tcp(host: "127.0.0.1", port: 0)), handler: app)
/// let bound = try server.start()      // .tcp(host: "127.0.0.1", port: 41234)
/// ...
/// server.shutdown(gracePeriod: 10)    // blocks until every connection is closed
/// ```
///
/// The handler is called on an event-loop thread and answers through its responder from any thread.
/// The loop threads run until `shutdown`; call it before letting go of a started server, and never from
/// inside `handle` (it waits for the loop that would be running it).
public final class HTTPServer: Sendable {
    private let context: ServerContext
    private let shell = ServerShell<Connection>()

    public init(configuration: HTTPServerConfiguration, handler: any HTTPHandler) {
        context = ServerContext(configuration: configuration, handler: handler)
    }

    /// Open client connections right now.
    public var connectionCount: Int {
        context.openConnections.load(ordering: .relaxed)
    }

    /// Bytes of the body budget (`maxBodyBytesInFlight`) held right now by bodies being read or handled.
    public var reservedBodyBytes: Int {
        context.reservedBodyBytes.load(ordering: .relaxed)
    }

    /// Binds, listens and starts the event loops. Returns the bound address, with the kernel's port when
    /// port 0 was asked for.
    public func start() throws -> ListenAddress {
        let started = try shell.start(context.configuration) { context }
        Log.info("http listening", [
            "address": .string(started.address.description), "loops": .int(Int64(started.loops)),
        ])
        return started.address
    }

    /// Stops accepting (a Unix socket's file is removed), closes idle keep-alive connections, lets requests
    /// already in the handler get their response written with `Connection: close`, then closes everything
    /// when nothing is left or `gracePeriod` seconds have passed. Blocks until the loop threads have ended.
    public func shutdown(gracePeriod: Double) {
        guard let abandoned = shell.shutdown(gracePeriod: gracePeriod) else { return }
        Log.info("http stopped", ["closed_unfinished": .int(Int64(abandoned))])
    }
}
