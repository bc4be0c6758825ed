import Dispatch
import Glibc
import Posix
import Support
import Synchronization

/// What a `ServerLoop` runs: one accepted socket, HTTP/1.1 in the clear (`Connection`) or over TLS
/// (`TLSConnection`). Driven by its loop's thread only.
protocol LoopConnection: AnyObject, SendableMetatype {
    associatedtype Context: LoopContext
    /// "http" or "https", for log messages and thread names.
    static var protocolName: String { get }
    /// Whether a connection over `maxConnections` is answered (503) before it closes; TLS closes it at once, as an
    /// answer would need a handshake first.
    static var answersOverLimit: Bool { get }

    /// A connection for `fd`, or nil (logged) when it cannot start; `counted` is false for one only told 503.
    init?(fd: CInt, id: UInt64, loop: ServerLoop<Self>, counted: Bool)
    var fd: CInt { get }
    var id: UInt64 { get }
    var counted: Bool { get }
    /// Registered with the loop: watch the socket and begin (a TLS handshake, or the 503 of one over the limit).
    func start()
    /// epoll reported `events` for the socket.
    func handle(events: UInt32)
    /// The handler's answer; `stream` is an HTTP/2 stream id or the number of an HTTP/1.1 request over TLS.
    func deliver(_ response: HTTPResponse, to stream: Int32)
    func flushIfDirty()
    func tick(now: Double)
    /// Graceful shutdown has begun.
    func drain()
    /// Closes the socket and calls the loop's `forget`.
    func close()
}

/// What every loop of one server shares; `server` holds the handler, limits and connection counts.
protocol LoopContext: AnyObject, Sendable {
    var server: ServerContext { get }
}

extension ServerContext: LoopContext {
    var server: ServerContext { self }
}

/// What reaches a `ServerLoop` from other threads (and from its own, for a handler that answers inside `handle`).
/// Not nested in the generic loop: a responder, called through `any HTTPResponder`, stays free of generic code.
enum LoopTask: Sendable {
    case adopt(fd: CInt)
    /// `stream` is an HTTP/2 stream id, the number of an HTTP/1.1 request over TLS, or 0.
    case respond(fd: CInt, connectionID: UInt64, stream: Int32, response: HTTPResponse)
    /// Graceful shutdown has begun: stop accepting, close idle connections, close after each response.
    case drain
    /// Close whatever is left and leave the thread.
    case stop
}

/// One thread, one epoll set, and the connections assigned to it: the shell every `HTTPServer` and `HTTPSServer`
/// loop is, whatever its connections speak.
///
/// Everything below `// MARK: - Loop thread only` is touched by the loop's own thread and nothing else;
/// other threads reach the loop through `post` (its `LoopInbox`: a mailbox, and a wake-up through an `eventfd`).
/// The first loop also owns the listening socket and hands accepted connections round-robin to all loops.
/// Cleartext connections watch their sockets edge-triggered, once (`watchEdges`); TLS ones level-triggered, for
/// what OpenSSL needs next (`watch`).
final class ServerLoop<Connection: LoopConnection>: @unchecked Sendable {
    typealias Task = LoopTask

    let index: Int
    let context: Connection.Context
    private let epoll: CInt
    let inbox: LoopInbox<Task>
    private let finished = DispatchSemaphore(value: 0)

    init(index: Int, context: Connection.Context) throws(IOError) {
        self.index = index
        self.context = context
        epoll = try Linux.epollCreate()
        do {
            inbox = try LoopInbox()
            try Linux.epollAdd(epoll, inbox.wakeUp.fd, events: Linux.epollIn | Linux.epollEdgeTriggered)
        } catch {
            close(epoll)
            throw error
        }
    }

    /// Responders post to the inbox, which keeps the wake-up open as long as they can.
    deinit {
        close(epoll)
    }

    // MARK: - Any thread

    /// Queues `task` for the loop. A response posted from the loop's own thread (a handler answering
    /// inside `handle`) skips the lock and the wake-up. Returns false once the loop has stopped.
    @discardableResult
    func post(_ task: Task) -> Bool {
        inbox.post(task)
    }

    /// Blocks until the loop's thread has left `run`. Called once, by the server's shutdown.
    func waitUntilFinished() {
        finished.wait()
    }

    // MARK: - Loop thread only

    /// Indexed by file descriptor.
    private var connections: [Connection?] = []
    private var liveConnections = 0
    private var nextConnectionID: UInt64 = 0
    private var dirty: [Connection] = []
    private var spareDirty: [Connection] = []
    private(set) var now = Clock.monotonicSeconds()
    private(set) var draining = false
    private var running = true
    private var nextTick = 0.0
    /// Bytes read from a socket (decrypted, for TLS) land here before the protocol copies what it needs.
    private(set) var readBuffer = UnsafeMutableRawBufferPointer(start: nil, count: 0)

    // Acceptor state, used by the loop that owns the listener.
    private var listener: CInt = -1
    private var peers: [ServerLoop] = []
    private var nextPeer = 0
    private var acceptPausedUntil: Double?
    private var rejecting = 0

    static var tickInterval: Double { 0.25 }
    static var readBufferSize: Int { 64 * 1024 }
    /// Connections being answered 503 at once; beyond this an over-limit connection is just closed.
    static var maxRejecting: Int { 64 }

    /// Makes this loop the acceptor. Called before the threads start.
    func own(listener: CInt, peers: [ServerLoop]) throws(IOError) {
        self.listener = listener
        self.peers = peers
        try Linux.epollAdd(epoll, listener, events: Linux.epollIn | Linux.epollEdgeTriggered)
    }

    /// Watches a connection's socket, edge-triggered, for everything at once, for as long as it is open.
    func watchEdges(_ fd: CInt) throws(IOError) {
        try Linux.epollAdd(
            epoll, fd, events: Linux.epollIn | Linux.epollOut | Linux.epollRdHup | Linux.epollEdgeTriggered)
    }

    /// Watches a connection's socket, level-triggered, for `interest`; nil takes it out of the set.
    func watch(_ fd: CInt, _ interest: Poller.Interest?) {
        guard let interest else {
            Linux.epollRemove(epoll, fd)
            return
        }
        if !Linux.epollSet(epoll, fd, events: interest.events) {
            Log.warn("\(Connection.protocolName) epoll_ctl failed", ["errno": .int(Int64(errno))])
        }
    }

    func run() {
        inbox.enter()
        readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 16)
        let capacity = 256
        let events = Linux.allocateEvents(capacity: capacity)
        defer {
            events.deallocate()
            readBuffer.deallocate()
            inbox.leave()
            finished.signal()
        }
        while running {
            let count: Int
            do {
                count = try Linux.epollWait(epoll, events, capacity: capacity, timeoutMillis: 250)
            } catch {
                Log.error("\(Connection.protocolName) event loop cannot wait", ["error": .string("\(error)")])
                break
            }
            now = Clock.monotonicSeconds()
            var woken = false
            for slot in 0..<count {
                let (flags, fd) = Linux.event(in: events, at: slot)
                if fd == inbox.wakeUp.fd {
                    woken = true
                } else if fd == listener {
                    acceptConnections()
                } else if fd >= 0 && Int(fd) < connections.count, let connection = connections[Int(fd)] {
                    connection.handle(events: flags)
                }
                settle()
            }
            if woken { drainMailbox() }
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

    private func drainMailbox() {
        inbox.performMailbox(perform)
        settle()
    }

    private func perform(_ task: Task) {
        switch task {
        case .respond(let fd, let connectionID, let stream, let response):
            // A response for a connection that closed meanwhile (or whose descriptor was reused) is dropped.
            guard Int(fd) < connections.count, let connection = connections[Int(fd)],
                  connection.id == connectionID
            else { return }
            connection.deliver(response, to: stream)
        case .adopt(let fd):
            adopt(fd, counted: true)
        case .drain:
            beginDrain()
        case .stop:
            running = false
        }
    }

    /// Called by a connection that has output to write at the end of this step.
    func markDirty(_ connection: Connection) {
        dirty.append(connection)
    }

    /// Hands a request to the handler; its responder gives `reservedBodyBytes` back to the body budget when
    /// the handler answers.
    func dispatch(_ request: HTTPRequest, stream: Int32, reservedBodyBytes: Int, on connection: Connection) {
        let responder = LoopResponder(
            inbox: inbox, server: context.server, fd: connection.fd, connectionID: connection.id, stream: stream,
            reservedBodyBytes: reservedBodyBytes)
        context.server.handler.handle(request, responder: responder)
    }

    // MARK: - Connections

    private func adopt(_ fd: CInt, counted: Bool) {
        if draining && counted {
            close(fd)
            context.server.openConnections.subtract(1, ordering: .relaxed)
            return
        }
        nextConnectionID &+= 1
        guard let connection = Connection(fd: fd, id: nextConnectionID, loop: self, counted: counted) else {
            close(fd)
            if counted { context.server.openConnections.subtract(1, ordering: .relaxed) }
            return
        }
        while connections.count <= Int(fd) { connections.append(nil) }
        connections[Int(fd)] = connection
        liveConnections += 1
        if !counted { rejecting += 1 }
        connection.start()
    }

    /// Forgets a connection whose descriptor the connection has just closed.
    func forget(_ connection: Connection) {
        guard Int(connection.fd) < connections.count, connections[Int(connection.fd)] === connection else { return }
        connections[Int(connection.fd)] = nil
        liveConnections -= 1
        if connection.counted {
            context.server.openConnections.subtract(1, ordering: .relaxed)
        } else {
            rejecting -= 1
        }
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
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    // Out of descriptors or memory: the listener stays readable, so try again on a later tick.
                    Log.warn("\(Connection.protocolName) accept paused", ["error": .string("\(error)")])
                    acceptPausedUntil = now + 0.1
                    return
                default:
                    Log.error("\(Connection.protocolName) accept failed", ["error": .string("\(error)")])
                    acceptPausedUntil = now + 0.1
                    return
                }
            }
            place(fd)
        }
    }

    private func place(_ fd: CInt) {
        let server = context.server
        if server.isTCP { Socket.setNoDelay(fd) }
        server.accepted.add(1, ordering: .relaxed)
        let open = server.openConnections.wrappingAdd(1, ordering: .relaxed).newValue
        guard open <= server.configuration.maxConnections else {
            server.openConnections.subtract(1, ordering: .relaxed)
            if Connection.answersOverLimit && rejecting < Self.maxRejecting {
                adopt(fd, counted: false)
            } else {
                close(fd)
            }
            return
        }
        let target = peers[nextPeer]
        nextPeer = (nextPeer + 1) % peers.count
        if target === self {
            adopt(fd, counted: true)
        } else if !target.post(.adopt(fd: fd)) {
            close(fd)
            server.openConnections.subtract(1, ordering: .relaxed)
        }
    }
}
