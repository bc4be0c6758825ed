import Dispatch
import Glibc
import Posix
import Support
import Synchronization

/// One thread of an `HTTPSServer`: a level-triggered `Poller`, its `WakeUp`, and the TLS connections assigned to
/// it. The first loop also owns the listening socket and hands accepted connections round-robin to all loops.
///
/// Everything below `// MARK: - Loop thread only` is touched by the loop's own thread alone; other threads reach the
/// loop through `post` (its `LoopInbox`), as `EventLoop`'s do.
final class TLSLoop: @unchecked Sendable {
    enum Task: Sendable {
        case adopt(fd: CInt)
        /// `stream` is the HTTP/2 stream id, or the number of the HTTP/1.1 request on its connection.
        case respond(fd: CInt, connectionID: UInt64, stream: Int32, response: HTTPResponse)
        /// Graceful shutdown: stop accepting, tell HTTP/2 clients GOAWAY, close HTTP/1.1 connections when idle.
        case drain
        /// Close whatever is left and leave the thread.
        case stop
    }

    let index: Int
    let context: HTTPSServerContext
    let poller: Poller
    private let inbox: LoopInbox<Task>
    private let finished = DispatchSemaphore(value: 0)

    init(index: Int, context: HTTPSServerContext) throws(IOError) {
        self.index = index
        self.context = context
        poller = try Poller()
        inbox = try LoopInbox()
        guard poller.watch(inbox.wakeUp.fd, .read) else { throw IOError(errnoCode: errno, function: "epoll_ctl") }
    }

    // MARK: - Any thread

    /// Queues `task` for the loop. Returns false once the loop has stopped.
    @discardableResult
    func post(_ task: Task) -> Bool {
        inbox.post(task)
    }

    func waitUntilFinished() {
        finished.wait()
    }

    // MARK: - Loop thread only

    /// Indexed by file descriptor.
    private var connections: [TLSConnection?] = []
    private var liveConnections = 0
    private var nextConnectionID: UInt64 = 0
    private var dirty: [TLSConnection] = []
    private var spareDirty: [TLSConnection] = []
    private(set) var now = Clock.monotonicSeconds()
    private(set) var draining = false
    private var running = true
    private var nextTick = 0.0
    /// Plaintext TLS decrypted lands here before the protocol takes it.
    private(set) var readBuffer = UnsafeMutableRawBufferPointer(start: nil, count: 0)

    private var listener: CInt = -1
    private var peers: [TLSLoop] = []
    private var nextPeer = 0
    private var acceptPausedUntil: Double?

    static let tickInterval = 0.25
    static let readBufferSize = 64 * 1024

    /// Makes this loop the acceptor. Called before the threads start.
    func own(listener: CInt, peers: [TLSLoop]) throws(IOError) {
        self.listener = listener
        self.peers = peers
        guard poller.watch(listener, .read) else { throw IOError(errnoCode: errno, function: "epoll_ctl") }
    }

    func run() {
        inbox.enter()
        readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 16)
        defer {
            readBuffer.deallocate()
            inbox.leave()
            finished.signal()
        }
        while running {
            let ready = poller.wait(timeoutMillis: Int32(Self.tickInterval * 1000))
            now = Clock.monotonicSeconds()
            for (fd, readiness) in ready {
                if fd == inbox.wakeUp.fd {
                    inbox.performMailbox(perform)
                } else if fd == listener {
                    acceptConnections()
                } else if fd >= 0 && Int(fd) < connections.count, let connection = connections[Int(fd)] {
                    connection.handle(readiness)
                }
                settle()
            }
            if now >= nextTick {
                nextTick = now + Self.tickInterval
                tick()
            }
        }
        stopNow()
    }

    /// Delivers what handlers answered on this thread and writes what is waiting, until neither is left.
    private func settle() {
        while inbox.hasLocal || !dirty.isEmpty {
            inbox.performLocal(perform)
            swap(&dirty, &spareDirty)
            for connection in spareDirty { connection.flushIfDirty() }
            spareDirty.removeAll(keepingCapacity: true)
        }
    }

    private func perform(_ task: Task) {
        switch task {
        case .respond(let fd, let connectionID, let stream, let response):
            // For a connection that closed meanwhile (or whose descriptor was reused) it is dropped.
            guard Int(fd) < connections.count, let connection = connections[Int(fd)], connection.id == connectionID
            else { return }
            connection.deliver(response, to: stream)
        case .adopt(let fd):
            adopt(fd)
        case .drain:
            beginDrain()
        case .stop:
            running = false
        }
    }

    /// Called by a connection that has output to write at the end of this step.
    func markDirty(_ connection: TLSConnection) {
        dirty.append(connection)
    }

    /// Hands a request to the handler; the responder gives `reservedBodyBytes` back to the body budget when the
    /// handler answers.
    func dispatch(_ request: HTTPRequest, stream: Int32, reservedBodyBytes: Int, on connection: TLSConnection) {
        let responder = TLSResponder(
            loop: self, fd: connection.fd, connectionID: connection.id, stream: stream,
            reservedBodyBytes: reservedBodyBytes)
        context.server.handler.handle(request, responder: responder)
    }

    // MARK: - Connections

    private func adopt(_ fd: CInt) {
        if draining {
            close(fd)
            context.server.openConnections.subtract(1, ordering: .relaxed)
            return
        }
        nextConnectionID &+= 1
        guard let connection = TLSConnection(fd: fd, id: nextConnectionID, loop: self) else {
            Log.warn("https cannot start TLS on a connection", ["reason": .string(openSSLFailure("SSL_new"))])
            close(fd)
            context.server.openConnections.subtract(1, ordering: .relaxed)
            return
        }
        while connections.count <= Int(fd) { connections.append(nil) }
        connections[Int(fd)] = connection
        liveConnections += 1
        connection.start()
    }

    /// Forgets a connection whose descriptor the connection has just closed.
    func forget(_ connection: TLSConnection) {
        guard Int(connection.fd) < connections.count, connections[Int(connection.fd)] === connection else { return }
        connections[Int(connection.fd)] = nil
        liveConnections -= 1
        context.server.openConnections.subtract(1, ordering: .relaxed)
    }

    private func tick() {
        if let until = acceptPausedUntil, now >= until {
            acceptPausedUntil = nil
            acceptConnections()
        }
        guard liveConnections > 0 else { return }
        for fd in connections.indices {
            connections[fd]?.tick(now: now)
        }
        settle()
    }

    private func beginDrain() {
        draining = true
        if listener >= 0 {
            poller.remove(listener)
            close(listener)
            listener = -1
        }
        for fd in connections.indices {
            connections[fd]?.drain()
        }
        settle()
    }

    private func stopNow() {
        if listener >= 0 {
            poller.remove(listener)
            close(listener)
            listener = -1
        }
        for fd in connections.indices {
            connections[fd]?.close()
        }
        connections = []
        peers = []
        for case .adopt(let fd) in inbox.close() {
            close(fd)
            context.server.openConnections.subtract(1, ordering: .relaxed)
        }
    }

    // MARK: - Accepting

    private func acceptConnections() {
        while listener >= 0 && acceptPausedUntil == nil {
            let fd: CInt
            do {
                switch try Linux.accept(listener) {
                case .wouldBlock: return
                case .processed(let accepted): fd = accepted
                }
            } catch {
                switch error.errnoCode {
                case ECONNABORTED, EPROTO, EPERM:
                    continue
                default:
                    // Out of descriptors or memory, most likely: the listener stays readable, so a later tick
                    // tries again.
                    Log.warn("https accept paused", ["error": .string("\(error)")])
                    acceptPausedUntil = now + 0.1
                    return
                }
            }
            place(fd)
        }
    }

    /// Over `maxConnections` a connection is closed at once: an answer would need a TLS handshake first.
    private func place(_ fd: CInt) {
        if context.server.isTCP { Socket.setNoDelay(fd) }
        context.accepted.add(1, ordering: .relaxed)
        let open = context.server.openConnections.wrappingAdd(1, ordering: .relaxed).newValue
        guard open <= context.server.configuration.maxConnections else {
            context.server.openConnections.subtract(1, ordering: .relaxed)
            close(fd)
            return
        }
        let target = peers[nextPeer]
        nextPeer = (nextPeer + 1) % peers.count
        if target === self {
            adopt(fd)
        } else if !target.post(.adopt(fd: fd)) {
            close(fd)
            context.server.openConnections.subtract(1, ordering: .relaxed)
        }
    }
}
