import CNGHTTP2
import Support
import TLS

/// The HTTP/2 protocol of one connection, done by libnghttp2 (framing, HPACK, flow control, SETTINGS, GOAWAY's
/// last stream id, flood limits) as libcurl's `lib/http2.c` and nghttpx drive it: the session never touches the
/// socket. Bytes TLS decrypted go into `nghttp2_session_mem_recv`; what `nghttp2_session_mem_send` gives is written
/// out. The callbacks only record, into the stream or the connection; the connection acts once `mem_recv` returns.
///
/// Policy stays Herald's: which request goes on which connection, when a connection is suspect (PING), what a
/// refused or lost stream means.
extension HTTP2Connection {
    /// How a stream ended, for the loop.
    enum StreamEnd {
        case response
        /// The server never processed it (REFUSED_STREAM, or above a GOAWAY's last stream id): it may go out again.
        case refused
        /// Reset or lost: the server may have acted on it.
        case reset
        /// Its response's header fields passed `maxHeaderListSize`, or its body the pool's `maxResponseBytes`.
        case tooLarge
    }

    /// Streams it may carry at once: FCM's 100, or fewer if the server's SETTINGS say so.
    var capacity: Int {
        guard let session else { return 0 }
        let allowed = nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
        return min(HTTPClientPool.streamsPerConnection, Int(allowed))
    }

    /// The session, its SETTINGS (no push, the client's windows, the header list limit) and the connection window,
    /// queued to go out first.
    func startSession() -> Bool {
        let settings = HTTP2Session.Settings(
            streamWindow: Self.streamWindow, connectionWindow: Self.connectionWindow,
            maxHeaderListSize: Self.maxHeaderListSize)
        session = HTTP2Session.make(
            .client, callbacks: Self.callbacks, options: Self.options,
            context: Unmanaged.passUnretained(self).toOpaque(), settings: settings)
        return session != nil
    }

    // MARK: - Requests

    /// Opens a stream for `stream`'s request. False when it takes no more (not open, or its stream ids are used up).
    func submit(_ stream: HTTP2Stream, now: Double) -> Bool {
        guard state == .open, !goingAway, let session else { return false }
        let request = stream.request
        var provider = nghttp2_data_provider()
        provider.read_callback = Self.readBody
        let id = origin.requestHeaders.withFields(
            target: stream.target, headers: request.headers, bodyLength: request.body.count
        ) { fields, count in
            request.body.isEmpty
                ? nghttp2_submit_request(session, nil, fields, count, nil, nil)
                : nghttp2_submit_request(session, nil, fields, count, &provider, nil)
        }
        guard id > 0 else {
            // NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE: ids used up; anything else leaves the session unusable too.
            goingAway = true
            return false
        }
        if streams.isEmpty {
            quietSince = max(quietSince, now)
            idleSince = nil
        }
        stream.id = id
        streams[id] = stream
        loop.markForFlush(self)
        return true
    }

    /// Resets a stream whose request is no longer wanted (timed out): it leaves the connection, and whatever the
    /// server still sends for it is dropped.
    func cancel(_ stream: HTTP2Stream) {
        guard state == .open, let session, stream.id > 0, streams[stream.id] === stream else { return }
        streams[stream.id] = nil
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, NGHTTP2_CANCEL.rawValue)
        loop.markForFlush(self)
    }

    // MARK: - Liveness

    /// Asks the server for a PING's ACK: a connection that answers is alive, one that does not by `pingTimeout` is
    /// closed and its requests fail as `reset`.
    func ping(now: Double) {
        guard state == .open, let session, pingSentAt == nil else { return }
        guard nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil) == 0 else { return }
        pingSentAt = now
        loop.core.statistics.pinged()
        loop.markForFlush(self)
    }

    // MARK: - Input

    /// Bytes TLS decrypted, into the session; false when the connection closed on the way. A fatal error (a flood
    /// of PINGs, say) may come after answers read in the same call: `close` completes those with their answers
    /// before it fails the streams still open.
    func receive(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let session else { return false }
        let used = nghttp2_session_mem_recv(session, bytes.baseAddress, bytes.count)
        if used < 0 {
            close(.protocolError, reason: "protocol error: " + (lastError ?? HTTP2Session.errorText(used)))
            return false
        }
        afterReceiving()
        return state == .open
    }

    /// Acts on what the callbacks recorded: the server's SETTINGS open the connection to requests, a PING's ACK
    /// clears suspicion, ended streams complete (`endStreams`).
    private func afterReceiving() {
        if settingsArrived {
            settingsArrived = false
            // The first SETTINGS open the connection to requests (and show the server takes connections); later
            // ones may allow more streams.
            if !sawServerSettings { origin.ramp.opened() }
            sawServerSettings = true
            loop.connectionOpened(self)
        }
        if pingAcknowledged {
            pingAcknowledged = false
            pingSentAt = nil
            suspect = false
            loop.connectionOpened(self)
        }
        if let code = goAwayCode {
            goAwayCode = nil
            goingAway = true
            if code != NGHTTP2_NO_ERROR.rawValue {
                Log.warn("sender connection going away", [
                    "pool": .string(loop.core.name), "host": .string(origin.host),
                    "code": .string(Self.errorName(code)), "streams": .int(Int64(streams.count)),
                ])
            }
        }
        endStreams()
    }

    /// The streams the session ended (while reading, or while sending: a stream the server answered before its
    /// request's last byte closes when that byte goes) complete, or go out again when the server never processed
    /// them. Called before the connection closes too, so no ended stream is left without an end.
    func endStreams() {
        guard !ended.isEmpty else { return }
        // Refused streams go back to the front of the queue one by one: highest id first, so the lowest ends up
        // first and the order they were submitted in is kept. Answers (nearly every read) need no order.
        let refusals = ended.contains { $0.1 == .refused }
        let endings = refusals && ended.count > 1 ? ended.sorted { $0.0.id > $1.0.id } : ended
        ended.removeAll(keepingCapacity: true)
        for (stream, end) in endings {
            if end == .tooLarge, state == .open, let session {
                nghttp2_submit_rst_stream(
                    session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, NGHTTP2_CANCEL.rawValue)
                loop.markForFlush(self)
            }
            loop.streamEnded(stream, end, on: self)
        }
    }

    /// The session wants nothing more (it ended itself after a protocol error, or a GOAWAY's last streams are done).
    var sessionEnded: Bool {
        guard let session else { return false }
        return HTTP2Session.hasEnded(session)
    }

    /// The session ended: after a GOAWAY from the server once its last streams are done, else because nghttp2 met
    /// a protocol error and ended the session with a GOAWAY of its own (sent by now, best effort). One that ends
    /// before the server's SETTINGS carried no request: it failed to open.
    func endedBySession() {
        let reason = "protocol error: " + (lastError ?? "the session ended")
        if !sawServerSettings {
            fail(opening: .other(reason))
        } else if goingAway {
            close(.goAway, reason: streams.isEmpty ? nil : "connection ended")
        } else {
            close(.protocolError, reason: reason)
        }
    }

    /// Moves what the session has to send into the TLS stream's output, up to `outputLimit` not yet written; false
    /// when the session failed (the connection is closed then).
    func takeOutput() -> Bool {
        guard let session, let tls else { return false }
        if let failure = tls.takeOutput(from: session, limit: Self.outputLimit) {
            close(.protocolError, reason: "HTTP/2 session: " + failure)
            return false
        }
        endStreams()
        return true
    }

    static func errorName(_ code: UInt32) -> String {
        String(cString: nghttp2_http2_strerror(code))
    }

    // MARK: - The session's callbacks (they record; `afterReceiving` acts)

    private static func connection(_ context: UnsafeMutableRawPointer?) -> HTTP2Connection {
        Unmanaged<HTTP2Connection>.fromOpaque(context!).takeUnretainedValue()
    }

    /// Set once for every session: callbacks and options are copied into each session made with them, and only
    /// read after that.
    nonisolated(unsafe) private static let callbacks = HTTP2Session.callbacks { made in
        nghttp2_session_callbacks_set_on_header_callback(made, onHeader)
        nghttp2_session_callbacks_set_on_frame_recv_callback(made, onFrame)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(made, onData)
        nghttp2_session_callbacks_set_on_stream_close_callback(made, onStreamClose)
        nghttp2_session_callbacks_set_error_callback2(made, onError)
        nghttp2_session_callbacks_set_on_frame_send_callback(made, onFrameSent)
    }

    /// Until the server's SETTINGS say otherwise, FCM's 100 streams at once.
    nonisolated(unsafe) private static let options = HTTP2Session.options(
        peerMaxConcurrentStreams: HTTPClientPool.streamsPerConnection)

    /// A response header field. `:status` starts a response (a 1xx one is forgotten when the final one comes);
    /// fields are kept only for the final response, and only those the request keeps. Past `maxHeaderListSize`
    /// the stream leaves the connection as too large (nghttp2 resets it).
    private static let onHeader: nghttp2_on_header_callback = {
        _, frame, name, nameLength, value, valueLength, _, context in
        guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue), let name, let value else { return 0 }
        let connection = connection(context)
        let id = frame.pointee.hd.stream_id
        guard let stream = connection.streams[id], !stream.headersDone else { return 0 }
        stream.headerBytes += nameLength + valueLength
        guard stream.headerBytes <= maxHeaderListSize else {
            connection.streams[id] = nil
            connection.ended.append((stream, .tooLarge))
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue
        }
        let nameBytes = UnsafeBufferPointer(start: name, count: nameLength)
        if nameLength == 7 && nameBytes.elementsEqual(":status".utf8) {
            // nghttp2 has checked it: three digits, once per response, before the other fields.
            stream.status = Int(value[0] &- 48) * 100 + Int(value[1] &- 48) * 10 + Int(value[2] &- 48)
            stream.headers.removeAll()
        } else if stream.status >= 200, stream.keeps(nameBytes) {
            stream.headers.append((
                String(decoding: nameBytes, as: UTF8.self),
                String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)))
        }
        return 0
    }

    private static let onFrame: nghttp2_on_frame_recv_callback = { _, frame, context in
        guard let frame else { return 0 }
        let connection = connection(context)
        let header = frame.pointee.hd
        switch UInt32(header.type) {
        case NGHTTP2_HEADERS.rawValue:
            if let stream = connection.streams[header.stream_id] {
                if stream.status >= 200 { stream.headersDone = true }
                if header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 { stream.remoteEnded = true }
            }
        case NGHTTP2_DATA.rawValue:
            if header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 {
                connection.streams[header.stream_id]?.remoteEnded = true
            }
        case NGHTTP2_SETTINGS.rawValue:
            if header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0 { connection.settingsArrived = true }
        case NGHTTP2_PING.rawValue:
            if header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 { connection.pingAcknowledged = true }
        case NGHTTP2_GOAWAY.rawValue:
            connection.goAwayCode = frame.pointee.goaway.error_code
        default:
            break
        }
        return 0
    }

    /// Body bytes, up to the pool's `maxResponseBytes`; a stream past it leaves the connection at once (it is
    /// reset once `mem_recv` returns).
    private static let onData: nghttp2_on_data_chunk_recv_callback = { _, _, id, data, length, context in
        let connection = connection(context)
        guard let stream = connection.streams[id], let data else { return 0 }
        guard stream.body.count + length <= connection.loop.core.maxResponseBytes else {
            connection.streams[id] = nil
            connection.ended.append((stream, .tooLarge))
            return 0
        }
        stream.body.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
        return 0
    }

    /// Both sides of a stream are closed, or it was reset, refused, or lost with a GOAWAY: it leaves the connection.
    private static let onStreamClose: nghttp2_on_stream_close_callback = { _, id, code, context in
        let connection = connection(context)
        guard let stream = connection.streams.removeValue(forKey: id) else { return 0 }
        let end: StreamEnd =
            if stream.remoteEnded && stream.headersDone { .response }
            else if code == NGHTTP2_REFUSED_STREAM.rawValue { .refused }
            else { .reset }
        connection.ended.append((stream, end))
        return 0
    }

    /// A GOAWAY the session sends names the server's error (the client never ends a session itself otherwise).
    private static let onFrameSent: nghttp2_on_frame_send_callback = { _, frame, context in
        guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_GOAWAY.rawValue) else { return 0 }
        let connection = connection(context)
        let name = errorName(frame.pointee.goaway.error_code)
        connection.lastError = connection.lastError.map { name + ": " + $0 } ?? name
        return 0
    }

    private static let onError: nghttp2_error_callback2 = { _, _, message, length, context in
        if let message {
            connection(context).lastError = String(
                decoding: UnsafeRawBufferPointer(start: message, count: length), as: UTF8.self)
        }
        return 0
    }

    /// The request body for nghttp2's DATA frames, as much as the windows and frame size allow at a time.
    private static let readBody: nghttp2_data_source_read_callback = { _, id, buffer, capacity, flags, _, context in
        guard let stream = connection(context).streams[id], let buffer, let flags else {
            return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
        let count = stream.request.body.withUnsafeBytes { body in
            let count = min(capacity, body.count - stream.bodyOffset)
            if count > 0 {
                UnsafeMutableRawPointer(buffer).copyMemory(
                    from: body.baseAddress! + stream.bodyOffset, byteCount: count)
            }
            return count
        }
        stream.bodyOffset += count
        if stream.bodyOffset == stream.request.body.count { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
        return count
    }
}
