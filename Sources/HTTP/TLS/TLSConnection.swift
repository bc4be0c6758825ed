import Glibc
import Posix
import Support
import TLS

/// One client connection of an `HTTPSServer`: the socket, the TLS stream on it (`TLSStream`), and, once the handshake
/// is done, the protocol ALPN chose: HTTP/2 (`HTTP2ServerSession`) or HTTP/1.1 (`HTTP1OverTLS`, through the same
/// `HTTPRequestParser` as the cleartext server). Driven by its loop's thread only.
///
/// handshaking → http2 | http1 → closed. A failed handshake, a protocol error or a broken socket closes this
/// connection and nothing else.
///
/// Output is plaintext gathered in the stream's `output` until the loop's turn ends, then written in as few
/// `SSL_write`s as it fits in.
final class TLSConnection: LoopConnection {
    enum Phase {
        case handshaking(since: Double)
        case http2(HTTP2ServerSession)
        case http1(HTTP1OverTLS)
        case closed
    }

    let fd: CInt
    let id: UInt64
    /// The loop owns its connections and outlives them.
    unowned(unsafe) let loop: ServerLoop<TLSConnection>
    private(set) var phase: Phase
    /// TLS over the socket; its `output` is what the protocol has to send.
    let tls: TLSStream
    /// Close once `output` is written (HTTP/1.1 `Connection: close`, an error answered).
    private var closesAfterWrite = false
    private var isDirty = false
    /// Reading stopped: the output backed up (the write that drains it reads again), or HTTP/1.1 has a request in
    /// hand and enough buffered behind it (its answer reads again). The socket is not watched for reading meanwhile,
    /// or level-triggered epoll would wake the loop for it over and over.
    private var readPaused = false
    private var watching: Poller.Interest?
    /// Monotonic seconds of the last bytes read or written.
    private(set) var lastActivity: Double
    private var writeBlockedSince: Double?

    /// Output beyond this stops reading (and, for HTTP/2, taking frames from the session) until the client reads.
    static let outputLimit = 1 << 20

    typealias Context = HTTPSServerContext
    static var protocolName: String { "https" }
    static var answersOverLimit: Bool { false }
    var counted: Bool { true }

    init?(fd: CInt, id: UInt64, loop: ServerLoop<TLSConnection>, counted: Bool) {
        guard let tls = TLSStream(context: loop.context.tls.pointer, fd: fd, role: .server) else {
            Log.warn("https cannot start TLS on a connection", ["reason": .string(OpenSSLError.reason("SSL_new"))])
            return nil
        }
        self.fd = fd
        self.id = id
        self.loop = loop
        self.tls = tls
        phase = .handshaking(since: loop.now)
        lastActivity = loop.now
    }

    func start() {
        handshake()
    }

    var isClosed: Bool {
        if case .closed = phase { return true }
        return false
    }

    // MARK: - Events from the loop

    func handle(events: UInt32) {
        let readiness = Poller.Readiness(epollEvents: events)
        switch phase {
        case .handshaking:
            handshake()
        case .http2, .http1:
            if tls.shouldWrite(readiness) { flush() }
            if !isClosed && tls.shouldRead(readiness) { read() }
        case .closed:
            break
        }
    }

    /// The handler's response to `stream`.
    func deliver(_ response: HTTPResponse, to stream: Int32) {
        switch phase {
        case .http2(let session): session.deliver(response, to: stream)
        case .http1(let exchange): exchange.deliver(response, number: stream)
        case .handshaking, .closed: break
        }
    }

    func tick(now: Double) {
        let configuration = loop.context.server.configuration
        if let since = writeBlockedSince, now - since > configuration.idleTimeout {
            // The client stopped reading what it is sent.
            close()
            return
        }
        switch phase {
        case .handshaking(let since) where now - since > configuration.headerTimeout:
            loop.context.handshakeFailures.add(1, ordering: .relaxed)
            Log.debug("https handshake timed out", ["connection": .int(Int64(id))])
            close()
        case .http2(let session):
            if session.openStreams == 0 && tls.pendingOutput == 0 && now - lastActivity > configuration.idleTimeout {
                session.terminate()
                markDirty()
            } else {
                session.tick(now: now, configuration: configuration)
            }
        case .http1(let exchange):
            exchange.tick(now: now)
        default:
            break
        }
    }

    /// Graceful shutdown: HTTP/2 clients get GOAWAY (streams already taken are still answered); an idle HTTP/1.1
    /// connection closes, a busy one after its response.
    func drain() {
        switch phase {
        case .handshaking: close()
        case .http2(let session):
            session.goAway()
            markDirty()
        case .http1(let exchange): exchange.drain()
        case .closed: break
        }
    }

    func close() {
        switch phase {
        case .http2(let session): session.release()
        case .http1(let exchange): exchange.release()
        case .handshaking: break
        case .closed: return
        }
        tls.close()
        phase = .closed
        loop.watch(fd, nil)
        Glibc.close(fd)
        loop.forget(self)
    }

    // MARK: - Handshake

    private func handshake() {
        switch tls.handshake() {
        case .established:
            established()
        case .inProgress:
            watch(tls.interest(reading: true))
        case .failed(let reason):
            // A client that does not trust the certificate, speaks no TLS, or went away: only this connection ends.
            loop.context.handshakeFailures.add(1, ordering: .relaxed)
            Log.debug("https handshake failed", ["connection": .int(Int64(id)), "reason": .string(reason)])
            close()
        }
    }

    /// TLS is up: HTTP/2 when ALPN chose `h2` (the server's SETTINGS go out at once, RFC 9113 §3.4), else HTTP/1.1.
    /// What the client sent with its last handshake flight may already sit in OpenSSL's buffer, so it is read now.
    private func established() {
        let configuration = loop.context.server.configuration
        if tls.speaksHTTP2 {
            guard let session = HTTP2ServerSession(
                connection: self, maxConcurrentStreams: loop.context.maxConcurrentStreams,
                maxHeaderBytes: configuration.maxHeaderBytes)
            else {
                Log.warn("https cannot start an HTTP/2 session", ["connection": .int(Int64(id))])
                close()
                return
            }
            loop.context.http2Connections.add(1, ordering: .relaxed)
            phase = .http2(session)
            markDirty()
        } else {
            loop.context.http1Connections.add(1, ordering: .relaxed)
            phase = .http1(HTTP1OverTLS(connection: self, maxHeaderBytes: configuration.maxHeaderBytes))
        }
        lastActivity = loop.now
        watch(.read)
        read()
    }

    // MARK: - Reading

    /// Everything TLS has decrypted, into the protocol, until OpenSSL needs the socket again.
    private func read() {
        let buffer = loop.readBuffer
        while !isClosed {
            guard tls.pendingOutput < Self.outputLimit, wantsInput else {
                readPaused = true
                // Output still to write is written at the end of the turn, or when the socket is writable again.
                watch(tls.pendingOutput == 0 ? nil : .write)
                return
            }
            switch tls.read(into: buffer) {
            case .bytes(let bytes):
                lastActivity = loop.now
                switch phase {
                case .http2(let session):
                    if !session.receive(bytes) {
                        Log.debug("https HTTP/2 session failed", [
                            "connection": .int(Int64(id)), "reason": .string(session.lastError ?? "protocol error"),
                        ])
                        // Its GOAWAY, if it made one, goes out before the close.
                        closesAfterWrite = true
                        flush()
                        return
                    }
                    // ACKs, WINDOW_UPDATEs and answers the session queued go out at the end of the loop's turn.
                    markDirty()
                case .http1(let exchange):
                    exchange.receive(bytes)
                case .handshaking, .closed:
                    return
                }
            case .drained:
                watch(tls.interest(reading: true))
                return
            case .closed:
                // The client closed (close_notify or end of stream) or the connection broke.
                close()
                return
            }
        }
    }

    private var wantsInput: Bool {
        switch phase {
        case .http1(let exchange): exchange.wantsInput
        case .http2: !closesAfterWrite
        case .handshaking, .closed: false
        }
    }

    /// Reads again what a pause left unread (HTTP/1.1 after a response, when pipelined requests wait).
    func resumeReading() {
        guard readPaused, !isClosed else { return }
        readPaused = false
        read()
    }

    // MARK: - Writing

    func markDirty() {
        guard !isDirty, !isClosed else { return }
        isDirty = true
        loop.markDirty(self)
    }

    /// Closes once everything owed is written.
    func closeAfterWrite() {
        closesAfterWrite = true
        markDirty()
    }

    func flushIfDirty() {
        isDirty = false
        if !isClosed { flush() }
    }

    /// Takes what HTTP/2 has to send, writes it, then closes when the protocol is done.
    private func flush() {
        guard !isClosed else { return }
        if !tls.isWriteBlocked { takeSessionOutput() }
        writeOutput()
        guard !isClosed else { return }
        if case .http2(let session) = phase, session.ended, tls.pendingOutput == 0 {
            close()
            return
        }
        if closesAfterWrite && tls.pendingOutput == 0 {
            close()
            return
        }
        if readPaused && tls.pendingOutput < Self.outputLimit / 2 { resumeReading() }
    }

    /// What HTTP/2 has to send, into the stream's output; a failed session closes the connection after the write.
    private func takeSessionOutput() {
        if case .http2(let session) = phase, !session.takeOutput(into: tls, limit: Self.outputLimit) {
            closesAfterWrite = true
        }
    }

    private func writeOutput() {
        let result = tls.write(limit: Self.outputLimit) {
            takeSessionOutput()
            return true
        }
        switch result {
        case .drained(let wrote), .blocked(let wrote):
            if wrote {
                writeBlockedSince = nil
                lastActivity = loop.now
            }
            if case .blocked = result, writeBlockedSince == nil { writeBlockedSince = loop.now }
            watch(tls.interest(reading: !readPaused))
        case .stopped:
            break
        case .failed:
            close()
        }
    }

    /// What epoll watches the socket for; nil takes it out of the set.
    private func watch(_ interest: Poller.Interest?) {
        guard interest != watching, !isClosed else { return }
        watching = interest
        loop.watch(fd, interest)
    }
}
