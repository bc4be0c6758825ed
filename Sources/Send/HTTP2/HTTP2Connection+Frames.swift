import Support

/// What the server sends, frame by frame (RFC 9113 section 6): responses into their streams, SETTINGS applied and
/// acknowledged, PING answered, flow-control windows kept, GOAWAY and resets turned into re-sends or failures. A
/// connection error closes the connection with a GOAWAY; a stream error resets that stream only.
extension HTTP2Connection {
    /// How a stream ended, for the loop.
    enum StreamEnd {
        case response
        /// The server never processed it (REFUSED_STREAM, or above a GOAWAY's last stream id): it may go out again.
        case refused
        /// Reset or lost: the server may have acted on it.
        case reset
    }

    /// A header block larger than this (HEADERS plus CONTINUATIONs, still compressed) is refused before it is
    /// decoded: the decoded list's own limit cannot bound the memory spent collecting it.
    static let maxHeaderBlockSize = 2 * maxHeaderListSize

    /// Bytes TLS decrypted: every whole frame in them (and in what an earlier read left) is handled; a partial one
    /// waits in `input` for the rest.
    func receive(_ bytes: UnsafeRawBufferPointer) {
        if input.isEmpty {
            let used = process(bytes)
            if state == .open && used < bytes.count { input.append(contentsOf: bytes[used...]) }
            return
        }
        // Taken out of the property while frames are handled: a handler that closes the connection clears it.
        var buffered: [UInt8] = []
        swap(&buffered, &input)
        buffered.append(contentsOf: bytes)
        let used = buffered.withUnsafeBytes { process($0) }
        guard state == .open else { return }
        buffered.removeFirst(used)
        swap(&buffered, &input)
    }

    /// Handles the whole frames at the start of `bytes`; returns how many bytes they took.
    private func process(_ bytes: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        while state == .open && bytes.count - offset >= HTTP2Frame.Header.size {
            let header = HTTP2Frame.Header(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + 9)]))
            // The client never raises SETTINGS_MAX_FRAME_SIZE above the default.
            guard header.length <= HTTP2Frame.defaultMaxFrameSize else {
                fail(.connection(.frameSizeError, "a frame of \(header.length) bytes"))
                return offset
            }
            let end = offset + HTTP2Frame.Header.size + header.length
            guard end <= bytes.count else { break }
            let payload = UnsafeRawBufferPointer(rebasing: bytes[(offset + HTTP2Frame.Header.size)..<end])
            offset = end
            do {
                try handle(HTTP2Frame.parse(header, payload: payload))
            } catch {
                if error.stream == 0 { fail(error) } else { streamError(error) }
            }
        }
        return offset
    }

    private func handle(_ frame: HTTP2Frame) throws(HTTP2ProtocolError) {
        if !sawServerSettings {
            guard case .settings(ack: false, _) = frame else {
                throw .connection(.protocolError, "the server's first frame is not SETTINGS")
            }
        }
        if let pending = pendingHeaders {
            guard case .continuation(let stream, let fragment, let endHeaders) = frame, stream == pending.stream else {
                throw .connection(.protocolError, "a header block interrupted by another frame")
            }
            guard pending.fragment.count + fragment.count <= Self.maxHeaderBlockSize else {
                throw .connection(.enhanceYourCalm, "a header block over \(Self.maxHeaderBlockSize) bytes")
            }
            pendingHeaders!.fragment.append(contentsOf: fragment)
            if endHeaders {
                let block = pendingHeaders!.fragment
                pendingHeaders = nil
                try block.withUnsafeBytes { bytes in
                    Result { () throws(HTTP2ProtocolError) in
                        try headerBlock(stream: pending.stream, bytes, endStream: pending.endStream)
                    }
                }.get()
            }
            return
        }
        switch frame {
        case .data(let stream, let data, let flowLength, let endStream):
            try receiveData(stream: stream, data, flowLength: flowLength, endStream: endStream)
        case .headers(let stream, let fragment, let endStream, let endHeaders):
            guard opened(stream) else { throw .connection(.protocolError, "HEADERS on stream \(stream), never opened") }
            if endHeaders {
                try headerBlock(stream: stream, fragment, endStream: endStream)
            } else {
                guard fragment.count <= Self.maxHeaderBlockSize else {
                    throw .connection(.enhanceYourCalm, "a header block over \(Self.maxHeaderBlockSize) bytes")
                }
                pendingHeaders = (stream, endStream, Array(fragment))
            }
        case .priority, .unknown:
            break
        case .rstStream(let stream, let code):
            guard opened(stream) else {
                throw .connection(.protocolError, "RST_STREAM on stream \(stream), never opened")
            }
            if let ended = streams.removeValue(forKey: stream) {
                loop.streamEnded(ended, code == .refusedStream ? .refused : .reset, on: self)
            }
        case .settings(let ack, let parameters):
            guard !ack else { return }
            try apply(parameters)
            sawServerSettings = true
            HTTP2Frame.writeSettingsAck(into: &output)
            loop.markForFlush(self)
            // The first SETTINGS open the connection to requests; later ones may allow more streams.
            loop.connectionOpened(self)
        case .pushPromise:
            throw .connection(.protocolError, "PUSH_PROMISE, push being disabled")
        case .ping(let ack, let payload):
            guard !ack else { return }
            HTTP2Frame.writePing(ack: true, payload: payload, into: &output)
            loop.markForFlush(self)
        case .goAway(let lastStream, let code):
            goneAway(lastStream: lastStream, code: code)
        case .windowUpdate(let stream, let increment):
            try windowUpdate(stream: stream, increment: increment)
        case .continuation(let stream, _, _):
            throw .connection(.protocolError, "CONTINUATION on stream \(stream) without HEADERS")
        }
    }

    // MARK: - Responses

    /// A whole header block: always decoded (it may change the decoder's table), kept only for a stream still open
    /// and not yet past its final headers. 1xx blocks are forgotten; a block after the final one is trailers.
    private func headerBlock(
        stream id: UInt32, _ block: UnsafeRawBufferPointer, endStream: Bool
    ) throws(HTTP2ProtocolError) {
        let stream = streams[id]
        let keeping = stream.map { !$0.headersDone } ?? false
        var status = 0
        var malformed = false
        do {
            try decoder.decode(block) { name, value in
                guard keeping else { return }
                if name.first == UInt8(ascii: ":") {
                    if name == Self.statusName, status == 0, value.count == 3 {
                        status = value.reduce(0) { $0 * 10 + Int($1) - 48 }
                        if value.contains(where: { $0 < 48 || $0 > 57 }) { malformed = true }
                    } else {
                        malformed = true
                    }
                    return
                }
                guard status >= 200 else {
                    // A field before `:status`, or in an interim (1xx) response: not kept.
                    if status == 0 { malformed = true }
                    return
                }
                if let stream, stream.keeps(name) {
                    stream.headers.append(
                        (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
                }
            }
        } catch {
            throw .connection(error == .headerListTooLarge ? .enhanceYourCalm : .compressionError, error.description)
        }
        guard let stream else { return }
        if stream.headersDone {
            // Trailers end the stream; the fields are not kept.
            guard endStream else {
                throw HTTP2ProtocolError(code: .protocolError, stream: id, reason: "trailers without END_STREAM")
            }
        } else {
            guard !malformed, status >= 100 else {
                throw HTTP2ProtocolError(code: .protocolError, stream: id, reason: "a response without a valid :status")
            }
            guard status >= 200 else {
                guard !endStream else {
                    throw HTTP2ProtocolError(code: .protocolError, stream: id, reason: "a 1xx response ends the stream")
                }
                return
            }
            stream.status = status
            stream.headersDone = true
        }
        if endStream { answered(stream) }
    }

    private static let statusName: [UInt8] = Array(":status".utf8)

    /// DATA counts against both receive windows, which are topped up once half used; a stream reset or finished by
    /// the client drops its DATA but still counts it for the connection.
    private func receiveData(
        stream id: UInt32, _ data: UnsafeRawBufferPointer, flowLength: Int, endStream: Bool
    ) throws(HTTP2ProtocolError) {
        receiveWindow -= flowLength
        guard receiveWindow >= 0 else { throw .connection(.flowControlError, "DATA beyond the connection's window") }
        if receiveWindow <= Self.connectionWindow / 2 {
            HTTP2Frame.writeWindowUpdate(stream: 0, increment: Self.connectionWindow - receiveWindow, into: &output)
            receiveWindow = Self.connectionWindow
            loop.markForFlush(self)
        }
        guard opened(id) else { throw .connection(.protocolError, "DATA on stream \(id), never opened") }
        guard let stream = streams[id] else { return }
        stream.receiveWindow -= flowLength
        guard stream.receiveWindow >= 0 else {
            throw HTTP2ProtocolError(code: .flowControlError, stream: id, reason: "DATA beyond the stream's window")
        }
        guard stream.headersDone else {
            throw HTTP2ProtocolError(code: .protocolError, stream: id, reason: "DATA before the response's HEADERS")
        }
        guard stream.body.count + data.count <= Transfer.maxResponseBytes else {
            cancel(stream)
            loop.finish(stream, .failure(reason: "response too large"))
            return
        }
        stream.body.append(contentsOf: data)
        if endStream {
            answered(stream)
        } else if stream.receiveWindow <= Self.streamWindow / 2 {
            HTTP2Frame.writeWindowUpdate(stream: id, increment: Self.streamWindow - stream.receiveWindow, into: &output)
            stream.receiveWindow = Self.streamWindow
            loop.markForFlush(self)
        }
    }

    /// The server ended its side with a complete response. If the request body is not all sent, the rest is not
    /// wanted any more (section 8.1): the stream is reset with NO_ERROR.
    private func answered(_ stream: HTTP2Stream) {
        streams[stream.id] = nil
        if !stream.bodySent {
            HTTP2Frame.writeRSTStream(stream: stream.id, code: .noError, into: &output)
            loop.markForFlush(self)
        }
        loop.streamEnded(stream, .response, on: self)
    }

    /// A stream error: RST_STREAM with its code, and the request fails as `reset`.
    private func streamError(_ error: HTTP2ProtocolError) {
        guard let stream = streams.removeValue(forKey: error.stream) else { return }
        HTTP2Frame.writeRSTStream(stream: error.stream, code: error.code, into: &output)
        loop.markForFlush(self)
        Log.warn("fcm stream reset for a protocol error", [
            "pool": .string(loop.core.name), "reason": .string(error.description),
        ])
        loop.streamEnded(stream, .reset, on: self)
    }

    // MARK: - Connection control

    private func apply(_ parameters: [HTTP2Setting]) throws(HTTP2ProtocolError) {
        var grew = false
        for parameter in parameters {
            switch parameter.id {
            case HTTP2Setting.maxConcurrentStreams:
                peerMaxConcurrentStreams = Int(min(parameter.value, UInt32(Int32.max)))
            case HTTP2Setting.initialWindowSize:
                // Applies to every open stream's window, by the difference (section 6.9.2).
                let delta = Int(parameter.value) - peerInitialWindow
                peerInitialWindow = Int(parameter.value)
                for stream in streams.values {
                    stream.sendWindow += delta
                    guard stream.sendWindow <= HTTP2Frame.maxWindow else {
                        throw .connection(.flowControlError, "SETTINGS_INITIAL_WINDOW_SIZE overflows a stream's window")
                    }
                }
                grew = grew || delta > 0
            case HTTP2Setting.maxFrameSize:
                peerMaxFrameSize = Int(parameter.value)
            default:
                // HEADER_TABLE_SIZE: the client's encoder keeps no dynamic table, so any size suits it.
                break
            }
        }
        if grew { resumeBlockedStreams() }
    }

    private func windowUpdate(stream id: UInt32, increment: Int) throws(HTTP2ProtocolError) {
        if id == 0 {
            sendWindow += increment
            guard sendWindow <= HTTP2Frame.maxWindow else {
                throw .connection(.flowControlError, "WINDOW_UPDATE past 2^31-1 for the connection")
            }
            resumeBlockedStreams()
            return
        }
        guard opened(id) else { throw .connection(.protocolError, "WINDOW_UPDATE on stream \(id), never opened") }
        guard let stream = streams[id] else { return }
        stream.sendWindow += increment
        guard stream.sendWindow <= HTTP2Frame.maxWindow else {
            throw HTTP2ProtocolError(code: .flowControlError, stream: id, reason: "WINDOW_UPDATE past 2^31-1")
        }
        if stream.blocked { resumeBlockedStreams() }
    }

    /// No new streams from now on. The streams above `lastStream` were never processed (section 6.8): they go out
    /// again elsewhere, uncharged. The others may still be answered; the connection closes once they are.
    private func goneAway(lastStream: UInt32, code: HTTP2ErrorCode) {
        goingAway = true
        if code != .noError {
            Log.warn("fcm connection going away", [
                "pool": .string(loop.core.name), "code": .string(code.description),
                "streams": .int(Int64(streams.count)),
            ])
        }
        // Highest first, so that each goes back to the front of the queue before the lower ones: order kept.
        let unprocessed = streams.keys.filter { $0 > lastStream }.sorted(by: >)
        for id in unprocessed {
            if let stream = streams.removeValue(forKey: id) { loop.streamEnded(stream, .refused, on: self) }
        }
    }
}
