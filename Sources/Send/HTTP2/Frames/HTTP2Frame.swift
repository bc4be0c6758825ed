/// One HTTP/2 frame as received (RFC 9113 section 6), checked for what its type requires. Payload buffers point into
/// the connection's input and are valid only until it reads again.
enum HTTP2Frame {
    /// `flowLength` is the whole payload, padding included: what counts against flow-control windows.
    case data(stream: UInt32, data: UnsafeRawBufferPointer, flowLength: Int, endStream: Bool)
    case headers(stream: UInt32, fragment: UnsafeRawBufferPointer, endStream: Bool, endHeaders: Bool)
    case priority(stream: UInt32)
    case rstStream(stream: UInt32, code: HTTP2ErrorCode)
    case settings(ack: Bool, parameters: [HTTP2Setting])
    case pushPromise(stream: UInt32)
    case ping(ack: Bool, payload: UInt64)
    case goAway(lastStream: UInt32, code: HTTP2ErrorCode)
    case windowUpdate(stream: UInt32, increment: Int)
    case continuation(stream: UInt32, fragment: UnsafeRawBufferPointer, endHeaders: Bool)
    /// A type this client does not know: ignored (section 5.5), unless it interrupts a header block.
    case unknown(type: UInt8, stream: UInt32)

    enum Kind: UInt8 {
        case data = 0, headers, priority, rstStream, settings, pushPromise, ping, goAway, windowUpdate, continuation
    }

    enum Flags {
        static let endStream: UInt8 = 0x1
        static let ack: UInt8 = 0x1
        static let endHeaders: UInt8 = 0x4
        static let padded: UInt8 = 0x8
        static let priority: UInt8 = 0x20
    }

    /// The 9 bytes before every payload.
    struct Header: Equatable {
        var length: Int
        var type: UInt8
        var flags: UInt8
        /// The reserved bit cleared.
        var stream: UInt32

        static let size = 9

        init(length: Int, type: UInt8, flags: UInt8, stream: UInt32) {
            self.length = length
            self.type = type
            self.flags = flags
            self.stream = stream
        }

        init(_ bytes: UnsafeRawBufferPointer) {
            length = Int(bytes[0]) << 16 | Int(bytes[1]) << 8 | Int(bytes[2])
            type = bytes[3]
            flags = bytes[4]
            stream = HTTP2Frame.uint32(bytes, 5) & 0x7FFF_FFFF
        }
    }

    /// The largest frame either side may send before SETTINGS_MAX_FRAME_SIZE says otherwise, and the smallest
    /// that setting may be.
    static let defaultMaxFrameSize = 16_384
    static let maxFrameSizeLimit = 16_777_215
    /// The largest flow-control window (section 6.9.1).
    static let maxWindow = Int(Int32.max)
    static let defaultWindow = 65_535

    static func uint32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
            | UInt32(bytes[offset + 3])
    }
}

/// A SETTINGS parameter (RFC 9113 section 6.5.2).
struct HTTP2Setting: Equatable {
    var id: UInt16
    var value: UInt32

    static let headerTableSize: UInt16 = 1
    static let enablePush: UInt16 = 2
    static let maxConcurrentStreams: UInt16 = 3
    static let initialWindowSize: UInt16 = 4
    static let maxFrameSize: UInt16 = 5
    static let maxHeaderListSize: UInt16 = 6
}

/// An HTTP/2 error code (RFC 9113 section 7), as RST_STREAM and GOAWAY carry it.
struct HTTP2ErrorCode: RawRepresentable, Equatable, Sendable, CustomStringConvertible {
    var rawValue: UInt32

    static let noError = HTTP2ErrorCode(rawValue: 0x0)
    static let protocolError = HTTP2ErrorCode(rawValue: 0x1)
    static let internalError = HTTP2ErrorCode(rawValue: 0x2)
    static let flowControlError = HTTP2ErrorCode(rawValue: 0x3)
    static let settingsTimeout = HTTP2ErrorCode(rawValue: 0x4)
    static let streamClosed = HTTP2ErrorCode(rawValue: 0x5)
    static let frameSizeError = HTTP2ErrorCode(rawValue: 0x6)
    static let refusedStream = HTTP2ErrorCode(rawValue: 0x7)
    static let cancel = HTTP2ErrorCode(rawValue: 0x8)
    static let compressionError = HTTP2ErrorCode(rawValue: 0x9)
    static let connectError = HTTP2ErrorCode(rawValue: 0xa)
    static let enhanceYourCalm = HTTP2ErrorCode(rawValue: 0xb)
    static let inadequateSecurity = HTTP2ErrorCode(rawValue: 0xc)
    static let http11Required = HTTP2ErrorCode(rawValue: 0xd)

    private static let names = [
        "NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED",
        "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
    ]

    var description: String {
        rawValue < Self.names.count ? Self.names[Int(rawValue)] : "0x" + String(rawValue, radix: 16)
    }
}

/// What the peer did wrong: a connection error (`stream` 0: GOAWAY, and the connection closes) or a stream error
/// (RST_STREAM of that stream only).
struct HTTP2ProtocolError: Error, Equatable, CustomStringConvertible {
    var code: HTTP2ErrorCode
    var stream: UInt32
    var reason: String

    static func connection(_ code: HTTP2ErrorCode, _ reason: String) -> HTTP2ProtocolError {
        HTTP2ProtocolError(code: code, stream: 0, reason: reason)
    }

    var description: String { "\(code): \(reason)" }
}
