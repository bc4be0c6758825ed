import CNGHTTP2
import CSSL
import Glibc
import Posix
import Support
import TLS

/// One TLS connection carrying HTTP/2 streams: the socket, the TLS stream over it (`TLSStream`, as the HTTPS server's),
/// and libnghttp2's client session for the protocol (`HTTP2Connection+Session.swift`). Owned by the loop thread.
///
/// resolving → connecting (addresses raced) → handshaking (TLS, ALPN must say `h2`) → open → closed.
///
/// What the session has to send is taken from it when the loop flushes the connection, and written in as few
/// `SSL_write`s as it fits in; what TLS decrypts goes straight into the session.
final class HTTP2Connection {
    enum State { case resolving, connecting, handshaking, open, closed }

    let id: Int
    let origin: HTTP2Origin
    unowned let loop: HTTP2Loop
    private(set) var state = State.resolving
    private(set) var fd: Int32 = -1
    /// The loop's tag for `fd` in epoll (see `Poller`): events are routed by it, never by the descriptor's number.
    private var tag: UInt32 = 0
    /// Monotonic seconds by which it must be open.
    let connectDeadline: Double
    /// A GOAWAY arrived (or stream ids ran out): it takes no new stream, and closes once its streams are done.
    var goingAway = false
    /// Streams open on it by id.
    var streams: [Int32: HTTP2Stream] = [:]
    /// Output to take from the session at the end of the loop's turn: it is in the loop's list to flush.
    var needsFlush = false
    /// Its wait for the host's addresses, given up if it closes first.
    var lookup: Resolver.Wait?

    // MARK: - HTTP/2 (see HTTP2Connection+Session.swift)

    /// nghttp2's client session, from the moment TLS chose h2.
    var session: OpaquePointer?
    /// TLS over the socket once connected; its `output` holds what was taken from the session and not yet written.
    private(set) var tls: TLSStream?
    /// The server's SETTINGS frame has arrived (its connection preface).
    var sawServerSettings = false
    /// Streams the session ended during a `mem_recv` or `mem_send`, for `endStreams` to act on.
    var ended: [(HTTP2Stream, StreamEnd)] = []
    /// What the session's callbacks recorded during one `mem_recv`, for `afterReceiving` to act on.
    var settingsArrived = false
    var pingAcknowledged = false
    var goAwayCode: UInt32?
    /// nghttp2's text for the last error it met, and the code of the GOAWAY it sent for it (a protocol error by the
    /// server, usually).
    var lastError: String?

    // MARK: - Liveness

    /// Monotonic seconds of the last bytes read, or of the first stream after a quiet spell: with streams open and
    /// nothing read for `pingAfter`, a PING asks whether the server is still there.
    var quietSince = 0.0
    /// A PING is out since then; without its ACK by `pingTimeout` the connection is dead.
    var pingSentAt: Double?
    /// A request timed out on it: it takes no new streams until a PING's ACK says it is alive.
    var suspect = false
    /// Monotonic seconds since it carries no stream (nil while it carries some).
    var idleSince: Double?

    /// The receive windows the client sets: a response is small, but a few large error bodies at once should not
    /// wait on WINDOW_UPDATEs.
    static let streamWindow = 1 << 20
    static let connectionWindow = 16 << 20
    static let maxHeaderListSize = 64 << 10
    /// Output taken from the session and not yet written, at most: past it the session keeps the rest (and the
    /// connection takes no new streams) until the socket drains.
    static let outputLimit = 1 << 20

    private var addresses: [SocketAddress] = []
    private var nextAddress = 0
    /// Sockets connecting at once, one per address tried so far: the next address gets its turn after `raceDelay`
    /// or when every earlier attempt has failed, whichever comes first (RFC 8305's racing), all within the one
    /// connect deadline. The first to connect is kept.
    private var attempts: [(fd: Int32, tag: UInt32)] = []
    /// Monotonic seconds at which the next address joins the race.
    private(set) var nextAttemptAt = Double.infinity
    static let raceDelay = 0.25
    /// What epoll watches for this socket.
    private var watching: Poller.Interest?

    init(id: Int, origin: HTTP2Origin, loop: HTTP2Loop, connectDeadline: Double) {
        self.id = id
        self.origin = origin
        self.loop = loop
        self.connectDeadline = connectDeadline
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    /// Until the server's SETTINGS arrive a connection carries no request: they may allow fewer streams than
    /// FCM's 100, and a stream over the server's limit may be refused as a protocol error (RFC 9113 §5.1.2).
    /// The connect timeout covers the wait.
    var isOpening: Bool {
        state == .resolving || state == .connecting || state == .handshaking || (state == .open && !sawServerSettings)
    }

    var hasRoom: Bool {
        state == .open && sawServerSettings && !goingAway && !suspect && streams.count < capacity
            && pendingOutput < Self.outputLimit
    }

    /// Output taken from the session and not yet written.
    var pendingOutput: Int {
        tls?.pendingOutput ?? 0
    }

    // MARK: - Opening

    /// The host's addresses arrived: the race to connect starts with the first the pool's address policy permits;
    /// none permitted, and no connection is attempted.
    func resolved(_ result: Result<[SocketAddress], SocketAddress.ResolveError>) {
        guard state == .resolving else { return }
        lookup = nil
        switch result {
        case .success(let addresses):
            self.addresses = loop.core.addressPolicy.map { addresses.filter($0.permits) } ?? addresses
            guard !self.addresses.isEmpty else { return fail(opening: .forbiddenAddress) }
            state = .connecting
            connectNext(now: Clock.monotonicSeconds())
        case .failure(let error):
            fail(opening: .other(error.reason))
        }
    }

    /// Starts connecting to the next address (the loop calls it again at `nextAttemptAt`). Fails the opening once
    /// no address is left and no attempt is still under way.
    func connectNext(now: Double) {
        nextAttemptAt = .infinity
        while nextAddress < addresses.count {
            let address = addresses[nextAddress]
            nextAddress += 1
            let socket = Glibc.socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
                | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard socket >= 0 else { continue }
            configure(socket)
            let result = address.bytes.withUnsafeBytes { bytes in
                connect(socket, bytes.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(bytes.count))
            }
            guard result == 0 || errno == EINPROGRESS else {
                Glibc.close(socket)
                continue
            }
            let tag = loop.socketOpened(self)
            attempts.append((socket, tag))
            if !loop.poller.watch(socket, .write, tag: tag) {
                Log.warn("epoll_ctl failed", ["pool": .string(loop.core.name), "errno": .int(Int64(errno))])
            }
            if nextAddress < addresses.count { nextAttemptAt = now + Self.raceDelay }
            return
        }
        if attempts.isEmpty { fail(opening: .connect) }
    }

    /// No Nagle delay; and the kernel as a backstop to the PINGs: data unacknowledged for as long as a PING may
    /// take fails the socket (`TCP_USER_TIMEOUT`), and an idle connection is probed by keepalive.
    private func configure(_ socket: Int32) {
        func set(_ level: Int32, _ option: Int32, _ value: Int32) {
            var value = value
            _ = setsockopt(socket, level, option, &value, socklen_t(MemoryLayout<Int32>.size))
        }
        let liveness = loop.core.liveness
        let tcp = Int32(IPPROTO_TCP)
        set(tcp, TCP_NODELAY, 1)
        set(tcp, TCP_USER_TIMEOUT, Int32(clamping: liveness.pingAfterMillis + liveness.pingTimeoutMillis))
        set(SOL_SOCKET, SO_KEEPALIVE, 1)
        set(tcp, TCP_KEEPIDLE, Int32(clamping: max(1, liveness.pingAfterMillis / 1_000)))
        set(tcp, TCP_KEEPINTVL, Int32(clamping: max(1, liveness.pingTimeoutMillis / 2_000)))
        set(tcp, TCP_KEEPCNT, 2)
    }

    /// An attempt's socket is writable (or failed) while connecting: the first that connected wins the race, the
    /// others are closed; a failed one lets the next address try at once.
    private func finishConnect(_ attempt: (fd: Int32, tag: UInt32)) {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(attempt.fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0 {
            closeAttempt(attempt.tag)
            connectNext(now: Clock.monotonicSeconds())
            return
        }
        for other in attempts where other.tag != attempt.tag { closeAttempt(other.tag) }
        attempts.removeAll()
        nextAttemptAt = .infinity
        (fd, tag) = attempt
        watching = .write
        loop.core.statistics.opened()
        guard let context = loop.tls, let tls = TLSStream(context: context.pointer, fd: fd, role: .client),
              let ssl = tls.session
        else {
            fail(opening: .other(OpenSSLError.reason("TLS: SSL_new")))
            return
        }
        self.tls = tls
        let host = origin.host
        // The name (or address) the certificate must carry: without it any valid certificate would pass.
        let nameSet = SocketAddress.isIPAddress(host)
            ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1
            : herald_ssl_set_server_name(ssl, host) == 1 && SSL_set1_host(ssl, host) == 1
        guard nameSet else {
            fail(opening: .other(OpenSSLError.reason("TLS: the name to check, \(host)")))
            return
        }
        state = .handshaking
        handshake()
    }

    private func handshake() {
        guard let tls else { return }
        switch tls.handshake() {
        case .established:
            established()
        case .inProgress:
            watch(tls.interest(reading: true))
        case .failed(let reason):
            // What a stranger's server did in the handshake is not for the caller to learn (SPEC §19).
            fail(opening: loop.core.addressPolicy == nil ? .other(reason) : .tlsHandshakeFailed)
        }
    }

    /// TLS is up: HTTP/2 if ALPN chose it, else the origin goes to HTTP/1.1 for a while. The session's preface,
    /// SETTINGS and connection window go out at once (RFC 9113 §3.4); requests follow the server's SETTINGS. What the
    /// server sent with its last handshake flight may already sit in OpenSSL's buffer, where no readiness would report
    /// it, so it is read now.
    private func established() {
        guard let tls, tls.speaksHTTP2 else {
            loop.speaksHTTP1(self)
            return
        }
        guard startSession() else {
            fail(opening: .other("HTTP/2 session: " + (lastError ?? "out of memory")))
            return
        }
        state = .open
        quietSince = Clock.monotonicSeconds()
        watch(.read)
        // The preface, SETTINGS and window go out before the server's frames are read (and acknowledged).
        flush()
        if state == .open { read() }
    }

    // MARK: - I/O

    /// epoll reported `readiness` for the socket it tagged `tag`.
    func handle(_ tag: UInt32, _ readiness: Poller.Readiness) {
        switch state {
        case .connecting:
            if let attempt = attempts.first(where: { $0.tag == tag }) { finishConnect(attempt) }
        case .handshaking:
            handshake()
        case .open:
            guard let tls else { return }
            if tls.shouldWrite(readiness) { flush() }
            if state == .open && tls.shouldRead(readiness) { read() }
        case .resolving, .closed:
            break
        }
    }

    /// Everything TLS has decrypted, into the session; then what its callbacks recorded is acted on.
    private func read() {
        guard let tls else { return }
        let buffer = UnsafeMutableRawBufferPointer(loop.readBuffer)
        var received = false
        reading: while state == .open {
            switch tls.read(into: buffer) {
            case .bytes(let bytes):
                received = true
                guard receive(bytes.assumingMemoryBound(to: UInt8.self)) else { return }
            case .drained:
                watch(tls.interest(reading: true))
                break reading
            case .closed:
                guard sawServerSettings else {
                    // Before HTTP/2 began it carried nothing: it failed to open, as when a server that requires a
                    // client certificate refuses the one given (TLS 1.3 tells the client after its handshake).
                    let reason = "the server closed the connection before HTTP/2 began"
                        + (tls.readFailure.map { " (TLS: \($0))" } ?? "")
                    fail(opening: loop.core.addressPolicy == nil ? .other(reason) : .tlsHandshakeFailed)
                    return
                }
                // The server closed the connection (or it broke): what was still on it is lost with it.
                close(.reset, reason: streams.isEmpty ? nil : "connection closed")
                return
            }
        }
        guard state == .open else { return }
        if received {
            quietSince = Clock.monotonicSeconds()
            loop.markForFlush(self)
        }
    }

    /// Takes what the session has to send and writes it, with as few TLS records and `send`s as it fits in.
    func flush() {
        needsFlush = false
        guard state == .open, let tls else { return }
        if !tls.isWriteBlocked && !takeOutput() { return }
        writeOutput()
        guard state == .open else { return }
        if sessionEnded { endedBySession() }
    }

    private func writeOutput() {
        guard let tls else { return }
        // What the session kept back while the output was full may go as it drains.
        switch tls.write(limit: Self.outputLimit, refill: takeOutput) {
        case .drained, .blocked:
            watch(tls.interest(reading: true))
        case .stopped:
            break
        case .failed:
            close(.reset, reason: "write failed")
        }
    }

    private func watch(_ interest: Poller.Interest?) {
        guard fd >= 0, let interest, interest != watching else { return }
        watching = interest
        if !loop.poller.watch(fd, interest, tag: tag) {
            Log.warn("epoll_ctl failed", ["pool": .string(loop.core.name), "errno": .int(Int64(errno))])
        }
    }

    // MARK: - Closing

    /// Opening failed: `failure` is what the requests waiting for it learn if no other connection can take them.
    func fail(opening failure: TransportFailure) {
        loop.core.statistics.closed(.connect)
        release()
        loop.openingFailed(self, failure: failure)
    }

    /// Closes it; every stream still unanswered completes with `failure` (`reason`, when given, is logged). Streams
    /// lost with a connection may have reached the server: they are counted as requests retried after a loss.
    func close(_ cause: HTTP2CloseCause, failing failure: TransportFailure = .reset, reason: String?) {
        guard state != .closed else { return }
        // Streams the session ended before this (answers read before a fatal error) end as they ended.
        endStreams()
        let unanswered = streams.values.filter { !$0.finished }
        streams.removeAll()
        if let reason, !unanswered.isEmpty || cause == .protocolError || cause == .pingTimeout {
            Log.warn("sender connection lost with requests on it", [
                "pool": .string(loop.core.name), "host": .string(origin.host), "reason": .string(reason),
                "requests": .int(Int64(unanswered.count)),
            ])
        }
        loop.core.statistics.closed(cause)
        if failure == .reset { loop.core.statistics.lostRequests(unanswered.count) }
        if cause == .idle || cause == .shutdown, let session {
            // A polite end, best effort (one write, no waiting): GOAWAY tells the server nothing more will come.
            // Closed first, so that a write failing on the way does not close it a second time.
            state = .closed
            nghttp2_session_terminate_session(session, NGHTTP2_NO_ERROR.rawValue)
            if tls?.isWriteBlocked == false && takeOutput() { writeOutput() }
        }
        release()
        loop.closed(self)
        for stream in unanswered { loop.finish(stream, .failure(failure)) }
    }

    private func release() {
        state = .closed
        lookup?.cancel()
        lookup = nil
        tls?.close()
        tls = nil
        closeSocket()
        if let session { nghttp2_session_del(session) }
        session = nil
    }

    private func closeSocket() {
        for attempt in attempts { closeAttempt(attempt.tag) }
        nextAttemptAt = .infinity
        guard fd >= 0 else { return }
        loop.socketClosed(tag: tag)
        Glibc.close(fd)
        fd = -1
        watching = nil
    }

    private func closeAttempt(_ tag: UInt32) {
        guard let index = attempts.firstIndex(where: { $0.tag == tag }) else { return }
        let attempt = attempts.remove(at: index)
        loop.socketClosed(tag: tag)
        Glibc.close(attempt.fd)
    }
}

/// Why a connection closed, for `herald_h2_connections_closed_total{cause}`.
enum HTTP2CloseCause: Int, CaseIterable, Sendable {
    /// It could not be opened (resolving, connecting, TLS, the server's first frames).
    case connect
    /// The server closed it or it broke (read or write failed).
    case reset
    /// The server sent GOAWAY and the streams it still answered are done.
    case goAway
    /// A PING went unanswered.
    case pingTimeout
    /// It carried nothing for a long while.
    case idle
    /// The server broke the protocol (nghttp2 ended the session with a GOAWAY naming the error).
    case protocolError
    /// The pool shut down.
    case shutdown

    var label: String {
        switch self {
        case .connect: "connect"
        case .reset: "reset"
        case .goAway: "goaway"
        case .pingTimeout: "ping_timeout"
        case .idle: "idle"
        case .protocolError: "protocol_error"
        case .shutdown: "shutdown"
        }
    }
}
