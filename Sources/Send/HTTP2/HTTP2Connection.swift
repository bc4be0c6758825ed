import CCurlFixes
import CSSL
import Glibc
import Support

/// One TLS connection carrying HTTP/2 streams: the socket, OpenSSL's session over it, and the HTTP/2 framing
/// (RFC 9113) and header compression (RFC 7541) done here. Owned by the loop thread.
///
/// resolving → connecting (each address in turn) → handshaking (TLS, ALPN must say `h2`) → open → closed.
///
/// Frames to send are appended to `output` during a loop turn and written in one `SSL_write` at its end; frames
/// received are handled as `SSL_read` returns them (`HTTP2Connection+Frames.swift`).
final class HTTP2Connection {
    enum State { case resolving, connecting, handshaking, open, closed }

    let id: Int
    let origin: HTTP2Origin
    unowned let loop: HTTP2Loop
    private(set) var state = State.resolving
    private(set) var fd: Int32 = -1
    /// Monotonic seconds by which it must be open.
    let connectDeadline: Double
    /// A GOAWAY arrived (or stream ids ran out): it takes no new stream, and closes once its streams are done.
    var goingAway = false
    /// Streams open on it by id.
    var streams: [UInt32: HTTP2Stream] = [:]
    /// Frames to write at the end of the loop's turn: it is in the loop's list of connections to flush.
    var needsFlush = false

    // MARK: - HTTP/2 state (see HTTP2Connection+Frames.swift)

    /// Frames not yet taken by TLS.
    var output: [UInt8] = []
    /// Received bytes that do not make a whole frame yet.
    var input: [UInt8] = []
    var decoder = HPACKDecoder(maxTableSize: 4096, maxHeaderListSize: HTTP2Connection.maxHeaderListSize)
    /// The id the next stream gets; odd, as a client's are.
    var nextStreamID: UInt32 = 1
    /// The server's SETTINGS frame has arrived (its connection preface: it must be the first frame).
    var sawServerSettings = false
    /// The server's settings in force.
    var peerMaxConcurrentStreams = HTTPClientPool.streamsPerConnection
    var peerInitialWindow = HTTP2Frame.defaultWindow
    var peerMaxFrameSize = HTTP2Frame.defaultMaxFrameSize
    /// What the connection may still send in DATA frames.
    var sendWindow = HTTP2Frame.defaultWindow
    /// What the connection may still receive before the client's next WINDOW_UPDATE.
    var receiveWindow = HTTP2Connection.connectionWindow
    /// Streams with body left to send that wait for send window, in the order they blocked.
    var blockedStreams: [HTTP2Stream] = []
    /// A header block whose CONTINUATION frames are still to come: nothing else may arrive in between.
    var pendingHeaders: (stream: UInt32, endStream: Bool, fragment: [UInt8])?
    /// The next header block this connection sends starts with a table size update to 0: the client's encoder keeps
    /// no dynamic table, whatever SETTINGS_HEADER_TABLE_SIZE the server allows.
    var sentTableSizeUpdate = false
    /// Where a request's header block is put together before it is framed.
    var blockScratch: [UInt8] = []

    /// The receive windows the client sets: a response is small, but a few large error bodies at once should not
    /// wait on WINDOW_UPDATEs. A window is topped up once it is half used.
    static let streamWindow = 1 << 20
    static let connectionWindow = 16 << 20
    static let maxHeaderListSize = 64 << 10

    private var ssl: OpaquePointer?
    private var addresses: [SocketAddress] = []
    private var nextAddress = 0
    /// The length of an `SSL_write` that has to be repeated exactly (it returned WANT_WRITE or WANT_READ).
    private var blockedWriteLength = 0
    private var writeWaitsForRead = false
    private var readWaitsForWrite = false
    /// What epoll watches for this socket (CURL_POLL_* bits: 1 in, 2 out).
    private var watching: Int32 = 0

    init(id: Int, origin: HTTP2Origin, loop: HTTP2Loop, connectDeadline: Double) {
        self.id = id
        self.origin = origin
        self.loop = loop
        self.connectDeadline = connectDeadline
    }

    /// Until the server's SETTINGS arrive a connection carries no request: they may allow fewer streams than
    /// FCM's 100, and a stream over the server's limit may be refused as a protocol error (RFC 9113 §5.1.2).
    /// The connect timeout covers the wait.
    var isOpening: Bool {
        state == .resolving || state == .connecting || state == .handshaking || (state == .open && !sawServerSettings)
    }

    /// Streams it may carry at once: FCM's 100, or fewer if the server's SETTINGS say so.
    var capacity: Int { min(HTTPClientPool.streamsPerConnection, peerMaxConcurrentStreams) }

    var hasRoom: Bool { state == .open && sawServerSettings && !goingAway && streams.count < capacity }

    // MARK: - Opening

    /// The host's addresses arrived: connect to the first that takes the connection.
    func resolved(_ result: Result<[SocketAddress], HTTP2PoolCore.ResolveError>) {
        guard state == .resolving else { return }
        switch result {
        case .success(let addresses):
            self.addresses = addresses
            connectNext()
        case .failure(let error):
            fail(opening: error.reason)
        }
    }

    private func connectNext() {
        while nextAddress < addresses.count {
            let address = addresses[nextAddress]
            nextAddress += 1
            let socket = Glibc.socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
                | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard socket >= 0 else { continue }
            fd = socket
            loop.socketOpened(self)
            var one: Int32 = 1
            _ = setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            _ = setsockopt(socket, SOL_SOCKET, SO_KEEPALIVE, &one, socklen_t(MemoryLayout<Int32>.size))
            let result = address.bytes.withUnsafeBytes { bytes in
                connect(socket, bytes.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(bytes.count))
            }
            if result == 0 || errno == EINPROGRESS {
                state = .connecting
                watch(2)
                return
            }
            closeSocket()
        }
        fail(opening: "connect")
    }

    /// The socket is writable (or failed) while connecting.
    private func finishConnect() {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0 {
            closeSocket()
            connectNext()
            return
        }
        guard let context = loop.tls, let ssl = SSL_new(context.pointer) else {
            fail(opening: TLSError.last("SSL_new").description)
            return
        }
        self.ssl = ssl
        SSL_set_fd(ssl, fd)
        let host = origin.host
        if SocketAddress.isIPAddress(host) {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
        } else {
            _ = herald_ssl_set_server_name(ssl, host)
            SSL_set1_host(ssl, host)
        }
        SSL_set_connect_state(ssl)
        state = .handshaking
        handshake()
    }

    private func handshake() {
        guard let ssl else { return }
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            established()
            return
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: watch(1)
        case SSL_ERROR_WANT_WRITE: watch(3)
        default:
            var reason = TLSError.last("handshake").description
            let verification = SSL_get_verify_result(ssl)
            if verification != X509_V_OK {
                reason += " (" + String(cString: X509_verify_cert_error_string(verification)) + ")"
            }
            fail(opening: reason)
        }
    }

    /// TLS is up: HTTP/2 if ALPN chose it, else the origin goes to HTTP/1.1. The client's preface, SETTINGS and
    /// connection window go out at once (section 3.4); requests follow the server's SETTINGS (`isOpening`).
    private func established() {
        guard let ssl else { return }
        var selected: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &selected, &length)
        guard let selected, length == 2, selected[0] == UInt8(ascii: "h"), selected[1] == UInt8(ascii: "2") else {
            loop.speaksHTTP1(self)
            return
        }
        output.append(contentsOf: HTTP2Frame.clientPreface)
        HTTP2Frame.writeSettings([
            HTTP2Setting(id: HTTP2Setting.enablePush, value: 0),
            HTTP2Setting(id: HTTP2Setting.initialWindowSize, value: UInt32(Self.streamWindow)),
            HTTP2Setting(id: HTTP2Setting.maxHeaderListSize, value: UInt32(Self.maxHeaderListSize)),
        ], into: &output)
        HTTP2Frame.writeWindowUpdate(
            stream: 0, increment: Self.connectionWindow - HTTP2Frame.defaultWindow, into: &output)
        state = .open
        watch(1)
        loop.markForFlush(self)
    }

    // MARK: - I/O

    /// epoll reported `bits` (CURL_CSELECT_*: 1 in, 2 out, 4 error) for the socket.
    func handle(_ bits: Int32) {
        switch state {
        case .connecting:
            finishConnect()
        case .handshaking:
            handshake()
        case .open:
            if bits & 2 != 0 || (bits & 1 != 0 && writeWaitsForRead) {
                writeWaitsForRead = false
                flush()
            }
            if state == .open && (bits & 5 != 0 || readWaitsForWrite) {
                readWaitsForWrite = false
                readFrames()
            }
        case .resolving, .closed:
            break
        }
    }

    /// Everything TLS has decrypted, as frames; what they complete is completed on the way.
    private func readFrames() {
        guard let ssl else { return }
        let buffer = loop.readBuffer
        reading: while state == .open {
            let count = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
            if count > 0 {
                receive(UnsafeRawBufferPointer(start: buffer.baseAddress, count: Int(count)))
                continue
            }
            switch SSL_get_error(ssl, count) {
            case SSL_ERROR_WANT_READ:
                break reading
            case SSL_ERROR_WANT_WRITE:
                readWaitsForWrite = true
                watch(3)
                break reading
            default:
                // The server closed the connection (or it broke): what was still on it is lost with it.
                ERR_clear_error()
                close(failing: "reset", reason: streams.isEmpty ? nil : "connection closed")
                return
            }
        }
        guard state == .open else { return }
        if !output.isEmpty { loop.markForFlush(self) }
        if goingAway && streams.isEmpty { close(failing: "reset", reason: nil) }
    }

    /// Writes what the turn produced with as few TLS records and `send`s as it fits in.
    func flush() {
        needsFlush = false
        guard state == .open else { return }
        writeOutput()
    }

    private func writeOutput() {
        guard let ssl else { return }
        while !output.isEmpty {
            let length = blockedWriteLength > 0 ? blockedWriteLength : min(output.count, 1 << 20)
            let written = output.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32(length)) }
            if written > 0 {
                blockedWriteLength = 0
                if Int(written) == output.count {
                    output.removeAll(keepingCapacity: true)
                } else {
                    output.removeFirst(Int(written))
                }
                continue
            }
            switch SSL_get_error(ssl, written) {
            case SSL_ERROR_WANT_WRITE:
                blockedWriteLength = length
                watch(3)
                return
            case SSL_ERROR_WANT_READ:
                blockedWriteLength = length
                writeWaitsForRead = true
                return
            default:
                ERR_clear_error()
                close(failing: "reset", reason: "write failed")
                return
            }
        }
        if watching & 2 != 0 && !readWaitsForWrite { watch(1) }
    }

    private func watch(_ what: Int32) {
        guard fd >= 0, what != watching else { return }
        watching = what
        if herald_poller_watch(loop.poller, fd, what) != 0 {
            Log.warn("epoll_ctl failed", ["pool": .string(loop.core.name), "errno": .int(Int64(errno))])
        }
    }

    // MARK: - Closing

    /// Opening failed: `reason` is what the requests waiting for it learn if no other connection can take them.
    func fail(opening reason: String) {
        release()
        loop.openingFailed(self, reason: reason)
    }

    /// The server broke the protocol: a GOAWAY saying how (best effort: one write, no waiting), then the connection
    /// closes and its streams fail as `reset` (the server may have acted on any of them).
    func fail(_ error: HTTP2ProtocolError) {
        guard state == .open else { return }
        HTTP2Frame.writeGoAway(lastStream: 0, code: error.code, into: &output)
        if blockedWriteLength == 0 { writeOutput() }
        guard sawServerSettings else {
            // Still opening (no request on it): a failed opening, so the next one waits a second.
            return fail(opening: "protocol error: \(error)")
        }
        close(failing: "reset", reason: "protocol error: \(error)")
    }

    /// Closes it; every stream still unanswered completes with `failure` (`reason`, when given, is logged).
    func close(failing failure: String, reason: String?) {
        guard state != .closed else { return }
        let unanswered = streams.values.filter { !$0.finished }
        streams.removeAll()
        blockedStreams.removeAll()
        if let reason, !unanswered.isEmpty || reason.hasPrefix("protocol error") {
            Log.warn("fcm connection lost with requests on it", [
                "pool": .string(loop.core.name), "reason": .string(reason), "requests": .int(Int64(unanswered.count)),
            ])
        }
        release()
        loop.closed(self)
        for stream in unanswered { loop.finish(stream, .failure(reason: failure)) }
    }

    private func release() {
        state = .closed
        if let ssl { SSL_free(ssl) }
        ssl = nil
        closeSocket()
        output = []
        input = []
        pendingHeaders = nil
    }

    private func closeSocket() {
        guard fd >= 0 else { return }
        loop.socketClosed(self)
        Glibc.close(fd)
        fd = -1
        watching = 0
    }
}
