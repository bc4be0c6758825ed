/// Frames as bytes, appended to a connection's output (RFC 9113 section 6).
extension HTTP2Frame {
    /// What a client sends first (section 3.4), before its SETTINGS.
    static let clientPreface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    static func writeHeader(_ header: Header, into output: inout [UInt8]) {
        output.append(UInt8(truncatingIfNeeded: header.length >> 16))
        output.append(UInt8(truncatingIfNeeded: header.length >> 8))
        output.append(UInt8(truncatingIfNeeded: header.length))
        output.append(header.type)
        output.append(header.flags)
        writeUInt32(header.stream & 0x7FFF_FFFF, into: &output)
    }

    static func writeUInt32(_ value: UInt32, into output: inout [UInt8]) {
        output.append(UInt8(truncatingIfNeeded: value >> 24))
        output.append(UInt8(truncatingIfNeeded: value >> 16))
        output.append(UInt8(truncatingIfNeeded: value >> 8))
        output.append(UInt8(truncatingIfNeeded: value))
    }

    static func writeSettings(_ parameters: [HTTP2Setting], into output: inout [UInt8]) {
        writeHeader(
            Header(length: 6 * parameters.count, type: Kind.settings.rawValue, flags: 0, stream: 0), into: &output)
        for parameter in parameters {
            output.append(UInt8(parameter.id >> 8))
            output.append(UInt8(truncatingIfNeeded: parameter.id))
            writeUInt32(parameter.value, into: &output)
        }
    }

    static func writeSettingsAck(into output: inout [UInt8]) {
        writeHeader(Header(length: 0, type: Kind.settings.rawValue, flags: Flags.ack, stream: 0), into: &output)
    }

    static func writePing(ack: Bool, payload: UInt64, into output: inout [UInt8]) {
        writeHeader(Header(length: 8, type: Kind.ping.rawValue, flags: ack ? Flags.ack : 0, stream: 0), into: &output)
        writeUInt32(UInt32(truncatingIfNeeded: payload >> 32), into: &output)
        writeUInt32(UInt32(truncatingIfNeeded: payload), into: &output)
    }

    static func writeWindowUpdate(stream: UInt32, increment: Int, into output: inout [UInt8]) {
        writeHeader(Header(length: 4, type: Kind.windowUpdate.rawValue, flags: 0, stream: stream), into: &output)
        writeUInt32(UInt32(increment) & 0x7FFF_FFFF, into: &output)
    }

    static func writeRSTStream(stream: UInt32, code: HTTP2ErrorCode, into output: inout [UInt8]) {
        writeHeader(Header(length: 4, type: Kind.rstStream.rawValue, flags: 0, stream: stream), into: &output)
        writeUInt32(code.rawValue, into: &output)
    }

    static func writeGoAway(lastStream: UInt32, code: HTTP2ErrorCode, into output: inout [UInt8]) {
        writeHeader(Header(length: 8, type: Kind.goAway.rawValue, flags: 0, stream: 0), into: &output)
        writeUInt32(lastStream & 0x7FFF_FFFF, into: &output)
        writeUInt32(code.rawValue, into: &output)
    }

    /// A header block as one HEADERS frame and as many CONTINUATION frames as `maxFrameSize` makes it need.
    static func writeHeaders(
        stream: UInt32, block: some Collection<UInt8>, endStream: Bool, maxFrameSize: Int, into output: inout [UInt8]
    ) {
        var rest = block[...]
        var type = Kind.headers.rawValue
        var flags = endStream ? Flags.endStream : 0
        repeat {
            let chunk = rest.prefix(maxFrameSize)
            rest = rest.dropFirst(chunk.count)
            if rest.isEmpty { flags |= Flags.endHeaders }
            writeHeader(Header(length: chunk.count, type: type, flags: flags, stream: stream), into: &output)
            output.append(contentsOf: chunk)
            type = Kind.continuation.rawValue
            flags = 0
        } while !rest.isEmpty
    }

    static func writeData(
        stream: UInt32, data: UnsafeRawBufferPointer, endStream: Bool, into output: inout [UInt8]
    ) {
        writeHeader(
            Header(
                length: data.count, type: Kind.data.rawValue, flags: endStream ? Flags.endStream : 0, stream: stream),
            into: &output)
        output.append(contentsOf: data)
    }
}
