import CSSL
import Posix

/// One non-blocking TLS connection over a connected socket, for the HTTP/2 client (`Send`) and the HTTPS server
/// (`HTTP`) alike: OpenSSL's handshake, reads, writes and best-effort close_notify, and the plaintext waiting to be
/// written. The owner watches the socket for `interest(reading:)` (level-triggered) and calls in on readiness;
/// nothing here blocks.
///
/// ```swift
/// guard let stream = TLSStream(context: context, fd: fd, role: .client) else { … OpenSSLError.reason("SSL_new") … }
/// switch stream.handshake() { case .established: … case .inProgress: poller.watch(fd, …) case .failed(let reason): … }
/// stream.output.append(contentsOf: bytes)
/// _ = stream.write(limit: 1 << 20) { true }
/// ```
///
/// A write that would block is repeated with the same length, as OpenSSL requires (the contexts set partial writes
/// and a moving write buffer, so `output` may grow or move meanwhile). A read that needs the socket writable, or a
/// write that needs it readable, is remembered and reported by `shouldWrite` / `shouldRead` on the next readiness.
public final class TLSStream {
    public enum Role: Sendable { case client, server }

    public enum HandshakeResult {
        case established
        /// OpenSSL waits for the socket (`interest` says for what).
        case inProgress
        /// The reason, with OpenSSL's text and, for a certificate that was not trusted, why.
        case failed(String)
    }

    public enum ReadResult {
        /// Plaintext, in the buffer given, valid until the next read.
        case bytes(UnsafeRawBufferPointer)
        /// Nothing more until the socket is ready again.
        case drained
        /// The peer closed (close_notify or end of stream) or the connection broke.
        case closed
    }

    public enum WriteResult {
        /// Everything in `output` is written (`wrote`: some bytes went in this call).
        case drained(wrote: Bool)
        /// The socket takes no more for now; the rest waits in `output`.
        case blocked(wrote: Bool)
        /// `refill` said to stop (its owner closed, say).
        case stopped
        /// The connection broke.
        case failed
    }

    private var ssl: OpaquePointer?
    /// Plaintext waiting for `SSL_write`, from `outputStart` on. Append to it; what is written is dropped here.
    public var output: [UInt8] = []
    private var outputStart = 0
    /// The length of an `SSL_write` to repeat exactly (it returned WANT_WRITE or WANT_READ); 0 when none is due.
    private var blockedWriteLength = 0
    private var writeWaitsForRead = false
    private var readWaitsForWrite = false
    private var handshakeWantsWrite = false
    /// A read or write failed: no close_notify on the way out.
    private var broken = false
    /// OpenSSL's reason when a read ended the connection ("… alert certificate required", "unexpected eof while
    /// reading"); nil after a clean close_notify.
    public private(set) var readFailure: String?

    /// Nil when OpenSSL cannot make a session (`OpenSSLError.reason` says why).
    public init?(context: OpaquePointer, fd: Int32, role: Role) {
        guard let ssl = SSL_new(context) else { return nil }
        self.ssl = ssl
        SSL_set_fd(ssl, fd)
        switch role {
        case .client: SSL_set_connect_state(ssl)
        case .server: SSL_set_accept_state(ssl)
        }
    }

    deinit {
        if let ssl { SSL_free(ssl) }
    }

    /// OpenSSL's session, for settings before the handshake (the name to check, SNI).
    public var session: OpaquePointer? { ssl }

    /// Bytes in `output` not yet written.
    public var pendingOutput: Int { output.count - outputStart }

    /// A write must be repeated before more output may be taken from elsewhere into it.
    public var isWriteBlocked: Bool { blockedWriteLength > 0 }

    /// What the socket must be watched for: reading when the owner wants input (`reading`) or OpenSSL does, writing
    /// when OpenSSL does; nil for nothing.
    public func interest(reading: Bool) -> Poller.Interest? {
        let read = reading || writeWaitsForRead
        let write = blockedWriteLength > 0 && !writeWaitsForRead || readWaitsForWrite || handshakeWantsWrite
        switch (read, write) {
        case (true, true): return .readWrite
        case (true, false): return .read
        case (false, true): return .write
        case (false, false): return nil
        }
    }

    // MARK: - Handshake

    /// One step of the handshake.
    public func handshake() -> HandshakeResult {
        guard let ssl else { return .failed("TLS: closed") }
        let result = SSL_do_handshake(ssl)
        handshakeWantsWrite = false
        if result == 1 { return .established }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ:
            return .inProgress
        case SSL_ERROR_WANT_WRITE:
            handshakeWantsWrite = true
            return .inProgress
        default:
            broken = true
            var reason = OpenSSLError.reason("TLS: handshake")
            let verification = SSL_get_verify_result(ssl)
            if verification != X509_V_OK {
                reason += " (" + String(cString: X509_verify_cert_error_string(verification)) + ")"
            }
            return .failed(reason)
        }
    }

    /// ALPN chose `h2`.
    public var speaksHTTP2: Bool {
        guard let ssl else { return false }
        var selected: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &selected, &length)
        guard let selected, length == 2 else { return false }
        return selected[0] == UInt8(ascii: "h") && selected[1] == UInt8(ascii: "2")
    }

    // MARK: - Readiness

    /// Whether `readiness` lets a write go on (the socket is writable, or readable for a write that waited on it).
    public func shouldWrite(_ readiness: Poller.Readiness) -> Bool {
        guard readiness.contains(.writable) || (readiness.contains(.readable) && writeWaitsForRead) else {
            return false
        }
        writeWaitsForRead = false
        return true
    }

    /// Whether `readiness` lets a read go on (readable or failed, or writable for a read that waited on it).
    public func shouldRead(_ readiness: Poller.Readiness) -> Bool {
        guard !readiness.isDisjoint(with: [.readable, .error]) || readWaitsForWrite else { return false }
        readWaitsForWrite = false
        return true
    }

    // MARK: - Reading and writing

    /// Decrypts what is there into `buffer`, one record's worth or more.
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        guard let ssl else { return .closed }
        let count = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
        if count > 0 { return .bytes(UnsafeRawBufferPointer(rebasing: buffer[0..<Int(count)])) }
        switch SSL_get_error(ssl, count) {
        case SSL_ERROR_WANT_READ:
            return .drained
        case SSL_ERROR_WANT_WRITE:
            readWaitsForWrite = true
            return .drained
        default:
            broken = true
            readFailure = OpenSSLError.drain().first
            return .closed
        }
    }

    /// Writes `output` in as few `SSL_write`s (of at most `limit` bytes) as it fits in. Whenever less than half of
    /// `limit` is left to write, `refill` may append more to `output`; false stops the write.
    public func write(limit: Int, refill: () -> Bool) -> WriteResult {
        var wrote = false
        while pendingOutput > 0 {
            guard let ssl else { return .failed }
            let length = blockedWriteLength > 0 ? blockedWriteLength : min(pendingOutput, limit)
            let start = outputStart
            let written = output.withUnsafeBytes { SSL_write(ssl, $0.baseAddress! + start, Int32(length)) }
            if written > 0 {
                wrote = true
                blockedWriteLength = 0
                outputStart += Int(written)
                if outputStart == output.count {
                    output.removeAll(keepingCapacity: output.capacity <= 4 * limit)
                    outputStart = 0
                }
                // What was kept back while the output was full may go now.
                if pendingOutput < limit / 2 && !refill() { return .stopped }
                continue
            }
            switch SSL_get_error(ssl, written) {
            case SSL_ERROR_WANT_WRITE:
                blockedWriteLength = length
                return .blocked(wrote: wrote)
            case SSL_ERROR_WANT_READ:
                blockedWriteLength = length
                writeWaitsForRead = true
                return .blocked(wrote: wrote)
            default:
                broken = true
                OpenSSLError.clear()
                return .failed
            }
        }
        return .drained(wrote: wrote)
    }

    /// Drops what was written from the front of `output`, so that appending does not grow it without end.
    public func compactOutput() {
        guard outputStart > 0, blockedWriteLength == 0 else { return }
        output.removeFirst(outputStart)
        outputStart = 0
    }

    // MARK: - Closing

    /// Sends close_notify after a completed handshake on a connection that did not break (one try, never waiting
    /// for the peer's), and frees the session. Output not yet written is dropped. The owner closes the socket.
    public func close() {
        guard let ssl else { return }
        if !broken && SSL_is_init_finished(ssl) == 1 { _ = SSL_shutdown(ssl) }
        OpenSSLError.clear()
        SSL_free(ssl)
        self.ssl = nil
        output = []
        outputStart = 0
        blockedWriteLength = 0
    }
}
