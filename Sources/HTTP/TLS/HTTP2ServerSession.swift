import CNGHTTP2
import Support
import TLS

/// The server side of HTTP/2 on one TLS connection, done by libnghttp2 (`nghttp2_session_server_new`: the client's
/// preface, framing, HPACK, flow control, SETTINGS, GOAWAY, the checks of RFC 9113 §8 on every request, flood
/// limits), driven as `HTTP2Connection` drives the client side: the session never touches the socket. Bytes TLS
/// decrypted go into `nghttp2_session_mem_recv`; what `nghttp2_session_mem_send` gives is written out by the
/// connection. The callbacks only record into the streams; requests go to the handler once `mem_recv` returns.
///
/// Policy stays the server's: the body limit and budget of `HTTPHandler`, the header list limit, answering a
/// stream with `nghttp2_submit_response` (a data provider reading the body) when the handler responds, and each
/// stream's deadlines (`tick`). A stream whose answer is complete while its request is not (a refusal, a timeout)
/// is reset with NO_ERROR once the answer is out (RFC 9113 §8.1), so it gives back its slot at once. Streams over
/// `maxConcurrentStreams` are nghttp2's: refused (REFUSED_STREAM) until the client acknowledged the SETTINGS, a
/// connection error after.
final class HTTP2ServerSession {
    private unowned(unsafe) let connection: TLSConnection
    private var session: OpaquePointer?
    /// Open request streams by id.
    private var streams: [Int32: HTTP2ServerStream] = [:]
    /// What the callbacks recorded during one `mem_recv`: streams complete or refused, for `act` to dispatch.
    private var ready: [HTTP2ServerStream] = []
    /// Response DATA went out since the last `tick`: the connection's flow-control window is moving.
    private var sentData = false
    /// nghttp2's text for the last error it met.
    private(set) var lastError: String?
    private let maxHeaderBytes: Int

    /// The stream window the server gives: a body up to it arrives without waiting for a WINDOW_UPDATE.
    static let streamWindow = 1 << 20
    static let connectionWindow = 16 << 20

    /// The session, its SETTINGS (`maxConcurrentStreams`, the stream window, the header list limit) and the
    /// connection window, queued to go out first. Nil when nghttp2 cannot make it (out of memory).
    init?(connection: TLSConnection, maxConcurrentStreams: Int, maxHeaderBytes: Int) {
        self.connection = connection
        self.maxHeaderBytes = maxHeaderBytes
        let settings = HTTP2Session.Settings(
            streamWindow: Self.streamWindow, connectionWindow: Self.connectionWindow, maxHeaderListSize: maxHeaderBytes,
            maxConcurrentStreams: maxConcurrentStreams)
        guard let made = HTTP2Session.make(
            .server, callbacks: Self.callbacks, options: Self.options,
            context: Unmanaged.passUnretained(self).toOpaque(), settings: settings)
        else { return nil }
        session = made
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    /// Streams the handler or the client still owes something on.
    var openStreams: Int { streams.count }

    /// The session wants nothing more: a GOAWAY went out (ours, after a protocol error or at shutdown) or came in,
    /// and no stream is left.
    var ended: Bool {
        guard let session else { return true }
        return HTTP2Session.hasEnded(session)
    }

    // MARK: - Input

    /// Bytes TLS decrypted, into the session; then complete requests go to the handler. False when the session
    /// failed for good (the connection closes after writing what it can).
    func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let session else { return false }
        let start = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let used = nghttp2_session_mem_recv(session, start, bytes.count)
        if used < 0 {
            lastError = lastError ?? String(cString: nghttp2_strerror(Int32(used)))
            return false
        }
        act()
        return true
    }

    /// Dispatches what the callbacks recorded: a refused stream gets the server's answer, a complete one goes to the
    /// handler with its share of the body budget.
    private func act() {
        guard !ready.isEmpty else { return }
        let loop = connection.loop
        // A stream the client reset in the same read is gone from `streams` (and its budget given back): not handled.
        for stream in ready where !stream.answered && streams[stream.id] === stream {
            if stream.refusal != nil {
                answerRefusal(of: stream)
                continue
            }
            stream.answered = true
            stream.enter(.handling, now: loop.now)
            loop.context.http2Requests.add(1, ordering: .relaxed)
            let reserved = stream.reservedBodyBytes
            stream.reservedBodyBytes = 0
            loop.dispatch(stream.request, stream: stream.id, reservedBodyBytes: reserved, on: connection)
            // The request has its own copy of the body now.
            stream.body = []
        }
        ready.removeAll(keepingCapacity: true)
        connection.markDirty()
    }

    // MARK: - Output

    /// The handler's answer for stream `id`; dropped when the stream is gone (the client reset it).
    func deliver(_ response: HTTPResponse, to id: Int32) {
        guard let stream = streams[id] else { return }
        respond(response, to: stream)
        connection.markDirty()
    }

    /// `:status`, the response's headers (lowercased, without the fields HTTP/2 forbids or the server owns),
    /// `content-length`, and the body through the data provider (none for HEAD, 204 and 304).
    private func respond(_ response: HTTPResponse, to stream: HTTP2ServerStream) {
        guard let session else { return }
        let status = (200...599).contains(response.status) ? response.status : 500
        let bodyless = status == 204 || status == 304
        var fields: [(name: String, value: String)] = [(":status", String(status))]
        for header in response.headers {
            let name = header.name.lowercased()
            guard !Self.isForbidden(name) else { continue }
            fields.append((name, Self.sanitized(header.value)))
        }
        if !bodyless { fields.append(("content-length", String(response.body.count))) }
        let sendsBody = !bodyless && !stream.isHead && !response.body.isEmpty
        stream.enter(.responding, now: connection.loop.now)
        stream.responseBody = sendsBody ? response.body : []
        var provider = nghttp2_data_provider()
        provider.read_callback = Self.readBody
        let result = Self.withFields(fields) { fields, count in
            sendsBody
                ? nghttp2_submit_response(session, stream.id, fields, count, &provider)
                : nghttp2_submit_response(session, stream.id, fields, count, nil)
        }
        if result != 0 { lastError = String(cString: nghttp2_strerror(result)) }
    }

    /// Moves what the session has to send into `stream`'s output, up to `limit` bytes waiting there; false when the
    /// session failed.
    func takeOutput(into stream: TLSStream, limit: Int) -> Bool {
        guard let session else { return false }
        if let failure = stream.takeOutput(from: session, limit: limit) {
            lastError = failure
            return false
        }
        return true
    }

    /// Ends the streams past their deadline: a request whose head or body stalls is answered 408 as over HTTP/1.1
    /// (then reset, its request unfinished); an answer the client's flow-control windows have held back for
    /// `idleTimeout` is reset with CANCEL. A stream the handler has is left to it.
    func tick(now: Double, configuration: HTTPServerConfiguration) {
        guard let session, !streams.isEmpty else { return }
        let connectionMoves = sentData || nghttp2_session_get_remote_window_size(session) > 0
        sentData = false
        for stream in streams.values {
            switch stream.stage {
            case .head where now - stream.since > configuration.headerTimeout:
                answerRefusal(of: stream, timingOut: .headTimeout)
            case .body where now - stream.since > configuration.bodyTimeout:
                answerRefusal(of: stream, timingOut: .bodyTimeout)
            case .responding:
                if connectionMoves && nghttp2_session_get_stream_remote_window_size(session, stream.id) > 0 {
                    stream.since = now
                } else if now - stream.since > configuration.idleTimeout {
                    nghttp2_submit_rst_stream(
                        session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, NGHTTP2_CANCEL.rawValue)
                    connection.markDirty()
                }
            default:
                break
            }
        }
    }

    /// A graceful end (shutdown): GOAWAY naming the last stream taken, whose streams are still answered; the session
    /// ends once they are.
    func goAway() {
        guard let session else { return }
        nghttp2_submit_goaway(
            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nghttp2_session_get_last_proc_stream_id(session),
            NGHTTP2_NO_ERROR.rawValue, nil, 0)
    }

    /// An end with nothing in hand (idle): GOAWAY, after which the session wants nothing more.
    func terminate() {
        guard let session else { return }
        nghttp2_session_terminate_session(session, NGHTTP2_NO_ERROR.rawValue)
    }

    /// The connection closes: bodies still held give their budget back.
    func release() {
        for stream in streams.values { releaseBody(of: stream) }
        streams.removeAll()
        ready.removeAll()
    }

    private func releaseBody(of stream: HTTP2ServerStream) {
        connection.loop.context.server.releaseBodyBytes(stream.reservedBodyBytes)
        stream.reservedBodyBytes = 0
    }

    // MARK: - Fields

    /// Connection-specific fields (RFC 9113 §8.2.2) and the framing the server sets; names HTTP/2 cannot carry.
    private static func isForbidden(_ name: String) -> Bool {
        switch name {
        case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "content-length": true
        default: name.isEmpty || name.hasPrefix(":")
        }
    }

    /// CR, LF and NUL are not allowed in a field value; they become spaces, as `HTTPResponse.encode` does.
    private static func sanitized(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else { return value }
        return String(decoding: value.utf8.map { $0 == 0x0D || $0 == 0x0A || $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
    }

    /// Calls `body` with `nghttp2_nv`s pointing into one buffer of every name and value (nghttp2 copies them).
    private static func withFields<Result>(
        _ fields: [(name: String, value: String)],
        _ body: (UnsafePointer<nghttp2_nv>, Int) -> Result
    ) -> Result {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count })
        var spans: [(name: Range<Int>, value: Range<Int>)] = []
        spans.reserveCapacity(fields.count)
        for field in fields {
            let nameStart = bytes.count
            bytes.append(contentsOf: field.name.utf8)
            let valueStart = bytes.count
            bytes.append(contentsOf: field.value.utf8)
            spans.append((nameStart..<valueStart, valueStart..<bytes.count))
        }
        // Never empty, so the base address exists (`:status` is always there).
        bytes.append(0)
        return bytes.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            let nvs = spans.map { span in
                nghttp2_nv(
                    name: base + span.name.lowerBound, value: base + span.value.lowerBound,
                    namelen: span.name.count, valuelen: span.value.count, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            return nvs.withUnsafeBufferPointer { body($0.baseAddress!, $0.count) }
        }
    }

    // MARK: - The session's callbacks (they record; `act` dispatches)

    private static func session(_ context: UnsafeMutableRawPointer?) -> HTTP2ServerSession {
        Unmanaged<HTTP2ServerSession>.fromOpaque(context!).takeUnretainedValue()
    }

    /// Set once: callbacks and options are copied into each session made with them.
    nonisolated(unsafe) private static let callbacks = HTTP2Session.callbacks { made in
        nghttp2_session_callbacks_set_on_begin_headers_callback(made, onBeginHeaders)
        nghttp2_session_callbacks_set_on_header_callback(made, onHeader)
        nghttp2_session_callbacks_set_on_frame_recv_callback(made, onFrame)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(made, onData)
        nghttp2_session_callbacks_set_on_stream_close_callback(made, onStreamClose)
        nghttp2_session_callbacks_set_on_frame_send_callback(made, onFrameSend)
        nghttp2_session_callbacks_set_error_callback2(made, onError)
    }

    nonisolated(unsafe) private static let options = HTTP2Session.options()

    /// A request's HEADERS begin a stream (trailers, a second HEADERS, do not).
    private static let onBeginHeaders: nghttp2_on_begin_headers_callback = { _, frame, context in
        guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
              frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST
        else { return 0 }
        let id = frame.pointee.hd.stream_id
        let server = session(context)
        server.streams[id] = HTTP2ServerStream(id: id, now: server.connection.loop.now)
        return 0
    }

    /// A request field (nghttp2 has checked its name and value, and the pseudo-fields' order). Past the header list
    /// limit the stream is answered 431; a trailer is read and dropped.
    private static let onHeader: nghttp2_on_header_callback = {
        _, frame, name, nameLength, value, valueLength, _, context in
        guard let frame, let name, let value, frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST else { return 0 }
        let server = session(context)
        guard let stream = server.streams[frame.pointee.hd.stream_id], stream.refusal == nil else { return 0 }
        stream.headerBytes += nameLength + valueLength + 32
        guard stream.headerBytes <= server.maxHeaderBytes else {
            stream.refusal = HTTPRequestError.headTooLarge.response
            stream.headers = []
            return 0
        }
        let nameText = String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self)
        let valueText = String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)
        switch nameText {
        case ":method": stream.method = valueText
        case ":path": stream.path = valueText
        case ":authority": stream.authority = valueText
        case ":scheme": stream.scheme = valueText
        default:
            if !nameText.hasPrefix(":") { stream.headers.append((nameText, valueText)) }
        }
        return 0
    }

    /// The end of a request's headers asks the handler's `admit` and body limit (from `content-length` when sent),
    /// as `HTTPServer` does for a head; the end of the stream completes the request.
    private static let onFrame: nghttp2_on_frame_recv_callback = { _, frame, context in
        guard let frame else { return 0 }
        let server = session(context)
        let header = frame.pointee.hd
        let type = UInt32(header.type)
        guard type == NGHTTP2_HEADERS.rawValue || type == NGHTTP2_DATA.rawValue,
              let stream = server.streams[header.stream_id]
        else { return 0 }
        if type == NGHTTP2_HEADERS.rawValue && frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST {
            stream.enter(.body, now: server.connection.loop.now)
            server.admit(stream)
        }
        if stream.refusal != nil || header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 {
            server.queue(stream)
        }
        return 0
    }

    private static let onData: nghttp2_on_data_chunk_recv_callback = { _, _, id, data, length, context in
        let server = session(context)
        guard let stream = server.streams[id], let data, stream.refusal == nil else { return 0 }
        guard stream.body.count + length <= stream.bodyLimit else {
            stream.refusal = HTTPRequestError.bodyTooLarge(limit: stream.bodyLimit).response
            server.dropBody(of: stream)
            server.queue(stream)
            return 0
        }
        guard server.connection.loop.context.server.reserveBodyBytes(length) else {
            stream.refusal = HTTPRequestError.bodyBudgetExhausted.response
            server.dropBody(of: stream)
            server.queue(stream)
            return 0
        }
        stream.reservedBodyBytes += length
        stream.body.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
        return 0
    }

    /// Both sides are done, or the client reset it: the stream leaves, with whatever budget it still held.
    private static let onStreamClose: nghttp2_on_stream_close_callback = { _, id, _, context in
        let server = session(context)
        guard let stream = server.streams.removeValue(forKey: id) else { return 0 }
        server.releaseBody(of: stream)
        return 0
    }

    /// An answer's last frame is out while the client's request is not complete (the server refused it, or it timed
    /// out): RST_STREAM NO_ERROR tells the client to stop sending it (RFC 9113 §8.1), and frees the stream's slot.
    private static let onFrameSend: nghttp2_on_frame_send_callback = { session, frame, _ in
        guard let session, let frame else { return 0 }
        let header = frame.pointee.hd
        let type = UInt32(header.type)
        guard type == NGHTTP2_HEADERS.rawValue || type == NGHTTP2_DATA.rawValue,
              header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0,
              nghttp2_session_get_stream_remote_close(session, header.stream_id) == 0
        else { return 0 }
        return nghttp2_submit_rst_stream(
            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), header.stream_id, NGHTTP2_NO_ERROR.rawValue)
    }

    private static let onError: nghttp2_error_callback2 = { _, _, message, length, context in
        if let message {
            session(context).lastError = String(
                decoding: UnsafeRawBufferPointer(start: message, count: length), as: UTF8.self)
        }
        return 0
    }

    /// The response body for DATA frames, as much as the windows and the frame size allow at a time.
    private static let readBody: nghttp2_data_source_read_callback = { _, id, buffer, capacity, flags, _, context in
        let server = session(context)
        guard let stream = server.streams[id], let buffer, let flags else {
            return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
        let count = min(capacity, stream.responseBody.count - stream.responseOffset)
        if count > 0 {
            stream.since = server.connection.loop.now
            server.sentData = true
            stream.responseBody.withUnsafeBytes { body in
                UnsafeMutableRawPointer(buffer).copyMemory(
                    from: body.baseAddress! + stream.responseOffset, byteCount: count)
            }
        }
        stream.responseOffset += count
        if stream.responseOffset == stream.responseBody.count {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            stream.responseBody = []
            stream.responseOffset = 0
        }
        return count
    }

    // MARK: - Recording

    /// The handler's `admit` and body limit for a stream whose headers are complete; a refusal is answered at once.
    private func admit(_ stream: HTTP2ServerStream) {
        guard stream.refusal == nil else { return }
        let handler = connection.loop.context.server.handler
        var head = stream.request
        head.body = []
        if let answer = handler.admit(head) {
            stream.refusal = answer
            return
        }
        stream.bodyLimit = handler.bodyLimit(method: stream.method, path: head.path)
        if let declared = stream.headers.first(where: { $0.name == "content-length" }).flatMap({ Int($0.value) }),
           declared > stream.bodyLimit {
            stream.refusal = HTTPRequestError.bodyTooLarge(limit: stream.bodyLimit).response
        }
    }

    private func queue(_ stream: HTTP2ServerStream) {
        guard !stream.queued else { return }
        stream.queued = true
        ready.append(stream)
    }

    /// The server's own answer instead of the handler's: the stream's `refusal`, else `timeout`'s 408; what more of
    /// the body comes is dropped.
    private func answerRefusal(of stream: HTTP2ServerStream, timingOut timeout: HTTPRequestError? = nil) {
        guard let refusal = stream.refusal ?? timeout?.response else { return }
        stream.refusal = refusal
        stream.answered = true
        dropBody(of: stream)
        respond(refusal, to: stream)
        connection.markDirty()
    }

    private func dropBody(of stream: HTTP2ServerStream) {
        releaseBody(of: stream)
        stream.body = []
    }
}
