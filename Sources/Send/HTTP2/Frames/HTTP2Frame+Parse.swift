extension HTTP2Frame {
    /// The frame of `header` and its `payload` (exactly `header.length` bytes), or the error the peer made: each
    /// type's stream (none, or some), length and padding rules of RFC 9113 section 6.
    static func parse(_ header: Header, payload: UnsafeRawBufferPointer) throws(HTTP2ProtocolError) -> HTTP2Frame {
        let stream = header.stream
        let flags = header.flags
        guard let kind = Kind(rawValue: header.type) else { return .unknown(type: header.type, stream: stream) }
        switch kind {
        case .data:
            try onStream(stream, "DATA")
            let data = try unpadded(payload, flags: flags, "DATA")
            return .data(stream: stream, data: data, flowLength: payload.count, endStream: flags & Flags.endStream != 0)
        case .headers:
            try onStream(stream, "HEADERS")
            var fragment = try unpadded(payload, flags: flags, "HEADERS")
            if flags & Flags.priority != 0 {
                guard fragment.count >= 5 else {
                    throw .connection(.frameSizeError, "HEADERS too short for its priority")
                }
                fragment = UnsafeRawBufferPointer(rebasing: fragment[5...])
            }
            return .headers(
                stream: stream, fragment: fragment, endStream: flags & Flags.endStream != 0,
                endHeaders: flags & Flags.endHeaders != 0)
        case .priority:
            try onStream(stream, "PRIORITY")
            guard payload.count == 5 else {
                throw HTTP2ProtocolError(
                    code: .frameSizeError, stream: stream, reason: "PRIORITY of \(payload.count) bytes")
            }
            return .priority(stream: stream)
        case .rstStream:
            try onStream(stream, "RST_STREAM")
            guard payload.count == 4 else { throw .connection(.frameSizeError, "RST_STREAM of \(payload.count) bytes") }
            return .rstStream(stream: stream, code: HTTP2ErrorCode(rawValue: uint32(payload, 0)))
        case .settings:
            try onConnection(stream, "SETTINGS")
            let ack = flags & Flags.ack != 0
            guard !ack || payload.isEmpty else { throw .connection(.frameSizeError, "SETTINGS ACK with a payload") }
            guard payload.count % 6 == 0 else {
                throw .connection(.frameSizeError, "SETTINGS of \(payload.count) bytes")
            }
            var parameters: [HTTP2Setting] = []
            for offset in stride(from: 0, to: payload.count, by: 6) {
                let setting = HTTP2Setting(
                    id: UInt16(payload[offset]) << 8 | UInt16(payload[offset + 1]), value: uint32(payload, offset + 2))
                try check(setting)
                parameters.append(setting)
            }
            return .settings(ack: ack, parameters: parameters)
        case .pushPromise:
            try onStream(stream, "PUSH_PROMISE")
            return .pushPromise(stream: stream)
        case .ping:
            try onConnection(stream, "PING")
            guard payload.count == 8 else { throw .connection(.frameSizeError, "PING of \(payload.count) bytes") }
            let opaque = UInt64(uint32(payload, 0)) << 32 | UInt64(uint32(payload, 4))
            return .ping(ack: flags & Flags.ack != 0, payload: opaque)
        case .goAway:
            try onConnection(stream, "GOAWAY")
            guard payload.count >= 8 else { throw .connection(.frameSizeError, "GOAWAY of \(payload.count) bytes") }
            return .goAway(
                lastStream: uint32(payload, 0) & 0x7FFF_FFFF, code: HTTP2ErrorCode(rawValue: uint32(payload, 4)))
        case .windowUpdate:
            guard payload.count == 4 else {
                throw .connection(.frameSizeError, "WINDOW_UPDATE of \(payload.count) bytes")
            }
            let increment = Int(uint32(payload, 0) & 0x7FFF_FFFF)
            guard increment > 0 else {
                throw HTTP2ProtocolError(code: .protocolError, stream: stream, reason: "WINDOW_UPDATE of 0")
            }
            return .windowUpdate(stream: stream, increment: increment)
        case .continuation:
            try onStream(stream, "CONTINUATION")
            return .continuation(stream: stream, fragment: payload, endHeaders: flags & Flags.endHeaders != 0)
        }
    }

    private static func onStream(_ stream: UInt32, _ type: String) throws(HTTP2ProtocolError) {
        guard stream != 0 else { throw .connection(.protocolError, "\(type) on stream 0") }
    }

    private static func onConnection(_ stream: UInt32, _ type: String) throws(HTTP2ProtocolError) {
        guard stream == 0 else { throw .connection(.protocolError, "\(type) on stream \(stream)") }
    }

    /// The payload without its pad length byte and padding (section 6.1): padding as long as the payload or longer
    /// is a PROTOCOL_ERROR.
    private static func unpadded(
        _ payload: UnsafeRawBufferPointer, flags: UInt8, _ type: String
    ) throws(HTTP2ProtocolError) -> UnsafeRawBufferPointer {
        guard flags & Flags.padded != 0 else { return payload }
        guard let padLength = payload.first.map(Int.init), padLength < payload.count else {
            throw .connection(.protocolError, "\(type) padding longer than its payload")
        }
        return UnsafeRawBufferPointer(rebasing: payload[1..<(payload.count - padLength)])
    }

    /// Values section 6.5.2 rules out. Unknown settings are ignored.
    private static func check(_ setting: HTTP2Setting) throws(HTTP2ProtocolError) {
        switch setting.id {
        case HTTP2Setting.enablePush where setting.value > 1:
            throw .connection(.protocolError, "SETTINGS_ENABLE_PUSH \(setting.value)")
        case HTTP2Setting.initialWindowSize where setting.value > UInt32(maxWindow):
            throw .connection(.flowControlError, "SETTINGS_INITIAL_WINDOW_SIZE \(setting.value)")
        case HTTP2Setting.maxFrameSize
            where setting.value < UInt32(defaultMaxFrameSize) || setting.value > UInt32(maxFrameSizeLimit):
            throw .connection(.protocolError, "SETTINGS_MAX_FRAME_SIZE \(setting.value)")
        default:
            break
        }
    }
}
