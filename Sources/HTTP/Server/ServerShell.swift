import Foundation
import Support
import Synchronization

/// Starting and stopping the loops of one server, whatever its connections speak: what `HTTPServer` and
/// `HTTPSServer` are around their own checks, statistics and log lines.
///
/// idle → starting → running → shuttingDown → stopped; a start that fails goes back to idle.
final class ServerShell<Connection: LoopConnection>: Sendable {
    private enum State {
        case idle
        case starting
        case running(loops: [ServerLoop<Connection>], context: Connection.Context)
        case shuttingDown
        case stopped
    }

    private let state = Mutex(State.idle)

    /// Makes the context (`makeContext` may throw: a TLS identity that does not load), binds, listens and starts the
    /// loops. Returns the context and the bound address, with the kernel's port when port 0 was asked for.
    func start(
        _ configuration: HTTPServerConfiguration, makeContext: () throws -> Connection.Context
    ) throws -> (context: Connection.Context, loops: Int, address: ListenAddress) {
        try state.withLock { state in
            guard case .idle = state else { throw HTTPServerError("the server has already been started") }
            state = .starting
        }
        do {
            guard configuration.eventLoops >= 1 else { throw HTTPServerError("eventLoops must be at least 1") }
            let context = try makeContext()
            let (listener, bound) = try Socket.listen(on: configuration.address, backlog: configuration.backlog)
            let loops: [ServerLoop<Connection>]
            do {
                loops = try (0..<configuration.eventLoops).map { try ServerLoop(index: $0, context: context) }
                try loops[0].own(listener: listener, peers: loops)
            } catch {
                close(listener)
                if case .unix(let path) = configuration.address { Socket.unlinkSocketFile(path) }
                throw error
            }
            for loop in loops {
                let name = "herald-\(Connection.protocolName)-\(loop.index)"
                let thread = Thread {
                    Thread.current.name = name  // from the thread itself: the kernel sees it
                    loop.run()
                }
                thread.start()
            }
            state.withLock { $0 = .running(loops: loops, context: context) }
            return (context, loops.count, bound)
        } catch {
            state.withLock { $0 = .idle }
            throw error
        }
    }

    /// Stops accepting (a Unix socket's file is removed) and tells every loop to drain, waits until every connection
    /// left only lingers after its last response or `gracePeriod` seconds have passed, then closes everything.
    /// Blocks until the loop threads have ended. Returns the connections closed unfinished, nil when the server was
    /// not running.
    func shutdown(gracePeriod: Double) -> Int? {
        let running: (loops: [ServerLoop<Connection>], context: Connection.Context)? = state.withLock { state in
            switch state {
            case .running(let loops, let context):
                state = .shuttingDown
                return (loops, context)
            case .idle:
                state = .stopped
                return nil
            case .starting, .shuttingDown, .stopped:
                return nil
            }
        }
        guard let running else { return nil }
        let server = running.context.server
        if case .unix(let path) = server.configuration.address { Socket.unlinkSocketFile(path) }
        for loop in running.loops { loop.post(.drain) }
        // Done when every connection left has had its last response written and only lingers.
        func unfinished() -> Int {
            server.openConnections.load(ordering: .relaxed) - server.lingeringConnections.load(ordering: .relaxed)
        }
        let deadline = Clock.monotonicSeconds() + max(0, gracePeriod)
        while unfinished() > 0 && Clock.monotonicSeconds() < deadline {
            usleep(5_000)
        }
        let abandoned = unfinished()
        for loop in running.loops { loop.post(.stop) }
        for loop in running.loops { loop.waitUntilFinished() }
        state.withLock { $0 = .stopped }
        return abandoned
    }
}
