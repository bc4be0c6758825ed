import Glibc
import Posix
import Support

/// One client connection, driven by its event loop's thread only.
///
/// A connection handles one request at a time: the next buffered (pipelined) request is parsed only once
/// the current response is queued, so responses leave in request order whatever thread answers them.
final class Connection: LoopConnection {
    enum State {
        /// Waiting for the first byte of the next request; closed silently after the idle timeout.
        case idle(since: Double)
        case readingHead(since: Double)
        case readingBody(since: Double)
        /// The handler owns a request.
        case handling(Pending)
        /// The last response is queued; the connection closes once it is written.
        case closingAfterWrite
        /// Our side is shut for writing; the client's leftovers are read and dropped until it closes, so
        /// the kernel does not answer them with a reset that could destroy the response in flight.
        case lingering(until: Double)
        case closed
    }

    struct Pending {
        var keepAlive: Bool
        var isHTTP10: Bool
        var isHead: Bool
    }

    let fd: CInt
    let id: UInt64
    /// False for a connection over `maxConnections` that is only told 503.
    let counted: Bool
    /// The loop owns its connections and outlives them.
    private unowned(unsafe) let loop: ServerLoop<Connection>
    private(set) var state: State
    private var parser: HTTPRequestParser
    private var output: [UInt8] = []
    private var outputSent = 0
    private var isDirty = false
    /// Reading stopped before `EAGAIN` because nobody consumes the input; resume with an explicit read,
    /// since edge-triggered epoll will not report the bytes that are already waiting.
    private var readPaused = false
    /// The client shut its writing side (read returned 0): answer what is buffered, then close.
    private var peerClosed = false
    private var writeBlockedSince: Double?
    private var lingerDiscarded = 0
    /// Bytes of the server's body budget held by the body being read; handed to the responder with the
    /// request, given back if the connection fails or closes first.
    private var reservedBodyBytes = 0
    /// The refused request was a HEAD, so its answer goes without a body.
    private var refusingHEAD = false

    /// Beyond this much unanswered output, pipelined requests wait until the client reads.
    private static let outputHighWater = 256 * 1024
    /// Beyond this much input not yet wanted, reading pauses.
    private static let inputHighWater = 64 * 1024
    private static let lingerSeconds = 2.0
    private static let lingerMaxBytes = 1 << 20

    typealias Context = ServerContext
    static var protocolName: String { "http" }
    static var answersOverLimit: Bool { true }

    init(fd: CInt, id: UInt64, loop: ServerLoop<Connection>, counted: Bool) {
        self.fd = fd
        self.id = id
        self.loop = loop
        self.counted = counted
        self.state = .idle(since: loop.now)
        self.parser = HTTPRequestParser(
            maxHeaderBytes: loop.context.configuration.maxHeaderBytes, peer: PeerAddress(connectedSocket: fd))
    }

    // MARK: - Events from the loop

    /// Bytes that arrived before registration are reported by the first edge, so there is nothing to read yet. A
    /// connection over the limit is answered 503 and closed, without reading a request.
    func start() {
        do {
            try loop.watchEdges(fd)
        } catch {
            Log.warn("http cannot watch a connection", ["error": .string("\(error)")])
            close()
            return
        }
        if !counted { fail(.tooManyConnections) }
    }

    func handle(events: UInt32) {
        if events & Linux.epollErr != 0 {
            close()
            return
        }
        if events & (Linux.epollIn | Linux.epollRdHup | Linux.epollHup) != 0 {
            readAvailable(peerHungUp: events & (Linux.epollRdHup | Linux.epollHup) != 0)
        }
        if events & Linux.epollOut != 0, outputSent < output.count, !isClosed {
            flush()
        }
        if events & Linux.epollHup != 0 && !isClosed {
            // Both directions are gone: nothing more can be written.
            close()
        }
    }

    /// The handler's response for the request in `.handling` (`stream` is always 0 here).
    func deliver(_ response: HTTPResponse, to stream: Int32) {
        guard case .handling(let pending) = state else { return }
        let keepAlive = pending.keepAlive && !loop.draining
        let header: ConnectionHeader = keepAlive ? (pending.isHTTP10 ? .keepAlive : .none) : .close
        response.encode(into: &output, connection: header, omitBody: pending.isHead)
        markDirty()
        if keepAlive {
            state = .idle(since: loop.now)
            process()
        } else {
            state = .closingAfterWrite
        }
    }

    func flushIfDirty() {
        isDirty = false
        if !isClosed && outputSent < output.count { flush() }
    }

    func tick(now: Double) {
        let configuration = loop.context.configuration
        if let since = writeBlockedSince, now - since > configuration.idleTimeout {
            // The client stopped reading what we send.
            close()
            return
        }
        switch state {
        case .idle(let since) where now - since > configuration.idleTimeout:
            close()
        case .readingHead(let since) where now - since > configuration.headerTimeout:
            fail(.headTimeout)
        case .readingBody(let since) where now - since > configuration.bodyTimeout:
            fail(.bodyTimeout)
        case .lingering(let until) where now >= until:
            close()
        default:
            break
        }
    }

    /// Graceful shutdown: an idle connection closes now; any other closes after its next response.
    func drain() {
        if case .idle = state, outputSent == output.count {
            close()
        }
    }

    func close() {
        switch state {
        case .closed: return
        case .lingering where counted: loop.context.lingeringConnections.subtract(1, ordering: .relaxed)
        default: break
        }
        state = .closed
        output = []
        outputSent = 0
        releaseBodyReservation()
        Glibc.close(fd)
        loop.forget(self)
    }

    // MARK: - Reading

    private var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    private var wantsInput: Bool {
        switch state {
        case .idle, .readingHead, .readingBody, .lingering: true
        case .handling: parser.bufferedByteCount < Self.inputHighWater
        case .closingAfterWrite: false
        case .closed: false
        }
    }

    private func readAvailable(peerHungUp: Bool) {
        let buffer = loop.readBuffer
        while !isClosed && !peerClosed {
            guard wantsInput else {
                readPaused = true
                return
            }
            let count: Int
            do {
                switch try syscall("recv", { recv(fd, buffer.baseAddress, buffer.count, 0) }) {
                case .wouldBlock: return
                case .processed(let read): count = read
                }
            } catch {
                close()
                return
            }
            if count == 0 {
                peerClosed = true
                peerDidClose()
                return
            }
            if case .lingering = state {
                lingerDiscarded += count
                if lingerDiscarded > Self.lingerMaxBytes { close() }
                continue
            }
            parser.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            process()
            // A short read drained the socket; new bytes raise a new edge. After a hang-up no edge will come,
            // so read on until the end of the stream is seen.
            if count < buffer.count && !peerHungUp { return }
        }
    }

    private func peerDidClose() {
        switch state {
        case .idle, .readingHead, .readingBody:
            // Nothing more will arrive, so a partial request can never complete; only owed output is written.
            if outputSent < output.count {
                state = .closingAfterWrite
            } else {
                close()
            }
        case .lingering:
            close()
        case .handling, .closingAfterWrite, .closed:
            // Answer the request in hand; `process` closes when the buffer runs dry.
            break
        }
    }

    // MARK: - Parsing

    /// Parses buffered requests until one is handed to the handler, more input is needed, or the output
    /// backs up.
    private func process() {
        while true {
            switch state {
            case .idle, .readingHead, .readingBody: break
            case .handling, .closingAfterWrite, .lingering, .closed: return
            }
            if output.count - outputSent > Self.outputHighWater { return }
            switch parser.next(admit: { head, bodyLength in admit(head, bodyLength: bodyLength) }) {
            case .needMoreData:
                waitForInput()
                return
            case .continueExpected:
                output.append(contentsOf: HTTPResponse.continueBytes)
                markDirty()
                state = .readingBody(since: loop.now)
            case .request(let parsed):
                state = .handling(Pending(
                    keepAlive: parsed.keepAlive, isHTTP10: parsed.isHTTP10,
                    isHead: parsed.request.method == "HEAD"))
                let reserved = reservedBodyBytes
                reservedBodyBytes = 0
                loop.dispatch(parsed.request, stream: 0, reservedBodyBytes: reserved, on: self)
                return
            case .refused(let response):
                response.encode(into: &output, connection: .close, omitBody: refusingHEAD)
                state = .closingAfterWrite
                markDirty()
                return
            case .failure(let error):
                fail(error)
                return
            }
        }
    }

    /// `ServerContext.admit`: the handler's answer, 413 or 503 from the head alone, the body's bytes reserved.
    private func admit(_ head: HTTPRequest, bodyLength: Int) -> HTTPResponse? {
        let (answer, reserved) = loop.context.admit(head, bodyLength: bodyLength)
        if reserved > 0 { reservedBodyBytes = reserved }
        refusingHEAD = answer != nil && head.method == "HEAD"
        return answer
    }

    private func releaseBodyReservation() {
        loop.context.releaseBodyBytes(reservedBodyBytes)
        reservedBodyBytes = 0
    }

    /// Moves the timers along with the parser's phase and reads again if reading was paused.
    private func waitForInput() {
        let now = loop.now
        switch (parser.phase, state) {
        case (.idle, .idle): break
        case (.idle, _):
            state = .idle(since: now)
        case (.head, .readingHead): break
        case (.head, _):
            state = .readingHead(since: now)
        case (.body, .readingBody): break
        case (.body, _):
            state = .readingBody(since: now)
        }
        if peerClosed {
            // The client sent all it will send; what is left cannot become a request.
            state = .closingAfterWrite
            if outputSent == output.count { finishClose() }
            return
        }
        if loop.draining, case .idle = state {
            state = .closingAfterWrite
            if outputSent == output.count { finishClose() }
            return
        }
        if readPaused {
            readPaused = false
            readAvailable(peerHungUp: false)
        }
    }

    private func fail(_ error: HTTPRequestError) {
        // No request will be parsed on this connection again: a partial body goes, with its reservation.
        parser = HTTPRequestParser(maxHeaderBytes: parser.maxHeaderBytes, peer: parser.peer)
        releaseBodyReservation()
        error.response.encode(into: &output, connection: .close, omitBody: false)
        state = .closingAfterWrite
        markDirty()
    }

    // MARK: - Writing

    private func markDirty() {
        guard !isDirty else { return }
        isDirty = true
        loop.markDirty(self)
    }

    private func flush() {
        while outputSent < output.count {
            let result: IOResult<Int>
            do {
                result = try output.withUnsafeBytes { bytes throws(IOError) in
                    try syscall("send") {
                        send(fd, bytes.baseAddress! + outputSent, bytes.count - outputSent, CInt(MSG_NOSIGNAL))
                    }
                }
            } catch {
                // EPIPE, ECONNRESET: the client is gone, and with it any response still owed.
                close()
                return
            }
            switch result {
            case .processed(let written):
                outputSent += written
                writeBlockedSince = nil
            case .wouldBlock:
                if writeBlockedSince == nil { writeBlockedSince = loop.now }
                return
            }
        }
        if output.capacity > 1 << 20 {
            output = []
        } else {
            output.removeAll(keepingCapacity: true)
        }
        outputSent = 0
        writeBlockedSince = nil
        switch state {
        case .closingAfterWrite:
            finishClose()
        case .idle, .readingHead, .readingBody:
            // Pipelined requests may have waited for the output to drain.
            process()
        case .handling, .lingering, .closed:
            break
        }
    }

    /// Half-closes and lingers, unless the client has already closed its side.
    private func finishClose() {
        if peerClosed {
            close()
            return
        }
        shutdown(fd, CInt(SHUT_WR))
        state = .lingering(until: loop.now + Self.lingerSeconds)
        if counted { loop.context.lingeringConnections.add(1, ordering: .relaxed) }
        readAvailable(peerHungUp: false)
    }
}
