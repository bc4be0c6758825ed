extension HTTP2Connection {
    /// The largest stream id; past it the connection takes no new stream.
    private static let lastStreamID: UInt32 = 0x7FFF_FFFF

    /// Opens a stream for `stream`'s request: HEADERS (and CONTINUATIONs), then as much of the body as the send
    /// windows allow. False when it takes no more (not open, or its stream ids are used up).
    func submit(_ stream: HTTP2Stream) -> Bool {
        guard state == .open, !goingAway else { return false }
        guard nextStreamID <= Self.lastStreamID else {
            goingAway = true
            return false
        }
        let id = nextStreamID
        nextStreamID += 2
        let request = stream.request
        blockScratch.removeAll(keepingCapacity: true)
        if !sentTableSizeUpdate {
            sentTableSizeUpdate = true
            HPACKEncoder.tableSizeUpdate(0, into: &blockScratch)
        }
        origin.headerBlock.write(
            target: stream.target, headers: request.headers, bodyLength: request.body.count, into: &blockScratch)
        HTTP2Frame.writeHeaders(
            stream: id, block: blockScratch, endStream: request.body.isEmpty, maxFrameSize: peerMaxFrameSize,
            into: &output)
        stream.id = id
        stream.sendWindow = peerInitialWindow
        stream.receiveWindow = Self.streamWindow
        streams[id] = stream
        if !request.body.isEmpty { sendBody(of: stream) }
        loop.markForFlush(self)
        return true
    }

    /// DATA frames for as much of the body as both windows and the server's frame size allow; the rest waits in
    /// `blockedStreams` for a WINDOW_UPDATE.
    func sendBody(of stream: HTTP2Stream) {
        let body = stream.request.body
        body.withUnsafeBytes { bytes in
            while stream.bodyOffset < bytes.count {
                let size = min(bytes.count - stream.bodyOffset, stream.sendWindow, sendWindow, peerMaxFrameSize)
                guard size > 0 else { break }
                let end = stream.bodyOffset + size
                HTTP2Frame.writeData(
                    stream: stream.id, data: UnsafeRawBufferPointer(rebasing: bytes[stream.bodyOffset..<end]),
                    endStream: end == bytes.count, into: &output)
                stream.bodyOffset = end
                stream.sendWindow -= size
                sendWindow -= size
            }
        }
        if !stream.bodySent && !stream.blocked {
            stream.blocked = true
            blockedStreams.append(stream)
        }
    }

    /// After a WINDOW_UPDATE or a larger initial window: the blocked streams go on, oldest first, while the
    /// connection's window lasts.
    func resumeBlockedStreams() {
        guard !blockedStreams.isEmpty else { return }
        var still: [HTTP2Stream] = []
        for stream in blockedStreams {
            stream.blocked = false
            guard streams[stream.id] === stream, !stream.finished else { continue }
            if sendWindow > 0 && stream.sendWindow > 0 { sendBody(of: stream) }
            if !stream.bodySent {
                stream.blocked = true
                still.append(stream)
            }
        }
        blockedStreams = still
        loop.markForFlush(self)
    }

    /// Resets a stream whose request is no longer wanted (timed out, answer too large): it leaves the connection, and
    /// whatever the server still sends for it is dropped.
    func cancel(_ stream: HTTP2Stream, code: HTTP2ErrorCode = .cancel) {
        guard state == .open, stream.id > 0, streams[stream.id] === stream else { return }
        streams[stream.id] = nil
        HTTP2Frame.writeRSTStream(stream: stream.id, code: code, into: &output)
        loop.markForFlush(self)
    }

    /// Whether `id` names a stream this client opened (and may since have closed): frames on any other are the
    /// server's error.
    func opened(_ id: UInt32) -> Bool {
        id & 1 == 1 && id < nextStreamID
    }
}
