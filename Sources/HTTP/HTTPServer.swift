import Dispatch
import Foundation
import Support
import Synchronization

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
    private enum State {
        case idle
        case starting
        case running(loops: [EventLoop], address: ListenAddress)
        case shuttingDown
        case stopped
    }

    private let context: ServerContext
    private let state = Mutex(State.idle)

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
        try state.withLock { state in
            guard case .idle = state else { throw HTTPServerError("the server has already been started") }
            state = .starting
        }
        let configuration = context.configuration
        do {
            guard configuration.eventLoops >= 1 else { throw HTTPServerError("eventLoops must be at least 1") }
            let (listener, bound) = try Socket.listen(on: configuration.address, backlog: configuration.backlog)
            let loops: [EventLoop]
            do {
                loops = try (0..<configuration.eventLoops).map { try EventLoop(index: $0, context: context) }
                try loops[0].own(listener: listener, peers: loops)
            } catch {
                close(listener)
                if case .unix(let path) = configuration.address { Socket.unlinkSocketFile(path) }
                throw error
            }
            for loop in loops {
                let thread = Thread {
                    Thread.current.name = "herald-http-\(loop.index)"  // from the thread itself: the kernel sees it
                    loop.run()
                }
                thread.start()
            }
            state.withLock { $0 = .running(loops: loops, address: bound) }
            Log.info("http listening", ["address": .string(bound.description), "loops": .int(Int64(loops.count))])
            return bound
        } catch {
            state.withLock { $0 = .idle }
            throw error
        }
    }

    /// Stops accepting (a Unix socket's file is removed), closes idle keep-alive connections, lets requests
    /// already in the handler get their response written with `Connection: close`, then closes everything
    /// when nothing is left or `gracePeriod` seconds have passed. Blocks until the loop threads have ended.
    public func shutdown(gracePeriod: Double) {
        let running: (loops: [EventLoop], address: ListenAddress)? = state.withLock { state in
            switch state {
            case .running(let loops, let address):
                state = .shuttingDown
                return (loops, address)
            case .idle:
                state = .stopped
                return nil
            case .starting, .shuttingDown, .stopped:
                return nil
            }
        }
        guard let running else { return }
        if case .unix(let path) = running.address { Socket.unlinkSocketFile(path) }
        for loop in running.loops { loop.post(.drain) }
        // Done when every connection left has had its last response written and only lingers.
        func unfinished() -> Int {
            context.openConnections.load(ordering: .relaxed) - context.lingeringConnections.load(ordering: .relaxed)
        }
        let deadline = Clock.monotonicSeconds() + max(0, gracePeriod)
        while unfinished() > 0 && Clock.monotonicSeconds() < deadline {
            usleep(5_000)
        }
        let abandoned = unfinished()
        for loop in running.loops { loop.post(.stop) }
        for loop in running.loops { loop.waitUntilFinished() }
        state.withLock { $0 = .stopped }
        Log.info("http stopped", ["closed_unfinished": .int(Int64(abandoned))])
    }
}
