import Testing

@testable import Send

/// HTTP/2 frames (RFC 9113 section 6): what the client writes reads back as itself, and frames that break a type's
/// rules are refused with the error code the RFC names, as a connection or a stream error.
@Suite struct HTTP2FrameTests {
    // MARK: - Round trips

    @Test func controlFramesReadBackAsWritten() throws {
        var output: [UInt8] = []
        HTTP2Frame.writeSettings([HTTP2Setting(id: 2, value: 0), HTTP2Setting(id: 4, value: 1 << 20)], into: &output)
        HTTP2Frame.writeSettingsAck(into: &output)
        HTTP2Frame.writePing(ack: true, payload: 0x0102_0304_0506_0708, into: &output)
        HTTP2Frame.writeWindowUpdate(stream: 7, increment: 65_535, into: &output)
        HTTP2Frame.writeRSTStream(stream: 9, code: .cancel, into: &output)
        HTTP2Frame.writeGoAway(lastStream: 11, code: .enhanceYourCalm, into: &output)

        let frames = try parseAll(output)
        #expect(frames.count == 6)
        guard frames.count == 6 else { return }
        guard case .settings(false, let parameters) = frames[0] else { Issue.record("\(frames[0])"); return }
        #expect(parameters == [HTTP2Setting(id: 2, value: 0), HTTP2Setting(id: 4, value: 1 << 20)])
        guard case .settings(true, let none) = frames[1], none.isEmpty else { Issue.record("\(frames[1])"); return }
        guard case .ping(true, 0x0102_0304_0506_0708) = frames[2] else { Issue.record("\(frames[2])"); return }
        guard case .windowUpdate(7, 65_535) = frames[3] else { Issue.record("\(frames[3])"); return }
        guard case .rstStream(9, .cancel) = frames[4] else { Issue.record("\(frames[4])"); return }
        guard case .goAway(11, .enhanceYourCalm) = frames[5] else { Issue.record("\(frames[5])"); return }
    }

    @Test func aLargeHeaderBlockIsSplitIntoContinuationsThatJoinBackUp() throws {
        let block = (0..<40_000).map { UInt8(truncatingIfNeeded: $0) }
        var output: [UInt8] = []
        HTTP2Frame.writeHeaders(stream: 5, block: block, endStream: true, maxFrameSize: 16_384, into: &output)

        var joined: [UInt8] = []
        var kinds: [String] = []
        try output.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let header = HTTP2Frame.Header(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + 9)]))
                #expect(header.length <= 16_384)
                let payload = UnsafeRawBufferPointer(rebasing: bytes[(offset + 9)..<(offset + 9 + header.length)])
                switch try HTTP2Frame.parse(header, payload: payload) {
                case .headers(5, let fragment, let endStream, let endHeaders):
                    kinds.append("HEADERS end_stream=\(endStream) end_headers=\(endHeaders)")
                    joined.append(contentsOf: fragment)
                case .continuation(5, let fragment, let endHeaders):
                    kinds.append("CONTINUATION end_headers=\(endHeaders)")
                    joined.append(contentsOf: fragment)
                default:
                    Issue.record("unexpected frame")
                }
                offset += 9 + header.length
            }
        }
        #expect(kinds == [
            "HEADERS end_stream=true end_headers=false", "CONTINUATION end_headers=false",
            "CONTINUATION end_headers=true",
        ])
        #expect(joined == block)
    }

    @Test func dataReadsBackWithItsPaddingCountedForFlowControl() throws {
        var output: [UInt8] = []
        let body = Array("hello".utf8)
        body.withUnsafeBytes { HTTP2Frame.writeData(stream: 3, data: $0, endStream: true, into: &output) }
        // Padded by hand: pad length 4, then "hi", then 4 bytes of padding.
        output += [0, 0, 7, 0, HTTP2Frame.Flags.padded, 0, 0, 0, 3, 4] + Array("hi".utf8) + [0, 0, 0, 0]

        let frames = try parseAll(output)
        guard frames.count == 2, case .data(3, let data, 5, true) = frames[0],
              case .data(3, let padded, 7, false) = frames[1]
        else { Issue.record("\(frames)"); return }
        _ = data
        _ = padded
        #expect(try dataPayloads(output) == [body, Array("hi".utf8)])
    }

    @Test func unknownFrameTypesAreLeftAlone() throws {
        let frames = try parseAll([0, 0, 2, 0xfa, 0, 0, 0, 0, 1, 9, 9])
        guard frames.count == 1, case .unknown(0xfa, 1) = frames[0] else { Issue.record("\(frames)"); return }
    }

    // MARK: - Malformed frames

    /// (frame bytes, code, stream of the error: 0 for a connection error).
    static let malformed: [(String, [UInt8], HTTP2ErrorCode, UInt32)] = [
        ("SETTINGS of 5 bytes", [0, 0, 5, 4, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0], .frameSizeError, 0),
        ("SETTINGS on a stream", [0, 0, 0, 4, 0, 0, 0, 0, 1], .protocolError, 0),
        ("SETTINGS ACK with a payload", [0, 0, 6, 4, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0], .frameSizeError, 0),
        ("ENABLE_PUSH 2", [0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 2], .protocolError, 0),
        ("INITIAL_WINDOW_SIZE 2^31", [0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 4, 0x80, 0, 0, 0], .flowControlError, 0),
        ("MAX_FRAME_SIZE below 16384", [0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0x3f, 0xff], .protocolError, 0),
        ("MAX_FRAME_SIZE above 2^24-1", [0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 5, 1, 0, 0, 0], .protocolError, 0),
        ("PING of 7 bytes", [0, 0, 7, 6, 0, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 7), .frameSizeError, 0),
        ("PING on a stream", [0, 0, 8, 6, 0, 0, 0, 0, 1] + [UInt8](repeating: 0, count: 8), .protocolError, 0),
        ("GOAWAY of 7 bytes", [0, 0, 7, 7, 0, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 7), .frameSizeError, 0),
        ("GOAWAY on a stream", [0, 0, 8, 7, 0, 0, 0, 0, 3] + [UInt8](repeating: 0, count: 8), .protocolError, 0),
        ("WINDOW_UPDATE of 3 bytes", [0, 0, 3, 8, 0, 0, 0, 0, 0, 0, 0, 1], .frameSizeError, 0),
        ("WINDOW_UPDATE of 0 for the connection", [0, 0, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0], .protocolError, 0),
        ("WINDOW_UPDATE of 0 for a stream", [0, 0, 4, 8, 0, 0, 0, 0, 3, 0, 0, 0, 0], .protocolError, 3),
        ("RST_STREAM of 3 bytes", [0, 0, 3, 3, 0, 0, 0, 0, 1, 0, 0, 8], .frameSizeError, 0),
        ("RST_STREAM on stream 0", [0, 0, 4, 3, 0, 0, 0, 0, 0, 0, 0, 0, 8], .protocolError, 0),
        ("DATA on stream 0", [0, 0, 1, 0, 0, 0, 0, 0, 0, 0x41], .protocolError, 0),
        ("DATA padded past its payload", [0, 0, 3, 0, 0x8, 0, 0, 0, 1, 3, 0x41, 0x41], .protocolError, 0),
        ("DATA padded with no pad length", [0, 0, 0, 0, 0x8, 0, 0, 0, 1], .protocolError, 0),
        ("HEADERS on stream 0", [0, 0, 1, 1, 0x4, 0, 0, 0, 0, 0x88], .protocolError, 0),
        ("HEADERS too short for its priority", [0, 0, 3, 1, 0x24, 0, 0, 0, 1, 0, 0, 0], .frameSizeError, 0),
        ("HEADERS padded past its payload", [0, 0, 2, 1, 0xc, 0, 0, 0, 1, 2, 0x88], .protocolError, 0),
        ("PRIORITY of 4 bytes", [0, 0, 4, 2, 0, 0, 0, 0, 1, 0, 0, 0, 0], .frameSizeError, 1),
        ("CONTINUATION on stream 0", [0, 0, 1, 9, 0x4, 0, 0, 0, 0, 0x88], .protocolError, 0),
        ("PUSH_PROMISE on stream 0", [0, 0, 4, 5, 0x4, 0, 0, 0, 0, 0, 0, 0, 2], .protocolError, 0),
    ]

    @Test(arguments: malformed)
    func malformedFramesAreRefused(_ what: String, _ frame: [UInt8], _ code: HTTP2ErrorCode, _ stream: UInt32) {
        do {
            let frames = try parseAll(frame)
            Issue.record("\(what): parsed as \(frames)")
        } catch {
            #expect(error.code == code, "\(what): \(error)")
            #expect(error.stream == stream, "\(what): \(error)")
        }
    }

    // MARK: - Helpers

    private func parseAll(_ bytes: [UInt8]) throws(HTTP2ProtocolError) -> [HTTP2Frame] {
        let result = bytes.withUnsafeBytes { bytes in
            Result { () throws(HTTP2ProtocolError) -> [HTTP2Frame] in
                var frames: [HTTP2Frame] = []
                var offset = 0
                while offset + 9 <= bytes.count {
                    let header = HTTP2Frame.Header(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + 9)]))
                    let end = offset + 9 + header.length
                    precondition(end <= bytes.count, "a test frame is cut short")
                    frames.append(try HTTP2Frame.parse(
                        header, payload: UnsafeRawBufferPointer(rebasing: bytes[(offset + 9)..<end])))
                    offset = end
                }
                return frames
            }
        }
        return try result.get()
    }

    /// The data of each DATA frame, copied out while the bytes are alive.
    private func dataPayloads(_ bytes: [UInt8]) throws -> [[UInt8]] {
        try bytes.withUnsafeBytes { bytes in
            var payloads: [[UInt8]] = []
            var offset = 0
            while offset + 9 <= bytes.count {
                let header = HTTP2Frame.Header(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + 9)]))
                let end = offset + 9 + header.length
                if case .data(_, let data, _, _) = try HTTP2Frame.parse(
                    header, payload: UnsafeRawBufferPointer(rebasing: bytes[(offset + 9)..<end])) {
                    payloads.append(Array(data))
                }
                offset = end
            }
            return payloads
        }
    }
}
