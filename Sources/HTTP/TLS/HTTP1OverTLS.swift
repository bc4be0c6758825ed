/// HTTP/1.1 on a TLS connection whose client did not choose `h2`: requests parsed by the same `HTTPRequestParser` as
/// the cleartext server's, answered one at a time in order (a pipelined request waits until the one before it is
/// answered), with keep-alive, `100 Continue`, the handler's `admit`, body limit and body budget, and the head and
/// body timeouts, as `Connection` does them on a socket.
final class HTTP1OverTLS {
    private enum State {
        /// Waiting for the next request; the connection's idle timeout applies.
        case idle(since: Double)
        case readingHead(since: Double)
        case readingBody(since: Double)
        /// The handler owns request `number`.
        case handling(number: Int32, keepAlive: Bool, isHTTP10: Bool, isHead: Bool)
        /// The last response is written; the connection closes after it.
        case closing
    }

    private unowned(unsafe) let connection: TLSConnection
    private var parser: HTTPRequestParser
    private var state: State
    private var number: Int32 = 0
    /// Bytes of the body budget held by the body being read; they go to the responder with the request.
    private var reservedBodyBytes = 0
    private var refusingHEAD = false

    /// Beyond this much input not yet wanted (pipelined while a request is handled), reading pauses.
    private static let inputHighWater = 64 * 1024

    init(connection: TLSConnection, maxHeaderBytes: Int) {
        self.connection = connection
        parser = HTTPRequestParser(maxHeaderBytes: maxHeaderBytes)
        state = .idle(since: connection.loop.now)
    }

    var wantsInput: Bool {
        switch state {
        case .idle, .readingHead, .readingBody: true
        case .handling: parser.bufferedByteCount < Self.inputHighWater
        case .closing: false
        }
    }

    func receive(_ bytes: UnsafeRawBufferPointer) {
        parser.append(bytes)
        process()
    }

    /// The handler's answer to request `number`; parsing goes on with what is buffered.
    func deliver(_ response: HTTPResponse, number answered: Int32) {
        guard case .handling(let number, let keepAlive, let isHTTP10, let isHead) = state, number == answered else {
            return
        }
        let staysOpen = keepAlive && !connection.loop.draining
        let header: ConnectionHeader = staysOpen ? (isHTTP10 ? .keepAlive : .none) : .close
        response.encode(into: &connection.tls.output, connection: header, omitBody: isHead)
        connection.markDirty()
        if staysOpen {
            state = .idle(since: connection.loop.now)
            process()
            connection.resumeReading()
        } else {
            state = .closing
            connection.closeAfterWrite()
        }
    }

    func tick(now: Double) {
        let configuration = connection.loop.context.server.configuration
        switch state {
        case .idle(let since) where now - since > configuration.idleTimeout && connection.tls.pendingOutput == 0:
            connection.close()
        case .readingHead(let since) where now - since > configuration.headerTimeout:
            fail(.headTimeout)
        case .readingBody(let since) where now - since > configuration.bodyTimeout:
            fail(.bodyTimeout)
        default:
            break
        }
    }

    /// Graceful shutdown: idle closes now (after owed output), anything else after its response.
    func drain() {
        if case .idle = state, parser.bufferedByteCount == 0 {
            state = .closing
            connection.closeAfterWrite()
        }
    }

    /// The connection closes: a body being read gives its budget back.
    func release() {
        connection.loop.context.server.releaseBodyBytes(reservedBodyBytes)
        reservedBodyBytes = 0
    }

    // MARK: - Parsing

    private func process() {
        while true {
            switch state {
            case .idle, .readingHead, .readingBody: break
            case .handling, .closing: return
            }
            switch parser.next(admit: { head, bodyLength in admit(head, bodyLength: bodyLength) }) {
            case .needMoreData:
                waitForInput()
                return
            case .continueExpected:
                connection.tls.output.append(contentsOf: HTTPResponse.continueBytes)
                connection.markDirty()
                state = .readingBody(since: connection.loop.now)
            case .request(let parsed):
                number = number == Int32.max ? 1 : number + 1
                state = .handling(
                    number: number, keepAlive: parsed.keepAlive, isHTTP10: parsed.isHTTP10,
                    isHead: parsed.request.method == "HEAD")
                var request = parsed.request
                request.scheme = .https
                let reserved = reservedBodyBytes
                reservedBodyBytes = 0
                connection.loop.context.http1Requests.add(1, ordering: .relaxed)
                connection.loop.dispatch(request, stream: number, reservedBodyBytes: reserved, on: connection)
                return
            case .refused(let response):
                response.encode(into: &connection.tls.output, connection: .close, omitBody: refusingHEAD)
                state = .closing
                connection.closeAfterWrite()
                return
            case .failure(let error):
                fail(error)
                return
            }
        }
    }

    /// `HTTPHandler.admit`, the body limit (413) and the body budget (503), from the head alone.
    private func admit(_ head: HTTPRequest, bodyLength: Int) -> HTTPResponse? {
        var head = head
        head.scheme = .https
        let (answer, reserved) = connection.loop.context.server.admit(head, bodyLength: bodyLength)
        if reserved > 0 { reservedBodyBytes = reserved }
        refusingHEAD = answer != nil && head.method == "HEAD"
        return answer
    }

    private func waitForInput() {
        let now = connection.loop.now
        switch (parser.phase, state) {
        case (.idle, .idle), (.head, .readingHead), (.body, .readingBody): break
        case (.idle, _): state = .idle(since: now)
        case (.head, _): state = .readingHead(since: now)
        case (.body, _): state = .readingBody(since: now)
        }
        if connection.loop.draining, case .idle = state {
            state = .closing
            connection.closeAfterWrite()
        }
    }

    private func fail(_ error: HTTPRequestError) {
        parser = HTTPRequestParser(maxHeaderBytes: parser.maxHeaderBytes)
        release()
        error.response.encode(into: &connection.tls.output, connection: .close, omitBody: false)
        state = .closing
        connection.closeAfterWrite()
    }
}
