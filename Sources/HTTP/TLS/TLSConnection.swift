import CSSL
import Glibc
import Posix
import Support

/// One client connection of an `HTTPSServer`: the socket, OpenSSL's server session on it, and, once the handshake is
/// done, the protocol ALPN chose: HTTP/2 (`HTTP2ServerSession`) or HTTP/1.1 (`HTTP1OverTLS`, through the same
/// `HTTPRequestParser` as the cleartext server). Driven by its loop's thread only.
///
/// handshaking → http2 | http1 → closed. A failed handshake, a protocol error or a broken socket closes this
/// connection and nothing else.
///
/// Output is plaintext gathered in `output` until the loop's turn ends, then written in as few `SSL_write`s as it
/// fits in (a write that would block is repeated with the same length, as OpenSSL requires).
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
    private var ssl: OpaquePointer?

    /// Plaintext waiting for `SSL_write`.
    var output: [UInt8] = []
    /// Close once `output` is written (HTTP/1.1 `Connection: close`, an error answered).
    private var closesAfterWrite = false
    private var isDirty = false
    /// Reading stopped: the output backed up (the write that drains it reads again), or HTTP/1.1 has a request in
    /// hand and enough buffered behind it (its answer reads again). The socket is not watched for reading meanwhile,
    /// or level-triggered epoll would wake the loop for it over and over.
    private var readPaused = false
    private var blockedWriteLength = 0
    private var writeWaitsForRead = false
    private var readWaitsForWrite = false
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
        guard let ssl = SSL_new(loop.context.tls.pointer) else {
            Log.warn("https cannot start TLS on a connection", ["reason": .string(openSSLFailure("SSL_new"))])
            return nil
        }
        self.fd = fd
        self.id = id
        self.loop = loop
        self.ssl = ssl
        phase = .handshaking(since: loop.now)
        lastActivity = loop.now
        SSL_set_fd(ssl, fd)
        SSL_set_accept_state(ssl)
    }

    func start() {
        watch(.read)
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
            if readiness.contains(.writable) || (readiness.contains(.readable) && writeWaitsForRead) {
                writeWaitsForRead = false
                flush()
            }
            if !isClosed && (!readiness.isDisjoint(with: [.readable, .error]) || readWaitsForWrite) {
                readWaitsForWrite = false
                read()
            }
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
            if session.openStreams == 0 && output.isEmpty && now - lastActivity > configuration.idleTimeout {
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
        guard let ssl else { return }
        switch phase {
        case .http2(let session): session.release()
        case .http1(let exchange): exchange.release()
        case .handshaking, .closed: break
        }
        if SSL_is_init_finished(ssl) == 1 {
            // close_notify, best effort: one try, never waiting for the client's.
            _ = SSL_shutdown(ssl)
        }
        ERR_clear_error()
        SSL_free(ssl)
        self.ssl = nil
        phase = .closed
        output = []
        loop.watch(fd, nil)
        Glibc.close(fd)
        loop.forget(self)
    }

    // MARK: - Handshake

    private func handshake() {
        guard let ssl else { return }
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            established()
            return
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: watch(.read)
        case SSL_ERROR_WANT_WRITE: watch(.readWrite)
        default:
            // A client that does not trust the certificate, speaks no TLS, or went away: only this connection ends.
            loop.context.handshakeFailures.add(1, ordering: .relaxed)
            Log.debug("https handshake failed", [
                "connection": .int(Int64(id)), "reason": .string(openSSLFailure("TLS handshake")),
            ])
            close()
        }
    }

    /// TLS is up: HTTP/2 when ALPN chose `h2` (the server's SETTINGS go out at once, RFC 9113 §3.4), else HTTP/1.1.
    /// What the client sent with its last handshake flight may already sit in OpenSSL's buffer, so it is read now.
    private func established() {
        guard let ssl else { return }
        var selected: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &selected, &length)
        let configuration = loop.context.server.configuration
        if let selected, length == 2, selected[0] == UInt8(ascii: "h"), selected[1] == UInt8(ascii: "2") {
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
        guard let ssl else { return }
        let buffer = loop.readBuffer
        while !isClosed {
            guard output.count < Self.outputLimit, wantsInput else {
                readPaused = true
                watch(output.isEmpty ? nil : .write)
                return
            }
            let count = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
            if count > 0 {
                lastActivity = loop.now
                let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<Int(count)])
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
                continue
            }
            switch SSL_get_error(ssl, count) {
            case SSL_ERROR_WANT_READ:
                return
            case SSL_ERROR_WANT_WRITE:
                readWaitsForWrite = true
                watch(.readWrite)
                return
            default:
                // The client closed (close_notify or end of stream) or the connection broke.
                ERR_clear_error()
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
        watch(output.isEmpty ? .read : .readWrite)
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
        if blockedWriteLength == 0, case .http2(let session) = phase,
           !session.takeOutput(into: &output, limit: Self.outputLimit) {
            closesAfterWrite = true
        }
        writeOutput()
        guard !isClosed else { return }
        if case .http2(let session) = phase, session.ended, output.isEmpty {
            close()
            return
        }
        if closesAfterWrite && output.isEmpty {
            close()
            return
        }
        if readPaused && output.count < Self.outputLimit / 2 { resumeReading() }
    }

    private func writeOutput() {
        guard let ssl else { return }
        while !output.isEmpty {
            let length = blockedWriteLength > 0 ? blockedWriteLength : min(output.count, Self.outputLimit)
            let written = output.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32(length)) }
            if written > 0 {
                blockedWriteLength = 0
                writeBlockedSince = nil
                lastActivity = loop.now
                if Int(written) == output.count {
                    output.removeAll(keepingCapacity: output.capacity <= 4 * Self.outputLimit)
                } else {
                    output.removeFirst(Int(written))
                }
                // What the session kept back while the output was full may go now.
                if output.count < Self.outputLimit / 2, case .http2(let session) = phase,
                   !session.takeOutput(into: &output, limit: Self.outputLimit) {
                    closesAfterWrite = true
                }
                continue
            }
            switch SSL_get_error(ssl, written) {
            case SSL_ERROR_WANT_WRITE:
                blockedWriteLength = length
                if writeBlockedSince == nil { writeBlockedSince = loop.now }
                watch(readPaused ? .write : .readWrite)
                return
            case SSL_ERROR_WANT_READ:
                blockedWriteLength = length
                writeWaitsForRead = true
                return
            default:
                ERR_clear_error()
                close()
                return
            }
        }
        if !readWaitsForWrite { watch(readPaused ? nil : .read) }
    }

    /// What epoll watches the socket for; nil takes it out of the set.
    private func watch(_ interest: Poller.Interest?) {
        guard interest != watching, !isClosed else { return }
        watching = interest
        loop.watch(fd, interest)
    }
}
